# ember.nn from Python: a Module subclass registers what its __init__ assigns,
# runs its Python forward (also from C++ containers), and has PyTorch's module
# methods; layers take PyTorch's keyword arguments; optimizers, schedulers,
# DataLoader, safetensors and quantization work from Python.
import collections

import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(in_features=4, out_features=8)
        self.fc2 = nn.Linear(8, 2, bias=False)
        self.scale = nn.Parameter(ember.ones(1))
        self.not_registered = 3

    def forward(self, x, times=1):
        return self.fc2(F.relu(self.fc1(x))) * self.scale * times


def test_registration_and_names():
    m = TwoLayer()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["scale", "fc1.weight", "fc1.bias", "fc2.weight"]
    assert len(list(m.parameters())) == 4
    assert [n for n, _ in m.named_children()] == ["fc1", "fc2"]
    assert m.fc1.weight.shape == (8, 4)
    assert m.not_registered == 3
    assert all(p.requires_grad for p in m.parameters())


def test_repr_is_pytorchs():
    assert repr(TwoLayer()) == ("TwoLayer(\n"
                                "  (fc1): Linear(in_features=4, out_features=8, bias=True)\n"
                                "  (fc2): Linear(in_features=8, out_features=2, bias=False)\n"
                                ")")
    assert repr(nn.Conv2d(1, 6, kernel_size=5, stride=2, padding=1)) == \
        "Conv2d(1, 6, kernel_size=(5, 5), stride=(2, 2), padding=(1, 1))"


def test_python_forward_with_extra_arguments():
    m = TwoLayer()
    x = ember.randn(3, 4)
    assert m(x).shape == (3, 2)
    assert (m(x, times=2) - m(x) * 2).abs().max().item() < 1e-6


def test_python_module_inside_cpp_sequential_keeps_its_forward():
    class Double(nn.Module):
        def forward(self, x):
            return x * 2
    seq = nn.Sequential(nn.Linear(2, 2), Double())  # the Double object is held by C++ alone
    import gc
    gc.collect()
    x = ember.ones(1, 2)
    lin = seq[0]
    assert (seq(x) - lin(x) * 2).abs().sum().item() == 0
    assert [n for n, _ in seq.named_children()] == ["0", "1"]
    assert len(seq) == 2


def test_isinstance_module():
    assert isinstance(nn.Linear(1, 1), nn.Module)
    assert isinstance(TwoLayer(), nn.Module)
    assert issubclass(nn.Conv2d, nn.Module)


def test_state_dict_round_trip_and_strict():
    a, b = TwoLayer(), TwoLayer()
    sd = a.state_dict()
    assert isinstance(sd, collections.OrderedDict)
    assert list(sd) == ["scale", "fc1.weight", "fc1.bias", "fc2.weight"]
    b.load_state_dict(sd)
    assert b.fc1.weight.tolist() == a.fc1.weight.tolist()
    with pytest.raises(ember.ValueError):
        b.load_state_dict({"fc1.weight": sd["fc1.weight"]})


def test_to_half_train_eval_zero_grad():
    m = TwoLayer()
    w = m.fc1.weight
    assert m.half() is m
    assert w.dtype == ember.float16  # converted in place: handles see it
    m.to(ember.float32)
    assert m.to("cpu") is m
    assert m.training
    m.eval()
    assert not m.training and not m.fc1.training
    m.train()
    loss = m(ember.randn(2, 4)).sum()
    loss.backward()
    assert m.fc1.weight.grad is not None
    m.zero_grad()
    assert m.fc1.weight.grad is None


