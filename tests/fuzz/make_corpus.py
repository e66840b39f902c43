#!/usr/bin/env python3
"""Writes the small handmade seeds of tests/fuzz/corpus (the rest are copies of test
fixtures: tests/nn/data's safetensors_dtypes and IDX files, and seed_int8 from
`quantize_fashion_mnist tests/nn/data/safetensors_seed_net.safetensors`).
Run from the repository root; libFuzzer grows its own corpus from these."""
import os
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


def crc32c(data):
    r = 0xFFFFFFFF
    for c in data:
        r ^= c
        for _ in range(8):
            r = (r >> 1) ^ (0x82F63B78 if r & 1 else 0)
    return r ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(tag, wire, payload):
    key = varint(tag << 3 | wire)
    if wire == 2:
        return key + varint(len(payload)) + payload
    return key + payload


def record(data):
    head = struct.pack("<Q", len(data))
    return head + struct.pack("<I", masked(crc32c(head))) + data + struct.pack("<I", masked(crc32c(data)))


def scalar_event(wall, step, tag, value):
    v = field(1, 2, tag.encode()) + field(2, 5, struct.pack("<f", value))
    return field(1, 1, struct.pack("<d", wall)) + field(2, 0, varint(step)) + field(5, 2, field(1, 2, v))


def write(path, data):
    os.makedirs(os.path.dirname(f"{D}/{path}"), exist_ok=True)
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
version = record(field(1, 1, struct.pack("<d", 1.5e9)) + field(3, 2, b"brain.Event:2"))
write("event_reader/version_only.tfevents", version)
write("event_reader/two_scalars.tfevents",
      version + record(scalar_event(1.5e9 + 1, 1, "loss", 0.25)) + record(scalar_event(1.5e9 + 2, 300, "accuracy", 0.875)))
