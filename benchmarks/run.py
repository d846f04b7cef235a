"""``make bench`` (``python -m benchmarks.run``): the Cr5 and WMF benchmarks one after the other.

The steps, each in its own process, stopping at the first that fails:

* ``python -m benchmarks.bench_cr5 main``: Cr5 against the paper's algorithm, quality and speed;
* ``python -m benchmarks.bench_cr5 scaling``: fit time against nnz and K, both methods;
* ``python -m benchmarks.bench_cr5 scale20``: 20 languages jointly, ~584k documents;
* ``python benchmarks/bench_wmf.py``: WMF against implicit; x-WMF / b-WMF on STS 2017.

Minutes to an hour on 2 cores. Raw results go to benchmarks/results/*.json (git-ignored); no
tracked file is written. BLAS is limited to one thread (as for the peers) so the 2-core machine
is not oversubscribed by BLAS threads on top of numba threads. The leaderboard of every method on
every task is another command: ``python -m benchmarks`` (``--help``).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

STEPS = [
    [sys.executable, "-m", "benchmarks.bench_cr5", "main"],
    [sys.executable, "-m", "benchmarks.bench_cr5", "scaling"],
    [sys.executable, "-m", "benchmarks.bench_cr5", "scale20"],
    [sys.executable, "benchmarks/bench_wmf.py"],
]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.parse_args(argv)       # no options: --help explains, anything else is refused before any work
    env = dict(os.environ)
    for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(v, "1")
    env.setdefault("LINXLING_NO_PROGRESS", "1")
    for cmd in STEPS:
        print(">>", " ".join(cmd[1:]), flush=True)
        rc = subprocess.call(cmd, env=env, cwd=ROOT)
        if rc:
            print(f"benchmark step failed with exit code {rc}: {' '.join(cmd)}", file=sys.stderr)
            return rc
    print(f"results written under {ROOT / 'benchmarks' / 'results'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
