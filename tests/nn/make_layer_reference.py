#!/usr/bin/python3
"""Writes tests/nn/data/layer_reference.json: PyTorch's outputs for Ember's layers.

Run with torch 1.13 (the tests never need PyTorch):

    /usr/bin/python3 tests/nn/make_layer_reference.py

Every case holds its inputs, its parameters (a state_dict that the C++ test loads
with load_state_dict) and the outputs torch computed from them, as
{"shape": [...], "values": [row-major float64]}. Small tensors come from
torch.manual_seed(0) and are stored whole; the seed network's 33k parameters are
not stored but made by `formula` below, which the C++ test repeats with std::sin
(math.sin here: the same C library), so that the file stays a few KB.
Reprs are torch's own strings for the same modules.
"""
import json
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def enc(t):
    t = t.detach().to(torch.float64).contiguous()
    return {"shape": list(t.shape), "values": [float(v) for v in t.reshape(-1).tolist()]}


def enc_state(module):
    return {k: enc(v) for k, v in module.state_dict().items()}


def formula(shape, j, bound):
    """bound * sin(0.7 k + 1.3 j + 0.1) for element k of tensor j, rounded to float32."""
    n = math.prod(shape)
    vals = [bound * math.sin(0.7 * k + 1.3 * j + 0.1) for k in range(n)]
    return torch.tensor(vals, dtype=torch.float64).reshape(shape).to(torch.float32)


