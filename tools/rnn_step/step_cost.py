#!/usr/bin/env python3
"""What a traced RNN step costs, counted (docs/BENCHMARKS.md).

Builds driver.cpp against a built libnnvm (default /tmp/build-rd, a
RelWithDebInfo build with NNVM_NATIVE=OFF: valgrind does not run AVX-512),
runs STEPS steps under callgrind with every instruction's count, and prints
per step: the instructions, those besides cpu::gemm, and the atomic
read-modify-write instructions (lock-prefixed, and xchg with memory) by the
place that executes them: the function and its three outermost source lines.

With --lines FILE[,FILE...] it also prints, per step, libnnvm's
instructions by the source line of those files they belong to: the
innermost frame in one of the files, so code inlined there from elsewhere
(absl, the standard library, nnvm's headers) counts on the line that called it.

    python3 tools/rnn_step/step_cost.py [BUILD_DIR] [STEPS] [--lines recorder.cpp,executor.cpp]

TOP=N in the environment prints the N costliest lines (default 40).
"""
import collections
import os
import re
import subprocess
import sys

from build_driver import build_driver

args = sys.argv[1:]
line_files = []
if "--lines" in args:
    at = args.index("--lines")
    line_files = args[at + 1].split(",")
    del args[at:at + 2]
build = args[0] if len(args) > 0 else "/tmp/build-rd"
steps = int(args[1]) if len(args) > 1 else 2000
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

if line_files:
    lib = next(o for o, _ in counts if o and o.endswith("libnnvm.so"))
    addrs = sorted({a for o, a in counts if o == lib and counts[(o, a)]})
    # -a marks each address; -i lists its inlined frames, innermost first
    listing = subprocess.run(["addr2line", "-a", "-i", "-f", "-C", "-e", lib] + [hex(a) for a in addrs],
                             capture_output=True, text=True).stdout.splitlines()
    frames, at = {}, None
    for line in listing:
        if re.fullmatch(r"0x[0-9a-f]+", line):
            at = int(line, 16)
            frames[at] = []
        elif at is not None:
            frames[at].append(line)
    by_line = collections.Counter()
    for a in addrs:
        places = [p.split(" ")[0] for p in frames.get(a, [])[1::2]]
        mine = [p for p in places if os.path.basename(p).split(":")[0] in line_files]
        if mine:
            by_line[os.path.basename(mine[0])] += counts[(lib, a)]
    print(f"instructions a step by line of {', '.join(line_files)}: {sum(by_line.values()) / steps:,.0f}")
    for where, n in by_line.most_common(int(os.environ.get("TOP", 40))):
        if n >= steps:
            print(f"  {n / steps:6.0f}  {where}")
