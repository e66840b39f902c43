# Reference counts and memory: tensors made from Python are freed when the last
# Python reference goes (10,000 creations leave RSS where it was), from_numpy
# returns its reference to the array, and ops return objects with one owner.
import gc
import os
import sys

import numpy as np

import ember


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def make_many(n):
    for _ in range(n):
        a = ember.ones(1024)          # 4 KiB each
        b = (a + 1) * 2
        b.sum().item()


def test_no_leak_after_10000_tensor_creations():
    make_many(1000)  # warm the allocator's caches
    gc.collect()
    before = rss_bytes()
    make_many(10000)
    gc.collect()
    grown = rss_bytes() - before
    # 10,000 leaked 4 KiB tensors (x3 per iteration) would be over 100 MiB.
    assert grown < 8 * 1024 * 1024, f"RSS grew by {grown / 2**20:.1f} MiB"


def test_op_results_have_one_owner():
    t = ember.ones(3) + 1
    assert sys.getrefcount(t) == 2  # t, and getrefcount's own argument


def test_from_numpy_returns_its_reference():
    a = np.ones(1000, dtype=np.float32)
    base = sys.getrefcount(a)
    t = ember.from_numpy(a)
    assert sys.getrefcount(a) == base + 1
    u = t[10:20] * 2  # a view and a result: only the view holds the storage
    v = t[5:]
    del t
    assert sys.getrefcount(a) == base + 1
    del v, u
    gc.collect()
    assert sys.getrefcount(a) == base


def test_numpy_view_keeps_storage_until_array_dies():
    t = ember.ones(1000)
    arr = t.numpy()
    del t
    gc.collect()
    assert arr.sum() == 1000.0
