#!/usr/bin/python3
"""Writes the IDX fixtures under tests/nn/data/ with Python's struct and gzip modules,
an encoder independent of the C++ test helpers, so test_idx.cpp checks the reader
against someone else's idea of the format. Run from anywhere:

    python3 tests/nn/data/make_idx_fixtures.py

idx_uint8_2x3x4.idx3-ubyte.gz: uint8 [2, 3, 4], element i = (7 * i) % 256, gzipped
    with a file name in the gzip header (Python's gzip writes one; zlib's test
    helper does not) and mtime 0 so the bytes do not change between runs.
idx_float32_2x3.idx2: float32 [2, 3], plain, big-endian values listed below.
"""
import gzip
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def idx(type_code, dims, payload):
    return bytes([0, 0, type_code, len(dims)]) + struct.pack(">%dI" % len(dims), *dims) + payload


def main():
    data = bytes((7 * i) % 256 for i in range(24))
    path = os.path.join(HERE, "idx_uint8_2x3x4.idx3-ubyte.gz")
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="idx_uint8_2x3x4.idx3-ubyte", mode="wb", fileobj=raw, mtime=0) as gz:
            gz.write(idx(0x08, [2, 3, 4], data))

    values = [1.5, -2.25, 0.001, 3.0e38, -0.0, 65504.0]
    with open(os.path.join(HERE, "idx_float32_2x3.idx2"), "wb") as f:
        f.write(idx(0x0D, [2, 3], struct.pack(">6f", *values)))


if __name__ == "__main__":
    main()
