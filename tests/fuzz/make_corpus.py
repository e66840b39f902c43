#!/usr/bin/env python3
"""Writes the small handmade seeds of tests/fuzz/corpus (the rest are copies of test
fixtures: tests/nn/data's safetensors_dtypes and IDX files, and seed_int8 from
`quantize_fashion_mnist tests/nn/data/safetensors_seed_net.safetensors`).
Run from the repository root; libFuzzer grows its own corpus from these."""
import gzip
import json
import struct

D = "tests/fuzz/corpus"


def safetensors(tensors, meta=None):
    header, data = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if meta:
        header["__metadata__"] = meta
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data


def idx(code, shape, raw):
    return bytes([0, 0, code, len(shape)]) + b"".join(struct.pack(">i", s) for s in shape) + raw


def write(path, data):
    with open(f"{D}/{path}", "wb") as f:
        f.write(data)


write("safetensors/small.safetensors", safetensors(
    {"w": ("F32", [2, 2], struct.pack("<4f", 1, 2, 3, 4)), "b": ("I64", [2], struct.pack("<2q", 5, -6)),
     "e": ("F16", [0, 3], b"")}, {"format": "pt"}))
write("safetensors/bf16_bool.safetensors", safetensors(
    {"m": ("BOOL", [3], b"\x01\x00\x01"), "h": ("BF16", [2], b"\x80\x3f\x00\x40"), "s": ("U8", [], b"\x07")}))
write("idx/uint8_2x2x2.idx", idx(0x08, [2, 2, 2], bytes(range(8))))
write("idx/int32_3.idx", idx(0x0C, [3], struct.pack(">3i", 1, -2, 3)))
write("idx/float64_1x2.idx", idx(0x0E, [1, 2], struct.pack(">2d", 0.5, -1.5)))
write("idx/int16_2.idx.gz", gzip.compress(idx(0x0B, [2], struct.pack(">2h", 7, -8)), mtime=0))
