#!/usr/bin/env python3
"""nnvm against ONNX Runtime on the same ONNX files, same machine, same sitting.

    python3 bench/models/compare.py NNVM_BINARY MODEL_DIR [--iters N] [--batches 1,32] [--threads 1,2]

For each model of MODEL_DIR (written by make_models.py), batch and thread
count: the median latency of `nnvm bench` fused (traced) and unfused (eager),
and of an onnxruntime CPU session (all graph optimisations, intra-op threads
= T, inter-op 1) on random inputs of the same shapes. Prints a Markdown table
with ratio = ORT / nnvm fused (above 1: nnvm is faster). onnxruntime comes
from PyPI: a measuring tool, never a dependency of the product.
"""
import argparse
import os
import platform
import re
import statistics
import subprocess
import time

import numpy as np
import onnxruntime as ort


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def nnvm_ms(binary, model, batch, threads, iters):
    out = subprocess.run([binary, "bench", model, "--batch", str(batch), "--threads", str(threads), "--iters",
                          str(iters)], check=True, capture_output=True, text=True,
                         env=dict(os.environ, NNVM_THREADS=str(threads))).stdout
    fused = float(re.search(r"fused \(traced\):\s+([\d.]+) ms", out).group(1))
    eager = float(re.search(r"unfused \(eager\):\s+([\d.]+) ms", out).group(1))
    return fused, eager


def ort_ms(model, batch, threads, iters):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    feeds = {}
    for inp in sess.get_inputs():
        shape = [batch if not isinstance(d, int) else d for d in inp.shape]
        feeds[inp.name] = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    for _ in range(3):
        sess.run(None, feeds)
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("model_dir")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--threads", default="1,2")
    a = ap.parse_args()
    print(f"CPU: {cpu_model()}; onnxruntime {ort.__version__}; median of {a.iters}\n")
    print("| model | batch | threads | nnvm fused ms | nnvm eager ms | ORT ms | ORT / nnvm fused |")
    print("|---|---|---|---|---|---|---|")
    for name in ["resnet18", "bert_layer", "gpt_block"]:
        model = os.path.join(a.model_dir, name + ".onnx")
        if not os.path.exists(model):
            continue
        for batch in [int(b) for b in a.batches.split(",")]:
            for threads in [int(t) for t in a.threads.split(",")]:
                fused, eager = nnvm_ms(a.binary, model, batch, threads, a.iters)
                ref = ort_ms(model, batch, threads, a.iters)
                print(f"| {name} | {batch} | {threads} | {fused:.2f} | {eager:.2f} | {ref:.2f} | {ref / fused:.2f} |",
                      flush=True)


if __name__ == "__main__":
    main()
