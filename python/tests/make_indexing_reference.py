#!/usr/bin/python3
"""Writes python/tests/data/indexing_torch.json: PyTorch 1.13's t[idx] and t[idx] = v.

Run with torch 1.13 (the tests never need PyTorch):

    /usr/bin/python3 python/tests/make_indexing_reference.py

The tensor is arange(120) as float32 of shape [2, 3, 4, 5]. Each case stores its
index in a JSON form test_indexing.py decodes (an int, {"slice": [start, stop,
step]}, {"none": 1}, {"ellipsis": 1}, {"bool": b}, {"list": nested}, {"array": nested,
"dtype": "int64" or "bool"}, {"tensor0": n} for a 0-dim integer tensor; a case that is
a list rather than a tuple is {"list_index": [...]}), then torch's result (shape and
row-major values), and the whole tensor after t[idx] = arange(numel) + 1000 shaped
as the result. The cases are those where PyTorch differs from NumPy or where its
rules are easy to get wrong: ints between index tensors, None and ... between them,
True/False, a list read as a tuple, masks beside positions, 0-dim integer tensors.
"""
import json
import os

import numpy as np
import torch

CASES = [
    (0, slice(None), [1, 2]),
    (slice(None), 0, [1, 2], slice(None)),
    ([0, 1], 0, [1, 2]),
    (1, [2], 3, [4]),
    ([1], [2], [3], [4]),
    ("tensor0", 1, [0, 1]),
    (np.array(1), slice(None), [0, 2]),
    (Ellipsis, [0, 1], [1, 2]),
    ([0, 1], Ellipsis, [1, 2]),
    (None, [0, 1], None, [1, 2]),
    ([0, 1], None, [1, 2]),
    ([[0, 1], [1, 0]],),
    "list:[[0, 1], [1, 2]]",
    "list:[0, slice(None), 1]",
    "list:[0, 1]",
    (True,),
    (False,),
    (slice(None), True, 0),
    (np.array([[True, False, True], [False, True, True]]),),
    (slice(None), np.array([True, False, True]), [0, 3]),
    (np.array([[0], [1]]), slice(1, 3), np.array([0, 2, 1])),
    (slice(None, None, 2), [1, 0], Ellipsis),
    ([], slice(None)),
    ([-1, -2], slice(None), slice(None), [-5, 4]),
]


def torch_index(case):
    if isinstance(case, str):
        return eval(case[len("list:"):], {"slice": slice})
    out = []
    i = 0
    while i < len(case):
        x = case[i]
        if isinstance(x, str) and x == "tensor0":
            out.append(torch.tensor(case[i + 1]))
            i += 2
            continue
        out.append(torch.from_numpy(x) if isinstance(x, np.ndarray) else x)
        i += 1
    return tuple(out)


def encode(x):
    if isinstance(x, bool):
        return {"bool": x}
    if isinstance(x, int):
        return x
    if x is None:
        return {"none": 1}
    if x is Ellipsis:
        return {"ellipsis": 1}
    if isinstance(x, slice):
        return {"slice": [x.start, x.stop, x.step]}
    if isinstance(x, torch.Tensor):
        if x.dim() == 0 and x.dtype == torch.int64:
            return {"tensor0": int(x)}
        return {"array": x.tolist(), "dtype": "bool" if x.dtype == torch.bool else "int64"}
    if isinstance(x, list):
        return {"list": [encode(v) if not isinstance(v, (int, list)) else v for v in x]}
    raise TypeError(x)


def main():
    a = torch.arange(120, dtype=torch.float32).reshape(2, 3, 4, 5)
    cases = []
    for case in CASES:
        idx = torch_index(case)
        got = a[idx]
        t = a.clone()
        t[idx] = torch.arange(got.numel(), dtype=torch.float32).reshape(got.shape) + 1000
        index = {"list_index": [encode(v) for v in idx]} if isinstance(idx, list) else [encode(v) for v in idx]
        cases.append({"index": index, "shape": list(got.shape), "values": got.flatten().tolist(),
                      "after_set": t.flatten().tolist()})
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "indexing_torch.json")
    with open(path, "w") as f:
        json.dump({"torch": torch.__version__, "cases": cases}, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
