"""Python against C++, side by side in one run:

1. The FashionMNIST tutorial's epoch (seed network, Adam lr 0.01, batch 100), two
   pairs: the Python tutorial examples/python/train_fashion_mnist.py looping over
   slices of the training tensors (file order) against the C++ program
   examples/train_fashion_mnist with --no-shuffle, and the Python tutorial fed by
   ember's DataLoader with the seed against the C++ program shuffling with it (the same
   batches in the same order). Rounds alternate, the fastest of each is kept. Reports
   epoch seconds, the ratio Python / C++, and the loss and test accuracy of each.
2. Per-op overhead: nanoseconds per call of small ops from C++ (ember-op-overhead),
   from Python through ember, and from Python through PyTorch when it is installed.

    python3 bench/python/python_vs_cpp.py --build build [--epochs 1] [--train-limit 0]

Prints a table and, with --json FILE, writes the numbers there. Runs with
OMP_WAIT_POLICY=passive (unless set), as Ember's tests and benchmarks do: on a shared
machine busy-waiting OpenMP threads make epoch times swing several-fold
(docs/performance.md, "Shared machines").
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import timeit

# Before ember (and OpenMP) loads in this process; the children inherit it.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_cpp_epoch(build, args, extra=()):
    with tempfile.TemporaryDirectory() as out:
        cmd = [os.path.join(build, "examples", "train_fashion_mnist"), "--epochs", str(args.epochs), "--lr", "0.01",
               "--batch-size", "100", "--seed", str(args.seed), "--threads", str(args.threads), "--quiet",
               "--out", out, "--device", "cpu"] + list(extra)
        if args.train_limit:
            cmd += ["--train-limit", str(args.train_limit)]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        with open(os.path.join(out, "results.json")) as f:
            rows = json.load(f)  # the program's own record, seconds at full precision
    return {"loss": rows[-1]["loss"], "accuracy": rows[-1]["accuracy"],
            "epoch_s": min(r["epoch_duration"] for r in rows)}


def run_python_epoch(build, args, loader):
    cmd = [sys.executable, os.path.join(ROOT, "examples", "python", "train_fashion_mnist.py"), "--epochs",
           str(args.epochs), "--seed", str(args.seed), "--threads", str(args.threads), "--loader", loader, "--json"]
    if args.train_limit:
        cmd += ["--train-limit", str(args.train_limit)]
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "python"))
    text = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    rows = json.loads(text.strip().splitlines()[-1])
    return {"loss": rows[-1]["loss"], "accuracy": rows[-1]["accuracy"],
            "epoch_s": min(r["epoch_duration"] for r in rows)}


def best(runs):
    out = dict(runs[0])
    out["epoch_s"] = min(r["epoch_s"] for r in runs)
    out["all_epoch_s"] = [round(r["epoch_s"], 3) for r in runs]
    return out


def per_call_ns(stmt, setup_globals, number=100000):
    timer = timeit.Timer(stmt, globals=setup_globals)
    return min(timer.repeat(repeat=5, number=number)) / number * 1e9


def op_overhead(build):
    cpp = json.loads(subprocess.run([os.path.join(build, "bench", "python", "ember-op-overhead")], check=True,
                                    capture_output=True, text=True).stdout)
    sys.path.insert(0, os.path.join(build, "python"))
    import ember
    g = {"a": ember.ones(1), "b": ember.ones(1), "c": ember.ones(1), "m": ember.ones(4, 4)}
    calls = {"add": "a + b", "add_": "c.add_(b)", "relu": "a.relu()", "sum": "a.sum()", "matmul_4x4": "m @ m"}
    py = {k: per_call_ns(v, g) for k, v in calls.items()}
    torch_ns, torch_version = None, None
    try:
        import torch
        torch_version = torch.__version__
        tg = {"a": torch.ones(1), "b": torch.ones(1), "c": torch.ones(1), "m": torch.ones(4, 4)}
        torch_ns = {k: per_call_ns(v, tg) for k, v in calls.items()}
    except ImportError:
        pass
    return {"cpp": cpp, "ember_python": py, "torch": torch_ns, "torch_version": torch_version}


def main():
    parser = argparse.ArgumentParser(description="Python against C++: tutorial epoch and per-op overhead")
    parser.add_argument("--build", default=os.environ.get("EMBER_BUILD_DIR", os.path.join(ROOT, "build")))
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--train-limit", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args()
    build = os.path.abspath(args.build)

    cpp_ns, py_slices, cpp, py_loader = [], [], [], []
    for _ in range(args.repeats):  # alternating, so that load on the machine hits all alike
        cpp_ns.append(run_cpp_epoch(build, args, ["--no-shuffle"]))
        py_slices.append(run_python_epoch(build, args, "slices"))
        cpp.append(run_cpp_epoch(build, args))
        py_loader.append(run_python_epoch(build, args, "dataloader"))
    cpp_ns, py_slices, cpp, py_loader = best(cpp_ns), best(py_slices), best(cpp), best(py_loader)
    print(f"FashionMNIST tutorial, batch 100, Adam lr 0.01, seed {args.seed}, {args.threads} threads, "
          f"{args.epochs} epoch(s){', first %d images' % args.train_limit if args.train_limit else ''}")
    print(f"{'':36} {'epoch_s':>8} {'x C++':>6} {'loss':>8} {'test acc':>8}")
    for name, r, ref in [("C++, --no-shuffle (file order)", cpp_ns, cpp_ns),
                         ("Python, slices (the tutorial's loop)", py_slices, cpp_ns),
                         ("C++, shuffled (seed)", cpp, cpp),
                         ("Python, DataLoader (same batches)", py_loader, cpp)]:
        print(f"{name:36} {r['epoch_s']:8.2f} {r['epoch_s'] / ref['epoch_s']:6.2f} {r['loss']:8.4f} "
              f"{r['accuracy']:8.4f}   (runs: {', '.join(f'{t:.2f}' for t in r['all_epoch_s'])})")

    ops = op_overhead(build)
    print(f"\nper call, ns (best of 5 x 100,000 calls; 1-element float32 tensors, 4x4 for matmul)")
    torch_label = f"PyTorch {ops['torch_version']}" if ops["torch"] else "PyTorch (not installed)"
    print(f"{'call':12} {'C++':>8} {'Python':>8} {'binding':>8} {torch_label:>14}")
    for k in ops["cpp"]:
        t = f"{ops['torch'][k]:14.0f}" if ops["torch"] else f"{'-':>14}"
        print(f"{k:12} {ops['cpp'][k]:8.0f} {ops['ember_python'][k]:8.0f} "
              f"{ops['ember_python'][k] - ops['cpp'][k]:8.0f} {t}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpp_no_shuffle": cpp_ns, "python_slices": py_slices, "cpp": cpp, "python_dataloader": py_loader,
                       "ops": ops}, f, indent=2)


if __name__ == "__main__":
    main()
