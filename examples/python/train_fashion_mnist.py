"""The seed article's FashionMNIST tutorial, written as a PyTorch user writes it, with
``torch`` replaced by ``ember``: the network class with keyword-argument layers, a
training loop over slices of the training tensors (Adam, lr 0.01, batch 100,
``loss.item()``, accuracy through ``argmax(dim=1).eq(labels).sum().item()`` under
``no_grad()``), and a RunManager-style grid over learning rates and batch sizes.

    python3 examples/python/train_fashion_mnist.py                     # one run: lr 0.01, batch 100
    python3 examples/python/train_fashion_mnist.py --lr 0.01,0.001 --batch-size 100,1000 --epochs 2

The loop over slices visits the images in file order, as the C++ program
examples/train_fashion_mnist does with --no-shuffle; ``--loader dataloader`` feeds the
loop from ember.utils.data.DataLoader (shuffled with --seed), which visits the batches in
the order the C++ program does by default. Either way both train the same network on the
same batches to the same loss and accuracy (bench/python/python_vs_cpp.py compares them).
"""
import argparse
import itertools
import json
import time
from collections import OrderedDict, namedtuple

import ember
import ember.nn as nn
import ember.nn.functional as F
import ember.optim as optim
from ember.utils.data import DataLoader, FashionMNIST


class Network(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels=1, out_channels=6, kernel_size=5)
        self.conv2 = nn.Conv2d(in_channels=6, out_channels=12, kernel_size=5)

        self.fc1 = nn.Linear(in_features=12 * 4 * 4, out_features=120)
        self.fc2 = nn.Linear(in_features=120, out_features=60)
        self.out = nn.Linear(in_features=60, out_features=10)

    def forward(self, t):
        t = F.relu(self.conv1(t))
        t = F.max_pool2d(t, kernel_size=2, stride=2)

        t = F.relu(self.conv2(t))
        t = F.max_pool2d(t, kernel_size=2, stride=2)

        t = t.reshape(-1, 12 * 4 * 4)
        t = F.relu(self.fc1(t))
        t = F.relu(self.fc2(t))
        t = self.out(t)
        return t


def get_num_correct(preds, labels):
    return preds.argmax(dim=1).eq(labels).sum().item()


class RunBuilder:
    """Every combination of the parameters' values, as named tuples (the seed article's RunBuilder)."""

    @staticmethod
    def get_runs(params):
        Run = namedtuple("Run", params.keys())
        return [Run(*v) for v in itertools.product(*params.values())]


def batches(images, labels, batch_size, loader, seed):
    """The training batches: slices of the tensors (the tutorial's loop) or a shuffled DataLoader."""
    if loader == "dataloader":
        yield from DataLoader(FashionMNISTTensors(images, labels), batch_size=batch_size, shuffle=True, seed=seed)
        return
    for start in range(0, images.shape[0], batch_size):
        yield images[start:start + batch_size], labels[start:start + batch_size]


class FashionMNISTTensors:
    def __init__(self, images, labels):
        self.tensors = (images, labels)


def test_accuracy(network, test_set):
    network.eval()
    correct = 0
    with ember.no_grad():
        for start in range(0, len(test_set), 1000):
            images = test_set.data[start:start + 1000]
            labels = test_set.targets[start:start + 1000]
            correct += get_num_correct(network(images), labels)
    network.train()
    return correct / len(test_set)


def train_run(run, train_set, test_set, epochs, seed, loader, train_limit=0, log=print):
    """Trains one network; returns one result row per epoch."""
    ember.manual_seed(seed)
    network = Network()
    optimizer = optim.Adam(network.parameters(), lr=run.lr)
    images, labels = train_set.data, train_set.targets
    if train_limit:
        images, labels = images[:train_limit].contiguous(), labels[:train_limit].contiguous()
    rows = []
    for epoch in range(1, epochs + 1):
        start = time.perf_counter()
        total_loss = 0
        total_correct = 0
        steps = 0
        for images_b, labels_b in batches(images, labels, run.batch_size, loader, seed):
            preds = network(images_b)
            loss = F.cross_entropy(preds, labels_b)

            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

            total_loss += loss.item()
            total_correct += get_num_correct(preds, labels_b)
            steps += 1
        epoch_s = time.perf_counter() - start
        row = OrderedDict(lr=run.lr, batch_size=run.batch_size, epoch=epoch, loss=total_loss / steps,
                          train_accuracy=total_correct / images.shape[0], accuracy=test_accuracy(network, test_set),
                          epoch_duration=epoch_s)
        log(f"lr {run.lr} batch {run.batch_size} epoch {epoch}: loss {row['loss']:.4f}, "
            f"test accuracy {row['accuracy']:.4f} ({epoch_s:.1f} s)")
        rows.append(row)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lr", default="0.01", help="learning rates, comma separated")
    parser.add_argument("--batch-size", default="100", help="batch sizes, comma separated")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--train-limit", type=int, default=0, help="train on the first N images only (0: all)")
    parser.add_argument("--loader", choices=["slices", "dataloader"], default="slices")
    parser.add_argument("--data", default=FashionMNIST.__init__.__defaults__[0])
    parser.add_argument("--json", action="store_true", help="print the results as one JSON line at the end")
    args = parser.parse_args()

    ember.set_num_threads(args.threads)
    train_set = FashionMNIST(root=args.data, train=True)
    test_set = FashionMNIST(root=args.data, train=False)
    params = OrderedDict(lr=[float(v) for v in args.lr.split(",")],
                         batch_size=[int(v) for v in args.batch_size.split(",")])
    results = []
    for run in RunBuilder.get_runs(params):
        results += train_run(run, train_set, test_set, args.epochs, args.seed, args.loader, args.train_limit)
    print(f"\n{'lr':>8} {'batch':>6} {'epoch':>5} {'loss':>8} {'accuracy':>8} {'epoch_s':>8}")
    for r in results:
        print(f"{r['lr']:>8g} {r['batch_size']:>6} {r['epoch']:>5} {r['loss']:>8.4f} {r['accuracy']:>8.4f} "
              f"{r['epoch_duration']:>8.2f}")
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