def test_buffers():
    class WithBuffer(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("running", ember.zeros(3))

        def forward(self, x):
            return x
    m = WithBuffer()
    assert [n for n, _ in m.named_buffers()] == ["running"]
    assert list(m.state_dict()) == ["running"]
    bn = nn.BatchNorm2d(num_features=3)
    assert [n for n, _ in bn.named_buffers()] == ["running_mean", "running_var", "num_batches_tracked"]


def test_layers_with_keywords():
    x = ember.randn(2, 3, 8, 8)
    assert nn.Conv2d(in_channels=3, out_channels=4, kernel_size=3, padding=1)(x).shape == (2, 4, 8, 8)
    assert nn.Conv2d(3, 4, kernel_size=(3, 1), stride=(2, 1))(x).shape == (2, 4, 3, 8)
    assert nn.MaxPool2d(kernel_size=2, stride=2)(x).shape == (2, 3, 4, 4)
    assert nn.AvgPool2d(2)(x).shape == (2, 3, 4, 4)
    assert nn.Flatten()(x).shape == (2, 192)
    assert nn.BatchNorm2d(3)(x).shape == (2, 3, 8, 8)
    d = nn.Dropout(p=0.5)
    d.eval()
    assert (d(x) - x).abs().sum().item() == 0
    assert F.max_pool2d(x, kernel_size=2).shape == (2, 3, 4, 4)
    assert F.conv2d(x, ember.ones(4, 3, 3, 3), padding=1).shape == (2, 4, 8, 8)
    assert nn.Sigmoid()(ember.zeros(1)).item() == 0.5


def test_cross_entropy_value():
    # Uniform logits over 4 classes: the loss is log(4) whatever the target.
    logits = ember.zeros(3, 4)
    loss = F.cross_entropy(logits, ember.tensor([0, 1, 3]))
    assert abs(loss.item() - 1.3862943611198906) < 1e-6
    assert F.cross_entropy(logits, ember.tensor([0, 1, 3]), reduction="sum").item() == pytest.approx(3 * 1.3862944)
    assert nn.CrossEntropyLoss()(logits, ember.tensor([2, 2, 2])).item() == pytest.approx(1.3862944)


def test_sgd_step_by_hand():
    p = nn.Parameter(ember.tensor([1.0, 2.0]))
    opt = ember.optim.SGD([p], lr=0.1)
    (p * p).sum().backward()  # grad 2p = [2, 4]
    opt.step()
    assert p.tolist() == pytest.approx([0.8, 1.6])
    opt.zero_grad()
    assert p.grad is None


def test_adam_first_step_moves_by_lr():
    # Adam's first step is lr * g / (|g| + eps) = lr * sign(g).
    p = nn.Parameter(ember.tensor([1.0, -1.0]))
    opt = ember.optim.Adam([p], lr=0.01)
    (p * 3).sum().backward()
    opt.step()
    assert p.tolist() == pytest.approx([0.99, -1.01], abs=1e-6)


def test_step_lr():
    p = nn.Parameter(ember.ones(1))
    opt = ember.optim.SGD([p], lr=1.0)
    sched = ember.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    lrs = []
    for _ in range(4):
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    assert lrs == [1.0, 0.5, 0.5, 0.25]


def test_dataloader_batches_and_order():
    from ember.utils.data import DataLoader, TensorDataset
    x = ember.arange(10).reshape(10, 1).float()
    y = ember.arange(10)
    loader = DataLoader(TensorDataset(x, y), batch_size=4)
    batches = [(xb.shape[0], yb.tolist()) for xb, yb in loader]
    assert batches == [(4, [0, 1, 2, 3]), (4, [4, 5, 6, 7]), (2, [8, 9])]
    assert len(loader) == 3
    shuffled = DataLoader(TensorDataset(x, y), batch_size=10, shuffle=True, num_workers=2)
    first = next(iter(shuffled))[1].tolist()
    second = next(iter(shuffled))[1].tolist()
    assert sorted(first) == list(range(10)) and first != second  # a new order each epoch


def test_safetensors_round_trip(tmp_path):
    m = TwoLayer()
    path = tmp_path / "m.safetensors"
    ember.save(m.state_dict(), path)
    loaded = ember.load(path)
    assert list(loaded) == list(m.state_dict())
    fresh = TwoLayer()
    fresh.load_state_dict(loaded)
    assert fresh.fc2.weight.tolist() == m.fc2.weight.tolist()


def test_quantize_dynamic_keeps_predictions_close():
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    m.eval()
    x = ember.randn(8, 16)
    with ember.no_grad():
        want = m(x)
        q = ember.quantization.quantize_dynamic(m, {nn.Linear}, dtype=ember.int8)
        got = q(x)
    assert "DynamicQuantizedLinear" in repr(q)
    assert (got - want).abs().max().item() < 0.05 * want.abs().max().item()


def test_autocast_and_grad_scaler():
    lin = nn.Linear(4, 4)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        assert ember.amp.is_autocast_enabled("cpu")
        y = lin(ember.randn(2, 4))
    assert y.dtype == ember.bfloat16
    assert not ember.amp.is_autocast_enabled("cpu")
    scaler = ember.amp.GradScaler(enabled=True)
    assert scaler.get_scale() == 65536.0


def test_module_list_apply_and_requires_grad_():
    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(3, 3) for _ in range(2)])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x
    m = Stack()
    assert [n for n, _ in m.named_parameters()] == ["layers.0.weight", "layers.0.bias", "layers.1.weight",
                                                    "layers.1.bias"]
    assert m(ember.ones(1, 3)).shape == (1, 3)
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen == ["Linear", "Linear", "ModuleList", "Stack"]
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


def test_init_functions_in_place():
    w = nn.Linear(4, 4).weight
    assert nn.init.zeros_(w) is w and w.abs().sum().item() == 0
    nn.init.ones_(w)
    assert w.sum().item() == 16
    nn.init.uniform_(w, a=2.0, b=3.0)
    assert w.min().item() >= 2.0 and w.max().item() < 3.0
    assert w.requires_grad and w.grad_fn is None  # done under no_grad: still a leaf
    with pytest.raises(ValueError):
        nn.init.kaiming_uniform_(w, mode="fan_out")
