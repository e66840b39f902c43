#!/usr/bin/python3
"""The PyTorch side of ember-bench's quant suite (bench/suite_quant.cpp).

  torch_quant_linear.py --threads 2 --features 4096 --batches 1,64 --calls 200

Builds nn.Linear(features, features), quantizes it with
torch.ao.quantization.quantize_dynamic (qint8 weights; per tensor, PyTorch's
default qconfig, and per output channel; the quantized engine PyTorch picks by
default: oneDNN on this build), and prints ONE line of JSON with the median time of
a forward call (under torch.no_grad()) at each batch size, for both quantized layers
and the float32 one.
"""
import argparse
import json
import time

import torch
import torch.ao.quantization as tq


def median_ms(f, x, warmup, calls):
    for _ in range(warmup):
        f(x)
    t = []
    for _ in range(calls):
        t0 = time.perf_counter()
        f(x)
        t.append(time.perf_counter() - t0)
    t.sort()
    return t[len(t) // 2] * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--features", type=int, default=4096)
    ap.add_argument("--batches", default="1,64")
    ap.add_argument("--calls", type=int, default=200)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    lin = torch.nn.Sequential(torch.nn.Linear(a.features, a.features)).eval()
    q_pt = tq.quantize_dynamic(lin, {torch.nn.Linear}, dtype=torch.qint8)  # default qconfig: per tensor
    q_pc = tq.quantize_dynamic(lin, {torch.nn.Linear: tq.per_channel_dynamic_qconfig}, dtype=torch.qint8)
    out = {"torch": torch.__version__, "engine": torch.backends.quantized.engine, "threads": a.threads,
           "int8_per_tensor_ms": {}, "int8_per_channel_ms": {}, "float_ms": {}}
    with torch.no_grad():
        for b in [int(s) for s in a.batches.split(",")]:
            x = torch.randn(b, a.features)
            calls = max(20, a.calls // max(1, b // 8))
            out["int8_per_tensor_ms"][str(b)] = median_ms(q_pt, x, 20, calls)
            out["int8_per_channel_ms"][str(b)] = median_ms(q_pc, x, 20, calls)
            out["float_ms"][str(b)] = median_ms(lin, x, 10, calls)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
