#!/usr/bin/python3
"""The PyTorch side of ember-bench's train and infer suites (bench/torch_peer.cpp).

Runs the seed FashionMNIST CNN (the same layers as nn::Network) in PyTorch on the
same IDX files, and prints ONE line of JSON on stdout with its timings and memory:

  torch_seed_net.py train --threads 2 --batch-sizes 100,1000 [--amp bf16]
  torch_seed_net.py infer --threads 2 --calls1 2000 --calls1000 20 [--weights W.safetensors]
  torch_seed_net.py export --weights W.safetensors --ember-logits L.npy --out DIR
  torch_seed_net.py accuracy --seeds 0-11 [--epochs 3]

train: one epoch per batch size of Adam(lr=0.01) with cross-entropy over the 60000
training images, shuffled by plain index batching (a torch.randperm, then x[idx]
per batch; the same as DataLoader(TensorDataset, shuffle=True, num_workers=0) but
without its per-sample collation, so it is PyTorch's faster way). The model and
optimizer are fresh for the timed epoch; a throw-away model trains a few batches
first to warm up oneDNN's primitive caches and the allocator. --amp bf16 runs
the forward and the loss under torch.autocast("cpu", dtype=torch.bfloat16), the
recipe PyTorch documents for CPU mixed precision (no GradScaler: bfloat16 has
float32's exponent range, and PyTorch 1.13's GradScaler is CUDA-only).

infer: eval mode under torch.no_grad() (or torch.inference_mode() with
--inference-mode); median latency of a batch of 1 (the first test image) and
median time of a batch of 1000 (the first 1000 test images), after warm-up. With
--weights (a safetensors file of nn::Network's parameters, as the infer suite
writes them) the model runs Ember's weights, and the sums of its batch-1000
logits are printed so that the suite can check both ran the same model.

export: the infer suite's ONNX Runtime peer gets its model here. Loads --weights,
exports the network in eval mode with torch.onnx.export (opset 13, batch axis
dynamic) to DIR/seed_net.onnx, and writes the first 1000 test images to
DIR/seed_net_input_0.pb (an onnx TensorProto, the input bench/peers/ort_bench.js
reads). Before any timing, PyTorch's logits for those images are compared with
Ember's (--ember-logits, a .npy) and the largest difference is printed.

accuracy: PyTorch's own spread for Ember's AMP accuracy check (scripts/amp-accuracy,
docs/amp.md): for each seed, the network trained in float32 and under bfloat16
autocast (Adam, lr 0.01, batch 100, --epochs epochs; torch.manual_seed(seed) for the
weights, a generator seeded with it for the shuffles), and each final test accuracy.

Memory: each case's peak RSS (the kernel's VmHWM, reset through
/proc/self/clear_refs just before the case, once the data is loaded, so it counts
the interpreter, torch and the data set as well as the case), and the whole
process's ru_maxrss at the end. The thread count and the OpenBLAS/OpenMP
environment are the caller's to set (torch_peer.cpp sets them before exec).
"""
import argparse
import gzip
import json
import os
import resource
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Network(nn.Module):
    """The seed network; parameter names as nn::Network's."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 12, 5)
        self.fc1 = nn.Linear(12 * 4 * 4, 120)
        self.fc2 = nn.Linear(120, 60)
        self.out = nn.Linear(60, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.flatten(1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.out(x)


def read_idx(path):
    """An IDX file (gzipped or not) as a numpy array of its shape."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    zero, dtype, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(root, train):
    stem = "train" if train else "t10k"
    def path(kind):
        p = os.path.join(root, f"{stem}-{kind}-ubyte")
        return p + ".gz" if os.path.exists(p + ".gz") else p
    images = read_idx(path("images-idx3"))
    labels = read_idx(path("labels-idx1"))
    x = torch.from_numpy(images.astype(np.float32) / np.float32(255.0)).reshape(-1, 1, 28, 28)
    y = torch.from_numpy(labels.astype(np.int64))
    return x.contiguous(), y


def read_safetensors(path):
    """The F32 tensors of a safetensors file (8-byte header length, JSON header,
    data), as a state dict."""
    with open(path, "rb") as f:
        blob = f.read()
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            raise ValueError(f"{path}: {name} is {info['dtype']}, not F32")
        begin, end = info["data_offsets"]
        data = np.frombuffer(blob[8 + n + begin:8 + n + end], dtype="<f4").reshape(info["shape"])
        out[name] = torch.from_numpy(data.copy())
    return out