def image_formula(shape):
    """0.5 + 0.5 sin((0.37 + 0.11 n) k) for element k of image n, rounded to float32: pixels in [0, 1]."""
    n = math.prod(shape)
    per_image = math.prod(shape[1:])
    vals = [0.5 + 0.5 * math.sin((0.37 + 0.11 * (k // per_image)) * k) for k in range(n)]
    return torch.tensor(vals, dtype=torch.float64).reshape(shape).to(torch.float32)


class Network(nn.Module):
    """The seed network, named as Ember's nn::Network."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 12, 5)
        self.fc1 = nn.Linear(12 * 4 * 4, 120)
        self.fc2 = nn.Linear(120, 60)
        self.out = nn.Linear(60, 10)

    def forward(self, x):
        t = F.max_pool2d(F.relu(self.conv1(x)), 2)
        t = F.max_pool2d(F.relu(self.conv2(t)), 2)
        t = t.flatten(1)
        t = F.relu(self.fc1(t))
        t = F.relu(self.fc2(t))
        return self.out(t)


def network_case():
    net = Network()
    with torch.no_grad():
        for j, (name, p) in enumerate(net.named_parameters()):
            # fan_in: the elements of one output unit's weights (a bias takes its weight's)
            fan_in = dict(net.named_parameters())[name.replace("bias", "weight")][0].numel()
            p.copy_(formula(list(p.shape), j, 1.0 / math.sqrt(fan_in)))
    x = image_formula([2, 1, 28, 28])
    net64 = net.double()
    logits = net64(x.double())
    return {"logits": enc(logits), "repr": repr(net)}


def linear_case():
    lin = nn.Linear(5, 3)
    x = torch.randn(2, 5)
    return {"state": enc_state(lin), "x": enc(x), "y": enc(lin.double()(x.double())), "repr": repr(lin)}


def conv_case():
    conv = nn.Conv2d(4, 4, (3, 2), stride=(2, 1), padding=(1, 2), dilation=(2, 1), groups=2)
    plain = nn.Conv2d(4, 2, 3, bias=False)
    x = torch.randn(2, 4, 4, 5)
    return {
        "state": enc_state(conv), "x": enc(x), "y": enc(conv.double()(x.double())), "repr": repr(conv),
        "plain_state": enc_state(plain), "plain_y": enc(plain.double()(x.double())), "plain_repr": repr(plain),
    }


def pool_case():
    x = torch.randn(1, 2, 5, 6, dtype=torch.float64)
    mp = nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)
    mpd = nn.MaxPool2d((2, 3), stride=(1, 2), dilation=(2, 1))
    ap = nn.AvgPool2d(3, stride=2, padding=1)
    ap_ceil = nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
    ap_ceil_pad = nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=True)
    return {
        "x": enc(x),
        "max_k3_s2_p1_ceil": enc(mp(x)), "max_k3_s2_p1_ceil_repr": repr(mp),
        "max_k23_s12_d21": enc(mpd(x)),
        "avg_k3_s2_p1": enc(ap(x)), "avg_k3_s2_p1_repr": repr(ap),
        "avg_k3_s2_p1_ceil_nopad": enc(ap_ceil(x)),
        "avg_k3_s2_p1_ceil_pad": enc(ap_ceil_pad(x)),
    }


def batch_norm_case():
    bn = nn.BatchNorm2d(3).double()
    with torch.no_grad():
        bn.weight.copy_(torch.tensor([1.5, -0.5, 2.0]))
        bn.bias.copy_(torch.tensor([0.1, 0.2, -0.3]))
    state0 = enc_state(bn)
    x1 = torch.randn(2, 3, 2, 2, dtype=torch.float64) * 2 + 1
    x2 = torch.randn(2, 3, 2, 2, dtype=torch.float64) - 0.5
    bn.train()
    y1 = bn(x1)
    y2 = bn(x2)
    state2 = enc_state(bn)
    bn.eval()
    y_eval = bn(x1)
    return {"state": state0, "x1": enc(x1), "x2": enc(x2), "y1": enc(y1), "y2": enc(y2), "state_after": state2,
            "y_eval": enc(y_eval), "repr": repr(bn)}


def sequential_case():
    seq = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Linear(12, 4))
    state = enc_state(seq)
    x = torch.randn(2, 2, 4, 4).round(decimals=2)
    seq = seq.double()
    y = seq(x.double())
    after = {k: enc(v) for k, v in seq.state_dict().items() if k.startswith("1.running")}
    return {"state": state, "x": enc(x), "y": enc(y), "running_after": after, "repr": repr(seq)}


def loss_case():
    logits = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    targets = torch.tensor([1, 0, 3, -100, 2])
    out = {"logits": enc(logits), "targets": targets.tolist()}
    for red in ("mean", "sum", "none"):
        out["ce_" + red] = enc(F.cross_entropy(logits, targets, reduction=red))
        out["nll_" + red] = enc(F.nll_loss(F.log_softmax(logits, 1), targets, reduction=red))
    # ignore_index = 2 (so -100 is out of range there): use other targets.
    t2 = torch.tensor([1, 2, 3, 0, 2])
    out["targets_ignore2"] = t2.tolist()
    out["ce_mean_ignore2"] = enc(F.cross_entropy(logits, t2, reduction="mean", ignore_index=2))
    out["nll_sum_ignore2"] = enc(F.nll_loss(F.log_softmax(logits, 1), t2, reduction="sum", ignore_index=2))
    g, = torch.autograd.grad(F.cross_entropy(logits, targets), logits)
    out["ce_mean_grad"] = enc(g)
    a = torch.randn(3, 4, dtype=torch.float64)
    b = torch.randn(3, 4, dtype=torch.float64)
    out["mse_a"], out["mse_b"] = enc(a), enc(b)
    for red in ("mean", "sum", "none"):
        out["mse_" + red] = enc(F.mse_loss(a, b, reduction=red))
    return out


def reprs():
    return {
        "dropout": repr(nn.Dropout()),
        "dropout_0.25": repr(nn.Dropout(0.25)),
        "dropout_0": repr(nn.Dropout(0.0)),
        "dropout_1": repr(nn.Dropout(1.0)),
        "flatten": repr(nn.Flatten()),
        "relu": repr(nn.ReLU()),
        "maxpool2": repr(nn.MaxPool2d(2)),
        "avgpool2": repr(nn.AvgPool2d(2)),
        "batchnorm": repr(nn.BatchNorm2d(6, eps=1e-3, momentum=0.2, affine=False, track_running_stats=False)),
        "linear_nobias": repr(nn.Linear(3, 2, bias=False)),
        "nested": repr(nn.Sequential(nn.Linear(4, 3), nn.Sequential(nn.ReLU(), nn.Dropout(0.1)), nn.Flatten())),
        "empty_sequential": repr(nn.Sequential()),
        "extra_and_children": repr(Wrapper()),
    }


class Wrapper(nn.Module):
    """A module with both an extra_repr and children: the extra lines come first, indented."""

    def __init__(self):
        super().__init__()
        self.inner = nn.Sequential(nn.ReLU())

    def extra_repr(self):
        return "scale=2"


def main():
    torch.manual_seed(0)
    ref = {
        "network": network_case(),
        "linear": linear_case(),
        "conv2d": conv_case(),
        "pool": pool_case(),
        "batch_norm": batch_norm_case(),
        "sequential": sequential_case(),
        "loss": loss_case(),
        "repr": reprs(),
    }
    with open(os.path.join(DATA, "layer_reference.json"), "w") as f:
        json.dump(ref, f, indent=None, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
