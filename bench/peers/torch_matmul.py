#!/usr/bin/python3
"""The PyTorch side of ember-bench's gemm suite for bfloat16 (bench/suite_gemm.cpp).

  torch_matmul.py --threads 2 --sizes 512,1024 --dtypes bfloat16,float32 --rounds 5

Times torch.matmul of two random n x n matrices of each dtype (a bfloat16 product
runs oneDNN's vdpbf16ps kernels on CPUs that have them), the output allocated by
the call as Ember's matmul does, and prints ONE line of JSON with the best call's
GFLOP/s (2 n^3 flops) for every dtype and size.
"""
import argparse
import json
import time

import torch


def best_gflops(n, dtype, rounds):
    a = torch.randn(n, n).to(dtype)
    b = torch.randn(n, n).to(dtype)
    for _ in range(3):
        torch.matmul(a, b)
    calls = max(3, int(2e9 / (2.0 * n ** 3)))  # about a second of float32 work per round
    best = float("inf")
    for _ in range(rounds):
        for _ in range(calls):
            t0 = time.perf_counter()
            torch.matmul(a, b)
            best = min(best, time.perf_counter() - t0)
    return 2.0 * n ** 3 / best * 1e-9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sizes", default="1024")
    ap.add_argument("--dtypes", default="bfloat16,float32")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    out = {"torch": torch.__version__, "threads": a.threads, "gflops": {}}
    for name in a.dtypes.split(","):
        dtype = getattr(torch, name)
        out["gflops"][name] = {s: best_gflops(int(s), dtype, a.rounds) for s in a.sizes.split(",")}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
