#!/usr/bin/env python3
"""Writes tests/tensor/print_cases.txt: PyTorch 1.13's repr() of a set of tensors,
which test_print.cpp rebuilds in Ember and compares character for character.

Run from anywhere with PyTorch installed:  python3 tests/tensor/make_print_cases.py
The tests themselves never need PyTorch. Each case records the dtype, shape, the
row-major values (exact, as Python reprs), an optional transform that both sides
apply (t: transpose the 2-D tensor), the device (cpu or meta) and the expected
text, with `torch.` replaced by `ember.` in the dtype suffix.
"""
import math
import os

import torch

nan, inf = float("nan"), float("inf")


def cases():
    t = torch.tensor
    yield "1-D float", t([1.0, 2.0, 3.0])
    yield "2-D float fixed", t([[1.5, -2.25], [3.125, 4.0]])
    yield "3-D float", torch.arange(24.0).reshape(2, 3, 4) / 7
    yield "4-D float", torch.arange(16.0).reshape(2, 2, 2, 2) - 3
    yield "3-D with size-1 middle dim", torch.arange(6.0).reshape(2, 1, 3) * 1.5
    yield "int64", t([1, -20, 300])
    yield "int64 2-D", t([[1, 2, 3], [-4, 50, 600]])
    yield "int64 large", t([2**40, -(2**35), 7])
    yield "int32", t([[7, -8], [9, 10]], dtype=torch.int32)
    yield "int8", t([-128, 0, 127], dtype=torch.int8)
    yield "uint8", t([0, 9, 255], dtype=torch.uint8)
    yield "bool", t([[True, False], [False, True]])
    yield "bool 1-D long", t([i % 3 == 0 for i in range(40)])
    yield "float16", t([0.1, 2.5, -3.0], dtype=torch.float16)
    yield "bfloat16", t([0.1, 2.5, -3.0], dtype=torch.bfloat16)
    yield "float64", t([1.0 / 3, 2.0], dtype=torch.float64)
    yield "sci mode ratio", t([1e-5, 1.0, 1e5])
    yield "sci mode small", t([1e-10, 2e-10])
    yield "sci mode large int-valued", t([1e9, 2.0])
    yield "sci mode big values", t([1.5e10, -2.5e9])
    yield "sci mode float16", t([1e-3, 60000.0], dtype=torch.float16)
    yield "sci mode bfloat16", t([1e-8, 1e8], dtype=torch.bfloat16)
    yield "int mode", t([1.0, 100.0, -5.0])
    yield "int mode negative zero", t([-0.0, 1.0])
    yield "fixed 0.1235", t([0.123456, 12.5])
    yield "fixed small", t([0.0001, 0.5])
    yield "nan and inf", t([nan, 1.0, inf, -inf])
    yield "nan with fractions", t([nan, 0.5, -1.25])
    yield "nan with sci", t([nan, 1e-6, 1e6])
    yield "only nan", t([nan, nan])
    yield "only inf", t([inf, -inf])
    yield "zeros", torch.zeros(3)
    yield "zeros 2-D", torch.zeros(2, 2)
    yield "wrap 1-D float", torch.arange(30.0) / 7
    yield "wrap 1-D int", torch.arange(100)
    yield "wrap 2-D rows", torch.arange(60.0).reshape(2, 30) * 1.25
    yield "summarize 1-D", torch.arange(2000.0) / 3
    yield "summarize 2-D int", torch.arange(3000).reshape(100, 30)
    yield "summarize 2-D wide", torch.arange(2002.0).reshape(2, 1001)
    yield "summarize 3-D", (torch.arange(4000.0) / 10).reshape(10, 20, 20)
    yield "summarize float64 suffix", torch.arange(1500, dtype=torch.float64) * 0.5
    yield "summarize bool", torch.arange(1200).reshape(40, 30) % 2 == 0
    yield "exactly 1000 elements", torch.arange(1000.0).reshape(10, 100)
    yield "empty 1-D", t([])
    yield "empty 2-D", torch.zeros(0, 3)
    yield "empty 3-D", torch.zeros(2, 0, 4)
    yield "empty int64", t([], dtype=torch.int64)
    yield "empty bool 2-D", torch.zeros(0, 3, dtype=torch.bool)
    yield "empty float16", torch.zeros(0, 2, dtype=torch.float16)
    yield "0-dim float", t(3.5)
    yield "0-dim float int-valued", t(-2.0)
    yield "0-dim int", t(7)
    yield "0-dim bool", t(True)
    yield "0-dim float16", t(1.0, dtype=torch.float16)
    yield "0-dim nan", t(nan)
    yield "0-dim float64 sci", t(1.5e-7, dtype=torch.float64)
    yield "float64 suffix wraps", t([[123456.789, -0.5, 2.0, 3.0, 4.0, 5.0]], dtype=torch.float64)
    yield "int32 suffix wraps", torch.arange(20, dtype=torch.int32) * 1000
    yield "float16 2-D suffix", (torch.arange(12.0).reshape(3, 4) / 8).to(torch.float16)
    yield "1x1", t([[1]])
    yield "negative fractions", t([-0.5, -1.75, 2.125])
    yield "rounding to 4 decimals", t([0.99995, 1.00004, 2.34565])
    yield "mixed magnitudes fixed", t([0.001, 999.0])


def transformed():
    # (name, base tensor, transform): the printed tensor is transform(base).
    yield "transposed", torch.arange(12.0).reshape(3, 4) / 4, "t"
    yield "transposed int", torch.arange(6).reshape(2, 3), "t"


def meta():
    yield "meta 2-D", torch.empty(2, 3, device="meta")
    yield "meta int64", torch.empty(3, device="meta", dtype=torch.int64)
    yield "meta float16 0-dim", torch.empty((), device="meta", dtype=torch.float16)
    yield "meta empty", torch.empty(0, device="meta")


def fmt(v):
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    if math.isnan(v):
        return "nan"
    return repr(v)


def emit(out, name, base, transform, device):
    dtype = str(base.dtype).replace("torch.", "")
    if device == "meta":
        values = []
    elif base.dtype in (torch.float16, torch.bfloat16):
        values = base.float().reshape(-1).tolist()
    else:
        values = base.reshape(-1).tolist()
    shown = base.t() if transform == "t" else base
    text = repr(shown).replace("torch.", "ember.")
    out.append("case " + name)
    out.append("dtype " + dtype)
    out.append("shape " + " ".join(str(s) for s in base.shape))
    out.append("transform " + (transform or "none"))
    out.append("device " + device)
    out.append("values " + " ".join(fmt(v) for v in values))
    out.append("expected " + str(text.count("\n") + 1))
    out.extend(text.split("\n"))


def main():
    out = ["# Generated by make_print_cases.py with PyTorch " + torch.__version__ + "; do not edit.",
           "# Each case: dtype, shape, transform, device, row-major values, then the",
           "# number of lines of the expected repr() and those lines."]
    for name, x in cases():
        emit(out, name, x, None, "cpu")
    for name, x, tr in transformed():
        emit(out, name, x, tr, "cpu")
    for name, x in meta():
        emit(out, name, x, None, "meta")
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "print_cases.txt")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
