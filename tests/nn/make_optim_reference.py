#!/usr/bin/python3
"""Writes tests/nn/data/optim_reference.json: torch.optim trajectories for Ember's optimizers.

Run with torch 1.13 (the tests never need PyTorch):

    /usr/bin/python3 tests/nn/make_optim_reference.py

One float64 parameter of shape [2, 3] starts at `p0`; before step k its gradient is
set to `grads[k]` (fixed values, chosen so that some shrink: amsgrad's running
maximum then differs from Adam's second moment). Each case names the optimizer and
its hyperparameters as the C++ test passes them, and holds the parameter after each
of the steps, as torch.optim computed them (foreach=False: the single-tensor code).
"""
import json
import os

import torch

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

P0 = [[0.5, -1.25, 2.0], [0.0, 0.75, -0.3]]
GRADS = [
    [[0.1, -0.2, 0.3], [-0.4, 0.5, -0.6]],
    [[1.5, 0.25, -0.75], [0.05, -1.0, 2.0]],
    [[-0.02, 0.01, 0.4], [0.3, 0.02, -0.01]],
    [[0.2, -0.3, 0.0], [-0.1, 0.6, 0.05]],
]

CASES = [
    ("sgd", "SGD", {"lr": 0.1}),
    ("sgd_momentum", "SGD", {"lr": 0.1, "momentum": 0.9}),
    ("sgd_dampening", "SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.5}),
    ("sgd_nesterov", "SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    ("sgd_weight_decay", "SGD", {"lr": 0.1, "momentum": 0.5, "weight_decay": 0.1}),
    ("adam", "Adam", {"lr": 0.01}),
    ("adam_betas", "Adam", {"lr": 0.05, "betas": (0.8, 0.9), "eps": 1e-3}),
    ("adam_weight_decay", "Adam", {"lr": 0.01, "weight_decay": 0.1}),
    ("adam_amsgrad", "Adam", {"lr": 0.05, "amsgrad": True}),
    ("adamw", "AdamW", {"lr": 0.01}),
    ("adamw_weight_decay", "AdamW", {"lr": 0.05, "weight_decay": 0.5, "amsgrad": True}),
]


def run(cls, kwargs):
    p = torch.tensor(P0, dtype=torch.float64, requires_grad=True)
    opt = getattr(torch.optim, cls)([p], foreach=False, **kwargs)
    out = []
    for g in GRADS:
        p.grad = torch.tensor(g, dtype=torch.float64)
        opt.step()
        out.append([float(v) for v in p.detach().reshape(-1).tolist()])
    return out


def main():
    ref = {"p0": P0, "grads": GRADS, "cases": {}}
    for name, cls, kwargs in CASES:
        hyper = {k: (list(v) if isinstance(v, tuple) else v) for k, v in kwargs.items()}
        ref["cases"][name] = {"optimizer": cls, "hyper": hyper, "params": run(cls, kwargs)}
    # StepLR(step_size=2, gamma=0.5) from lr 0.1: the lr after each of 6 scheduler steps.
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    lrs = []
    for _ in range(6):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    ref["step_lr"] = {"lr": 0.1, "step_size": 2, "gamma": 0.5, "lrs": lrs}
    with open(os.path.join(DATA, "optim_reference.json"), "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