def write_tensor_proto(t, path):
    """A float32 tensor as a serialized onnx.TensorProto (dims = field 1, data_type
    = field 2 with FLOAT = 1, raw_data = field 9), written by hand so that the
    bench needs no onnx Python package."""
    def varint(v):
        out = bytearray()
        while True:
            b = v & 0x7F
            v >>= 7
            out.append(b | (0x80 if v else 0))
            if not v:
                return bytes(out)
    raw = t.detach().contiguous().numpy().astype("<f4").tobytes()
    msg = b"".join(b"\x08" + varint(d) for d in t.shape)
    msg += b"\x10" + varint(1) + b"\x4a" + varint(len(raw)) + raw
    with open(path, "wb") as f:
        f.write(msg)


def logit_sums(y):
    return {"output_sum": float(y.double().sum()), "output_abs_sum": float(y.double().abs().sum())}


def reset_peak_rss():
    """Resets VmHWM to the current RSS; False where the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def train_epoch(net, opt, x, y, batch_size, gen, max_batches=None, amp=None):
    """One shuffled pass; returns the mean loss. loss.item() each step, as a
    training loop that logs its loss does (Ember's suite does the same). With
    amp (a dtype) the forward and the loss run under CPU autocast."""
    n = x.shape[0]
    perm = torch.randperm(n, generator=gen)
    total, batches = 0.0, 0
    for start in range(0, n, batch_size):
        if max_batches is not None and batches >= max_batches:
            break
        idx = perm[start:start + batch_size]
        with torch.autocast("cpu", dtype=amp or torch.bfloat16, enabled=amp is not None):
            loss = F.cross_entropy(net(x[idx]), y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        total += loss.item()
        batches += 1
    return total / max(batches, 1)


def accuracy(net, x, y):
    net.eval()
    with torch.no_grad():
        correct = sum(int((net(x[s:s + 1000]).argmax(1) == y[s:s + 1000]).sum())
                      for s in range(0, x.shape[0], 1000))
    net.train()
    return correct / x.shape[0]


def run_train(args, out):
    x, y = load(args.root, True)
    tx, ty = load(args.root, False)
    amp = {"bf16": torch.bfloat16, None: None}[args.amp]
    out["amp"] = args.amp
    out["train"] = []
    for bs in args.batch_sizes:
        can_reset = reset_peak_rss()
        torch.manual_seed(0)
        warm = Network()
        warm_opt = torch.optim.Adam(warm.parameters(), lr=0.01)
        train_epoch(warm, warm_opt, x, y, bs, torch.Generator().manual_seed(1), max_batches=5, amp=amp)
        del warm, warm_opt
        torch.manual_seed(0)
        net = Network()
        opt = torch.optim.Adam(net.parameters(), lr=0.01)
        gen = torch.Generator().manual_seed(0)
        t0 = time.perf_counter()
        loss = train_epoch(net, opt, x, y, bs, gen, amp=amp)
        seconds = time.perf_counter() - t0
        out["train"].append({
            "batch_size": bs, "s_per_epoch": seconds, "mean_loss": loss,
            "test_accuracy": accuracy(net, tx, ty),
            "peak_rss_mib": peak_rss_mib(), "peak_rss_reset": can_reset,
        })


def median_seconds(f, warmup, calls):
    for _ in range(warmup):
        f()
    t = []
    for _ in range(calls):
        t0 = time.perf_counter()
        f()
        t.append(time.perf_counter() - t0)
    t.sort()
    return t[len(t) // 2], t[0]


def run_infer(args, out):
    tx, _ = load(args.root, False)
    can_reset = reset_peak_rss()
    torch.manual_seed(0)
    net = Network().eval()
    if args.weights:
        net.load_state_dict(read_safetensors(args.weights))
    x1 = tx[:1].contiguous()
    x1000 = tx[:1000].contiguous()
    guard = torch.inference_mode if args.inference_mode else torch.no_grad
    with guard():
        med1, best1 = median_seconds(lambda: net(x1), max(args.calls1 // 10, 50), args.calls1)
        med1000, best1000 = median_seconds(lambda: net(x1000), 3, args.calls1000)
        sums = logit_sums(net(x1000))
    out["infer"] = {
        "weights": args.weights or "torch.manual_seed(0)",
        "batch1000_output_sum": sums["output_sum"], "batch1000_output_abs_sum": sums["output_abs_sum"],
        "guard": "inference_mode" if args.inference_mode else "no_grad",
        "batch1_median_us": med1 * 1e6, "batch1_best_us": best1 * 1e6, "batch1_calls": args.calls1,
        "batch1000_median_ms": med1000 * 1e3, "batch1000_best_ms": best1000 * 1e3,
        "batch1000_calls": args.calls1000,
        "peak_rss_mib": peak_rss_mib(), "peak_rss_reset": can_reset,
    }


def run_export(args, out):
    if not args.weights or not args.out:
        raise SystemExit("export needs --weights and --out")
    tx, _ = load(args.root, False)
    net = Network().eval()
    net.load_state_dict(read_safetensors(args.weights))
    x = tx[:1000].contiguous()
    model = os.path.join(args.out, "seed_net.onnx")
    images = os.path.join(args.out, "seed_net_input_0.pb")
    torch.onnx.export(net, (x[:1],), model, opset_version=13, input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "N"}, "output": {0: "N"}}, do_constant_folding=True)
    write_tensor_proto(x, images)
    with torch.no_grad():
        y = net(x)
    out["export"] = {"model": model, "input": images, "opset": 13, **logit_sums(y)}
    if args.ember_logits:
        ember = torch.from_numpy(np.load(args.ember_logits))
        out["export"]["max_abs_diff_vs_ember"] = float((y - ember).abs().max())


def run_accuracy(args, out):
    x, y = load(args.root, True)
    tx, ty = load(args.root, False)
    first, _, last = args.seeds.partition("-")
    rows = []
    for seed in range(int(first), int(last or first) + 1):
        row = {"seed": seed}
        for name, amp in (("float32", None), ("bf16", torch.bfloat16)):
            torch.manual_seed(seed)
            net = Network()
            opt = torch.optim.Adam(net.parameters(), lr=0.01)
            gen = torch.Generator().manual_seed(seed)
            for _ in range(args.epochs):
                train_epoch(net, opt, x, y, 100, gen, amp=amp)
            row[name] = accuracy(net, tx, ty)
        row["bf16_minus_float32_points"] = 100 * (row["bf16"] - row["float32"])
        print(f"seed {seed}: float32 {row['float32']:.4f}, bf16 {row['bf16']:.4f} "
              f"({row['bf16_minus_float32_points']:+.2f})", file=sys.stderr, flush=True)
        rows.append(row)
    out["accuracy"] = {"epochs": args.epochs, "batch_size": 100, "lr": 0.01, "seeds": rows,
                       "mean_bf16_minus_float32_points":
                           sum(r["bf16_minus_float32_points"] for r in rows) / len(rows)}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["train", "infer", "export", "accuracy"])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--root", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--batch-sizes", default="100,1000",
                   type=lambda s: [int(v) for v in s.split(",") if v])
    p.add_argument("--calls1", type=int, default=2000)
    p.add_argument("--calls1000", type=int, default=20)
    p.add_argument("--inference-mode", action="store_true",
                   help="infer under torch.inference_mode() instead of torch.no_grad()")
    p.add_argument("--amp", choices=["bf16"], default=None,
                   help="train: forward and loss under torch.autocast('cpu', dtype=torch.bfloat16)")
    p.add_argument("--weights", help="infer, export: nn::Network's parameters as safetensors")
    p.add_argument("--ember-logits", help="export: Ember's logits for the first 1000 test images (.npy)")
    p.add_argument("--out", help="export: the folder for seed_net.onnx and seed_net_input_0.pb")
    p.add_argument("--seeds", default="0-4", help="accuracy: a seed or a range, e.g. 0-11")
    p.add_argument("--epochs", type=int, default=3, help="accuracy: epochs per run")
    args = p.parse_args()

    torch.set_num_threads(args.threads)
    out = {
        "torch": torch.__version__, "threads": torch.get_num_threads(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability()
        if hasattr(torch.backends, "cpu") else None,
        "mkldnn": torch.backends.mkldnn.is_available(),
        "batching": "plain index batching (randperm, x[idx])",
        "env": {k: os.environ.get(k) for k in
                ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")},
    }
    {"train": run_train, "infer": run_infer, "export": run_export,
     "accuracy": run_accuracy}[args.mode](args, out)
    out["process_max_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    sys.exit(main())
