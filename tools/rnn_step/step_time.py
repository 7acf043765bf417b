#!/usr/bin/env python3
"""Where a traced RNN step's wall time goes, by the time-stamp counter (docs/BENCHMARKS.md).

Builds driver.cpp against a built libnnvm (default build/, the native
Release build the benchmarks use) and runs STEPS steps (default 200,000)
five times, printing per step the ticks from the step's first op to its
last (recording: dispatch, the recorder, the lazy outputs), in item() (the
flush: lookup, plan, binding) and for the whole loop. The counter ticks at
the processor's base clock (`grep -m1 MHz /proc/cpuinfo`), whatever the
clock the cores run at; timing two ticks costs a few dozen of them.

    python3 tools/rnn_step/step_time.py [BUILD_DIR] [STEPS]
"""
import os
import subprocess
import sys

from build_driver import build_driver, root

build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build")
steps = sys.argv[2] if len(sys.argv) > 2 else "200000"
work, driver = build_driver(build, "step_time.")
out = subprocess.run([driver, steps, "time"], check=True, capture_output=True, text=True).stdout
print("\n".join(line for line in out.splitlines() if line.startswith("ticks")))
