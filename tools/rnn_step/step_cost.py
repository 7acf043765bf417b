#!/usr/bin/env python3
"""What a traced RNN step costs, counted (docs/BENCHMARKS.md).

Builds driver.cpp against a built libnnvm (default /tmp/build-rd, a
RelWithDebInfo build with NNVM_NATIVE=OFF: valgrind does not run AVX-512),
runs STEPS steps under callgrind with every instruction's count, and prints
per step: the instructions, those besides cpu::gemm, and the atomic
read-modify-write instructions (lock-prefixed, and xchg with memory) by the
place that executes them: the function and its three outermost source lines.

    python3 tools/rnn_step/step_cost.py [BUILD_DIR] [STEPS]
"""
import collections
import os
import re
import subprocess
import sys

from build_driver import build_driver

build = sys.argv[1] if len(sys.argv) > 1 else "/tmp/build-rd"
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
work, driver = build_driver(build, "step_cost.")
out = os.path.join(work, "callgrind.out")
subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=yes", f"--callgrind-out-file={out}",
                "--toggle-collect=measured*", driver, str(steps)], check=True, capture_output=True)

# Instruction counts by (object, address). With --dump-instr=yes a cost line
# is "address line count"; addresses may be relative to the line before
# ("+N", "-N", "*"); the line after a calls= line is the call's inclusive
# cost, not the caller's own.
objects, counts = {}, collections.Counter()
obj, last, skip, total = None, 0, False, 0
with open(out) as f:
    for line in f:
        m = re.match(r"(c?ob)=\((\d+)\)(?: (.*))?", line)
        if m:
            if m.group(3):
                objects[m.group(2)] = m.group(3).strip()
            if m.group(1) == "ob":
                obj = objects.get(m.group(2))
            continue
        if line.startswith("calls="):
            skip = True
            continue
        if line.startswith("totals:"):
            total = int(line.split()[1])
        if not line or line[0] not in "0123456789+-*":
            continue
        parts = line.split()
        a = parts[0]
        if a.startswith("0x"):
            addr = int(a, 16)
        elif a[0] in "+-":
            addr = last + int(a, 0) if a[0] == "+" else last - int(a[1:], 0)
        else:
            addr = last
        last = addr
        if skip:
            skip = False
        elif len(parts) > 2:
            counts[(obj, addr)] += int(parts[2])

gemm = 0
annotate = subprocess.run(["callgrind_annotate", "--inclusive=yes", out], capture_output=True, text=True).stdout
for line in annotate.splitlines():
    if "cpu::gemm(" in line:
        gemm = int(line.split()[0].replace(",", ""))
        break
print(f"instructions a step: {total / steps:,.0f}, besides cpu::gemm {(total - gemm) / steps:,.0f}")

atomics = collections.Counter()
for path in sorted({o for o, _ in counts if o and o.startswith("/")}):
    listing = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], capture_output=True, text=True).stdout
    for line in listing.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+(lock\s.*|xchg\s+%\w+,\(.*)", line)
        if m and counts[(path, int(m.group(1), 16))]:
            atomics[(path, int(m.group(1), 16))] = counts[(path, int(m.group(1), 16))]
rows, sum_atomics = [], 0
for (path, addr), n in atomics.most_common():
    if n < steps / 4:
        continue
    sum_atomics += n
    where = subprocess.run(["addr2line", "-i", "-f", "-C", "-e", path, hex(addr)], capture_output=True,
                           text=True).stdout.splitlines()
    funcs, places = where[0::2], [os.path.basename(p.split(" ")[0]) for p in where[1::2]]
    # addr2line names the innermost inlined frame first: show the outermost three
    rows.append(f"  {n / steps:5.2f}  {os.path.basename(path)}: {funcs[-1][:60]}  @ {' > '.join(places[::-1][:3])}")
print(f"atomic read-modify-writes a step: {sum_atomics / steps:.1f}")
print("\n".join(rows))
