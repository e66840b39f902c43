#!/usr/bin/python3
"""Writes the safetensors fixtures under tests/nn/data/ and their PyTorch reference.

The `safetensors` package is not available, so the files are written by hand from
the format description (8-byte little-endian header length, compact JSON header
padded with spaces to a multiple of 8, then each tensor's little-endian row-major
bytes back to back in the order listed). Run with torch 1.13:

    /usr/bin/python3 tests/nn/make_safetensors_fixture.py

Outputs: safetensors_seed_net.safetensors (the seed CNN's state_dict after
torch.manual_seed(0) and default init), safetensors_dtypes.safetensors (one tensor
per dtype Ember reads, plus a 0-dim and an empty tensor), and
safetensors_reference.json (per file: the metadata, the tensors in the order
written, and each tensor's dtype, shape, float64 sum, float64 sum of absolute
values and first values, computed by torch).
"""
import json
import os
import struct

import torch

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

CODES = {
    torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int8: "I8", torch.uint8: "U8", torch.int32: "I32", torch.int64: "I64", torch.bool: "BOOL",
}


class SeedNet(torch.nn.Module):
    """The seed network's parameter layout: two 5x5 convolutions, three linear layers."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 6, 5)
        self.conv2 = torch.nn.Conv2d(6, 12, 5)
        self.fc1 = torch.nn.Linear(12 * 4 * 4, 120)
        self.fc2 = torch.nn.Linear(120, 60)
        self.out = torch.nn.Linear(60, 10)


def raw_bytes(t):
    t = t.detach().contiguous().cpu()
    # numpy has no bfloat16: its bits are taken through an int16 view.
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().tobytes()  # the host is little-endian, as the format is


def write_safetensors(path, tensors, metadata):
    header, chunks, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, t in tensors:
        data = raw_bytes(t)
        header[name] = {"dtype": CODES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for c in chunks:
            f.write(c)


def reference(tensors):
    out = {}
    for name, t in tensors:
        d = t.detach().to(torch.float64)
        out[name] = {
            "dtype": CODES[t.dtype],
            "shape": list(t.shape),
            "sum": d.sum().item(),
            "abs_sum": d.abs().sum().item(),
            "first": d.flatten()[:4].tolist(),
        }
    return out


def main():
    torch.manual_seed(0)
    seed = list(SeedNet().state_dict().items())

    g = torch.Generator().manual_seed(1)
    dtypes = [
        ("f16", (torch.randn(3, 4, generator=g) * 10).to(torch.float16)),
        ("bf16", (torch.randn(2, 5, generator=g) * 100).to(torch.bfloat16)),
        ("i64", torch.tensor([[-(2**40), 7, 0], [2**33 + 1, -1, 123456789]], dtype=torch.int64)),
        ("mask", torch.tensor([True, False, False, True, True])),
        ("f64", torch.tensor([1.0 / 3.0, -2.5e-300, 1e300], dtype=torch.float64)),
        ("i8", torch.tensor([-128, -1, 0, 127], dtype=torch.int8)),
        ("u8", torch.tensor([0, 1, 200, 255], dtype=torch.uint8)),
        ("i32", torch.tensor([-(2**31), 2**31 - 1, 42], dtype=torch.int32)),
        ("scalar", torch.tensor(2.75)),
        ("empty", torch.zeros(0, 3)),
    ]

    meta = {"format": "pt"}
    write_safetensors(os.path.join(DATA, "safetensors_seed_net.safetensors"), seed, meta)
    write_safetensors(os.path.join(DATA, "safetensors_dtypes.safetensors"), dtypes, meta)
    ref = {
        "safetensors_seed_net.safetensors": {"metadata": meta, "order": [n for n, _ in seed], "tensors": reference(seed)},
        "safetensors_dtypes.safetensors": {"metadata": meta, "order": [n for n, _ in dtypes], "tensors": reference(dtypes)},
    }
    with open(os.path.join(DATA, "safetensors_reference.json"), "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
