"""ember.utils.data: DataLoader over a dataset of tensors, TensorDataset, and FashionMNIST.

The DataLoader is Ember's C++ one (nn/data/dataloader.h): batches are gathered in C++,
by background threads when ``num_workers > 0``, and epoch e visits the order that
``seed`` and e fix (PyTorch draws it from the global generator instead).
"""
from .. import _C


class TensorDataset:
    """Samples are rows of the given tensors, which share their first dim (torch.utils.data.TensorDataset)."""

    def __init__(self, *tensors):
        self.tensors = tensors

    def __len__(self):
        return self.tensors[0].shape[0]

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)


class FashionMNIST(TensorDataset):
    """Zalando's FashionMNIST read from its IDX files (Debian's dataset-fashion-mnist by default).

    ``data`` holds the images as float32 [N, 1, 28, 28] in [0, 1] (what torchvision gives
    with ``transform=ToTensor()``) and ``targets`` the int64 labels. Ember reads local files
    only: ``download`` is accepted for PyTorch's signature and changes nothing.
    """

    def __init__(self, root=_C.data.FASHION_MNIST_ROOT, train=True, transform=None, target_transform=None,
                 download=False):
        if transform is not None or target_transform is not None:
            raise ValueError("FashionMNIST: transforms are not supported; images come as ToTensor() gives them")
        files = _C.data.FashionMNIST(str(root), train)
        self.data, self.targets = files.images, files.labels
        self.classes = list(_C.data.FashionMNIST.classes)
        super().__init__(self.data, self.targets)


class DataLoader:
    """Batches of a TensorDataset-like dataset (one with ``tensors`` = (inputs, targets))."""

    def __init__(self, dataset, batch_size=1, shuffle=False, num_workers=0, drop_last=False, prefetch_factor=None,
                 seed=0, num_replicas=1, rank=0):
        tensors = getattr(dataset, "tensors", None)
        if tensors is None or len(tensors) != 2:
            raise TypeError("ember's DataLoader takes a dataset of two tensors (inputs, targets), such as "
                            "TensorDataset(x, y) or FashionMNIST")
        self.dataset = dataset
        self.batch_size = batch_size
        self._loader = _C.data.DataLoader(tensors[0].contiguous(), tensors[1].contiguous(), batch_size=batch_size,
                                          shuffle=shuffle, seed=seed, drop_last=drop_last, num_workers=num_workers,
                                          prefetch_factor=2 if prefetch_factor is None else prefetch_factor,
                                          num_replicas=num_replicas, rank=rank)
        self._epoch = 0

    def __len__(self):
        return len(self._loader)

    def __iter__(self):
        epoch, self._epoch = self._epoch, self._epoch + 1
        return self._loader.epoch(epoch)

    def set_epoch(self, epoch):
        """The next iteration visits epoch ``epoch``'s order (DistributedSampler.set_epoch)."""
        self._epoch = epoch
