"""One benchmark suite: every registered method on every task, one leaderboard.

``python -m benchmarks [--quick] [--methods ...] [--out DIR] [--readme FILE]``; see
benchmarks/README.md ("Leaderboard").
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parents[1]


def run_suite(quick: bool = False, methods=None, out_dir: Path | None = None, readme: Path | None = None,
              plot_dir: Path | None = None, command: str = "python -m benchmarks", log=print,
              resume: bool = False) -> dict:
    from benchmarks._machine import machine
    from benchmarks.suite import methods as _m  # noqa: F401
    from benchmarks.suite import report
    from benchmarks.suite.config import Config
    from benchmarks.suite.registry import METHODS, get_method
    cfg = Config.make(quick)
    names = list(methods) if methods else list(METHODS)
    for n in names:
        get_method(n)
    out_dir = Path(out_dir) if out_dir else BENCH_DIR / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    results = {"config": cfg.to_dict(), "methods": {}, "command": command + (" --quick" if quick else ""),
               "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")}
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               LINXLING_NO_PROGRESS="1")
    root = str(BENCH_DIR.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    for n in names:
        f = out_dir / f"method_{n.replace('/', '_')}.json"
        if resume and f.is_file():
            prev = json.loads(f.read_text(encoding="utf-8"))
            if prev.get("config") == cfg.to_dict():
                results["methods"][n] = prev
                results.setdefault("kept", []).append(n)
                log(f">> {n}: kept from {f} (same config)")
                continue
        log(f">> {n}")
        t = time.perf_counter()
        rc = subprocess.call([sys.executable, "-m", "benchmarks.suite.worker", n,
                              json.dumps(cfg.to_dict()), str(f)], env=env, cwd=root)
        if rc:
            raise RuntimeError(f"method {n!r} failed in its worker process (exit code {rc})")
        results["methods"][n] = json.loads(f.read_text(encoding="utf-8"))
        results["methods"][n]["wall_s"] = time.perf_counter() - t
        f.write_text(json.dumps(results["methods"][n], indent=1, default=float), encoding="utf-8")
        log(f"   {n}: fit {results['methods'][n]['fit_s']:.1f}s, total {time.perf_counter() - t:.0f}s")
    results["total_s"] = time.perf_counter() - t0
    import sklearn
    results["machine"] = {**machine(), "sklearn": sklearn.__version__}
    results["shared_machine"] = True
    plot_dir = Path(plot_dir) if plot_dir else BENCH_DIR
    results["plots"] = report.plots(results, plot_dir)
    (out_dir / "leaderboard.json").write_text(json.dumps(results, indent=1, default=float), encoding="utf-8")
    # the committed copy beside the README and the plots: every metric, no tracebacks
    summary = json.loads(json.dumps(results, default=float))
    for v in summary["methods"].values():
        for t in v["tasks"].values():
            t.pop("traceback", None)
    summary["plots"] = [Path(f).name for f in summary["plots"]]
    (plot_dir / "leaderboard.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    report.write_readme(Path(readme) if readme else BENCH_DIR / "README.md", results)
    return results


def main(argv=None, prog: str = "python -m benchmarks") -> int:
    p = argparse.ArgumentParser(prog=prog, description="every registered method on every task")
    p.add_argument("--quick", action="store_true", help="reduced suite (< 10 min on 2 cores)")
    p.add_argument("--methods", nargs="+", help="only these registered methods")
    p.add_argument("--out", help="folder for the JSON results (default benchmarks/results)")
    p.add_argument("--readme", help="markdown file to write the table into (default benchmarks/README.md)")
    p.add_argument("--plots", help="folder for the PNGs and leaderboard.json (default benchmarks/)")
    p.add_argument("--resume", action="store_true",
                   help="keep the per-method results already in --out that were run with the same config")
    a = p.parse_args(argv)
    try:
        r = run_suite(a.quick, a.methods, a.out, a.readme, a.plots, command=prog, resume=a.resume)
    except (ValueError, RuntimeError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    print(f"leaderboard written; total {r['total_s'] / 60:.1f} min")
    errors = [(m, t, x["error"]) for m, v in r["methods"].items() for t, x in v["tasks"].items()
              if "error" in x]
    for m, t, e in errors:
        print(f"{prog}: {m} / {t} failed: {e.splitlines()[0]}", file=sys.stderr)
    return 1 if errors else 0
