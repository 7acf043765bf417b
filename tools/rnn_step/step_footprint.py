#!/usr/bin/env python3
"""The data a traced RNN step touches, in cache lines (docs/BENCHMARKS.md).

Builds driver.cpp against a built libnnvm (default /tmp/build-rd, a
RelWithDebInfo build with NNVM_NATIVE=OFF: valgrind does not run AVX-512),
runs it under valgrind's lackey with every load and store traced, splits the
trace at the driver's marker stores and prints, for the last steps, the
distinct 64-byte lines touched: W and U, the stack, the rest; then the rest of
one step by 4 KiB page.

    python3 tools/rnn_step/step_footprint.py [BUILD_DIR]
"""
import collections
import os
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
    elif name == "marker":
        addr[name] = int(rest[0], 16)
lines_of = lambda a, n: range(a >> 6, (a + n + 63) >> 6)
weights = set(lines_of(*addr["W"])) | set(lines_of(*addr["U"]))

steps, step = [], None
with open(log) as f:
    for line in f:
        if len(line) < 4 or line[0] != " " or line[1] not in "LSM":
            continue
        a = int(line[3:].split(",")[0], 16)
        if line[1] == "S" and a == addr["marker"]:
            if step is not None:
                steps.append(step)
            step = set()
        elif step is not None:
            step.add(a >> 6)
if step:
    steps.append(step)
steps = steps[:-1]  # the last one runs on past the loop
stack_of = lambda line: (line << 6) >= 0x1F000000  # valgrind's client stack
for s in steps[-5:]:
    w = len(s & weights)
    st = sum(1 for x in s if stack_of(x))
    print(f"{len(s)} lines ({len(s) * 64 / 1024:.1f} KiB): W and U {w}, stack {st}, the rest {len(s) - w - st}")
pages = collections.Counter((x << 6) >> 12 for x in steps[-1] if x not in weights and not stack_of(x))
print(f"the rest of the last step by 4 KiB page ({len(pages)} pages):")
for page, n in pages.most_common(12):
    print(f"  {page << 12:#x}  {n}")
