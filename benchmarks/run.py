"""Run every benchmark (``make bench``); results land in benchmarks/results/*.json and plots here.

BLAS is limited to one thread (as for the peers) so the 2-core machine is not oversubscribed by
BLAS threads on top of numba threads.
"""
from __future__ import annotations

import os
import subprocess
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("LINXLING_NO_PROGRESS", "1")

STEPS = [
    [sys.executable, "-m", "benchmarks.bench_cr5", "main"],
    [sys.executable, "-m", "benchmarks.bench_cr5", "scaling"],
    [sys.executable, "-m", "benchmarks.bench_cr5", "scale20"],
    [sys.executable, "benchmarks/bench_wmf.py"],
]


def main() -> int:
    for cmd in STEPS:
        print(">>", " ".join(cmd[1:]), flush=True)
        rc = subprocess.call(cmd)
        if rc:
            print(f"benchmark step failed with exit code {rc}: {' '.join(cmd)}", file=sys.stderr)
            return rc
    return 0


if __name__ == "__main__":
    sys.exit(main())
