# The tutorial's network (examples/python/train_fashion_mnist.py, a Python
# nn.Module subclass) trained for a few steps from a seed matches the C++
# nn::Network (nn/models/network.h, bound as ember.nn.Network) trained the same way
# from the same seed: same initial parameters, same loss at every step.
import importlib.util
import os

import pytest

import ember
import ember.nn.functional as F
from conftest import needs_fashion

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python", "train_fashion_mnist.py")


def load_example():
    spec = importlib.util.spec_from_file_location("train_fashion_mnist", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def train_steps(network, images, labels, steps, batch_size=100, lr=0.01):
    optimizer = ember.optim.Adam(network.parameters(), lr=lr)
    losses = []
    for i in range(steps):
        x = images[i * batch_size:(i + 1) * batch_size]
        y = labels[i * batch_size:(i + 1) * batch_size]
        loss = F.cross_entropy(network(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


@needs_fashion
def test_python_network_matches_cpp_network_step_by_step():
    example = load_example()
    train = ember.utils.data.FashionMNIST(train=True)
    images, labels = train.data[:1000], train.targets[:1000]

    ember.manual_seed(0)
    py_net = example.Network()
    ember.manual_seed(0)
    cpp_net = ember.nn.Network()
    assert type(cpp_net).__module__ != type(py_net).__module__  # one is C++, one Python
    assert [n for n, _ in py_net.named_parameters()] == [n for n, _ in cpp_net.named_parameters()]
    for (_, a), (_, b) in zip(py_net.named_parameters(), cpp_net.named_parameters()):
        assert a.tolist() == b.tolist()

    py_losses = train_steps(py_net, images, labels, steps=10)
    cpp_losses = train_steps(cpp_net, images, labels, steps=10)
    assert py_losses == cpp_losses  # the same ops in the same order: bit for bit
    # And it learns: the first loss is near log(10) for ten classes, the last well below.
    assert abs(py_losses[0] - 2.3026) < 0.1
    assert py_losses[-1] < 0.8 * py_losses[0]


@needs_fashion
def test_tutorial_run_trains():
    example = load_example()
    train = ember.utils.data.FashionMNIST(train=True)
    test = ember.utils.data.FashionMNIST(train=False)
    assert len(train) == 60000 and len(test) == 10000
    assert train.data.shape == (60000, 1, 28, 28) and train.targets.dtype == ember.int64
    Run = example.RunBuilder.get_runs({"lr": [0.01], "batch_size": [100]})[0]
    rows = example.train_run(Run, train, test, epochs=1, seed=0, loader="dataloader", train_limit=3000,
                             log=lambda _: None)
    assert rows[0]["accuracy"] > 0.4  # 30 steps on 3000 images (0.57 measured) beat chance (0.1) by far


def cpp_program():
    build = os.environ.get("EMBER_BUILD_DIR", "")
    path = os.path.join(build, "examples", "train_fashion_mnist")
    return path if build and os.access(path, os.X_OK) else None


@needs_fashion
@pytest.mark.skipif(cpp_program() is None, reason="the C++ example train_fashion_mnist is not built")
@pytest.mark.parametrize("loader,cpp_flags", [("slices", ["--no-shuffle"]), ("dataloader", [])])
def test_full_epoch_accuracy_matches_the_cpp_program(tmp_path, loader, cpp_flags):
    # The acceptance check: one epoch of the tutorial (batch 100, Adam lr 0.01, seed 0)
    # in Python reaches the C++ program's test accuracy within 0.2 point. The
    # tutorial's loop over slices visits the images in file order, as the C++ program
    # does with --no-shuffle; ember's DataLoader with the seed visits them in the C++
    # program's shuffled order.
    import json
    import subprocess
    subprocess.run([cpp_program(), "--epochs", "1", "--lr", "0.01", "--batch-size", "100", "--seed", "0",
                    "--threads", "2", "--quiet", "--device", "cpu", "--out", str(tmp_path)] + cpp_flags, check=True,
                   capture_output=True)
    cpp = json.loads((tmp_path / "results.json").read_text())[-1]
    example = load_example()
    ember.set_num_threads(2)
    train = ember.utils.data.FashionMNIST(train=True)
    test = ember.utils.data.FashionMNIST(train=False)
    Run = example.RunBuilder.get_runs({"lr": [0.01], "batch_size": [100]})[0]
    py = example.train_run(Run, train, test, epochs=1, seed=0, loader=loader, log=lambda _: None)[-1]
    assert abs(py["accuracy"] - cpp["accuracy"]) <= 0.002, (py["accuracy"], cpp["accuracy"])
    assert abs(py["loss"] - cpp["loss"]) < 1e-4, (py["loss"], cpp["loss"])
    assert cpp["accuracy"] > 0.75  # a real epoch, not a degenerate one
