#!/usr/bin/env python3
"""The data a traced RNN step touches, in cache lines (docs/BENCHMARKS.md).

Builds driver.cpp against a built libnnvm (default /tmp/build-rd, a
RelWithDebInfo build with NNVM_NATIVE=OFF: valgrind does not run AVX-512),
runs it under valgrind's lackey with every instruction, load and store
traced, splits the trace at the driver's marker stores and prints, for the
last steps, the distinct 64-byte lines touched: W and U, the stack, the rest;
then the lines of one step by the function whose instruction touched each
first (libnnvm's symbols; code elsewhere, the driver's, libc's or the JIT's,
by its 4 KiB page).

    python3 tools/rnn_step/step_footprint.py [BUILD_DIR]
"""
import bisect
import collections
import os
import re
import subprocess
import sys

from build_driver import build_driver

build = sys.argv[1] if len(sys.argv) > 1 else "/tmp/build-rd"
work, driver = build_driver(build, "step_footprint.")
log = os.path.join(work, "trace.txt")
out = subprocess.run(["valgrind", "--tool=lackey", "--trace-mem=yes", f"--log-file={log}", driver, "30"],
                     check=True, capture_output=True, text=True).stdout
addr = {}
for line in out.splitlines():
    name, *rest = line.split()
    if name in ("W", "U"):
        addr[name] = (int(rest[0], 16), int(rest[1]))
    elif name in ("marker", "matmul"):
        addr[name] = int(rest[0], 16)
lines_of = lambda a, n: range(a >> 6, (a + n + 63) >> 6)
weights = set(lines_of(*addr["W"])) | set(lines_of(*addr["U"]))

# libnnvm's functions at their run-time addresses: matmul's, printed by the
# driver, against its offset in the library.
lib = os.path.join(build, "libnnvm.so")
symbols = []
for line in subprocess.run(["nm", "-C", "--defined-only", lib], check=True, capture_output=True,
                           text=True).stdout.splitlines():
    m = re.match(r"([0-9a-f]+) [tTwW] (.*)", line)
    if m:
        symbols.append((int(m.group(1), 16), m.group(2)))
base = addr["matmul"] - next(a for a, s in symbols if s == "nnvm::matmul(nnvm::Tensor const&, nnvm::Tensor const&)")
symbols = sorted((a + base, s) for a, s in symbols)
starts = [a for a, _ in symbols]
lib_end = starts[-1] + (1 << 16)


def function_at(pc):
    k = bisect.bisect_right(starts, pc) - 1
    if k < 0 or pc >= lib_end:
        return f"code outside libnnvm, page {pc >> 12 << 12:#x}"
    name = symbols[k][1].replace("(anonymous namespace)::", "").replace("nnvm::", "")
    return re.sub(r"\(.*", "", name)  # without its parameters


# Each step: every line touched, with the instruction that touched it first.
steps, step, pc = [], None, 0
with open(log) as f:
    for line in f:
        if line.startswith("I"):
            pc = int(line[3:].split(",")[0], 16)
            continue
        if len(line) < 4 or line[0] != " " or line[1] not in "LSM":
            continue
        a = int(line[3:].split(",")[0], 16)
        if line[1] == "S" and a == addr["marker"]:
            if step is not None:
                steps.append(step)
            step = {}
        elif step is not None:
            step.setdefault(a >> 6, pc)
if step:
    steps.append(step)
steps = steps[:-1]  # the last one runs on past the loop
stack_of = lambda line: (line << 6) >= 0x1F000000  # valgrind's client stack
for s in steps[-5:]:
    w = len(s.keys() & weights)
    st = sum(1 for x in s if stack_of(x))
    print(f"{len(s)} lines ({len(s) * 64 / 1024:.1f} KiB): W and U {w}, stack {st}, the rest {len(s) - w - st}")
by = collections.Counter()
for x, first in steps[-1].items():
    if x not in weights:
        by[("stack: " if stack_of(x) else "") + function_at(first)] += 1
print(f"the last step's lines besides W and U, by the function that touched each first:")
for name, n in by.most_common(30):
    print(f"  {n:4d}  {name[:110]}")
