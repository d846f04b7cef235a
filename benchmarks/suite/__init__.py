"""One benchmark suite: every registered method on every task, one leaderboard.

``python -m benchmarks [--quick] [--methods ...] [--tasks ...] [--out DIR] [--publish]``; see
benchmarks/README.md ("Leaderboard").

A run writes only under its results folder (``benchmarks/results/quick`` or
``benchmarks/results/full`` by default, git-ignored): the JSON, the table as ``leaderboard.md``
and the plots. ``--publish`` (full suite only) also writes the table into benchmarks/README.md and
the plots and the summary JSON beside it, the tracked copies.

An interrupted run (Ctrl-C) writes no leaderboard: the files of the previous run stay whole (every
file is written to a temporary name and renamed), and ``--resume`` keeps the methods that finished.

Exit status: 0; 1 when a task failed with an error; 2 on a usage error, missing shared data or when a method's worker
process failed; 130 when interrupted; 3 when a method's headline metric on a task is not clearly
above that task's baseline (chance, majority class or no correlation; the rule is in
benchmarks/suite/tasks.py) and the method has not declared the task not applicable or expected
below the floor.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parents[1]


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a rename, so
    that an interrupted or failed write leaves the previous file whole, never a truncated one."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def default_out_dir(quick: bool) -> Path:
    """Where a run writes when not told otherwise: git-ignored, one folder per config."""
    return BENCH_DIR / "results" / ("quick" if quick else "full")


def missing_data(cfg, methods, tasks) -> str | None:
    """What the run of ``methods`` on ``tasks`` would not find in the shared data folder
    (:func:`linxling.datasets.shared_data_dir`): a message naming the folder, where its path came
    from and every missing file with the tasks or methods that read it; None when nothing is
    missing. The run checks this before the first fit: a missing file otherwise showed as an error
    in every cell that reads it, after every method had been fitted."""
    from benchmarks.suite.registry import get_method
    from benchmarks.suite.tasks import TASKS
    from linxling.datasets import shared_data_dir
    needs: dict[str, list[str]] = {}
    for n in methods:
        m = get_method(n)
        for f in m.data:
            needs.setdefault(f, []).append(n)
    for t in tasks:
        if any(t not in get_method(n).not_applicable for n in methods):
            for f in TASKS[t].data(cfg):
                needs.setdefault(f, []).append(t)
    if not needs:
        return None
    root = shared_data_dir()
    where = (f"{root} (LINXLING_SHARED_DATA)" if os.environ.get("LINXLING_SHARED_DATA")
             else f"{root} (the default, <repository>/../shared/data; set LINXLING_SHARED_DATA to another folder)")
    free = [t for t in TASKS if not TASKS[t].data(cfg)]
    hint = (f"; or run only tasks that need no shared data: --tasks {' '.join(repr(t) for t in free)}"
            if free else "")
    if not root.is_dir():
        return (f"the shared data folder {where} does not exist; it should hold "
                f"{', '.join(sorted({f.split('/')[0] + '/' for f in needs}))} (for "
                f"{', '.join(dict.fromkeys(w for ws in needs.values() for w in ws))}){hint}")
    missing = {f: ws for f, ws in needs.items() if not (root / f).is_file()}
    if not missing:
        return None
    return (f"shared data missing in {where}: "
            + "; ".join(f"{root / f} (read by {', '.join(ws)})" for f, ws in missing.items()) + hint)


def _keep(f: Path, cfg, tasks) -> dict | None:
    """A method's results from an earlier run in the same folder, when they were run with the same
    config and include ``tasks`` (``--resume``); else None."""
    from benchmarks.suite.tasks import TASKS
    if not f.is_file():
        return None
    prev = json.loads(f.read_text(encoding="utf-8"))
    if prev.get("config") != cfg.to_dict() or not set(tasks) <= set(prev.get("tasks_run", TASKS)):
        return None
    return prev


def run_suite(quick: bool = False, methods=None, out_dir: Path | None = None, readme: Path | None = None,
              plot_dir: Path | None = None, command: str = "python -m benchmarks", log=print,
              resume: bool = False, tasks=None) -> dict:
    """Fit and evaluate ``methods`` (default: all registered) on ``tasks`` (default: all) and
    write the results; a task left out shows "— (not run: --tasks)".

    Everything goes to ``out_dir`` (default :func:`default_out_dir`): ``leaderboard.json``,
    ``leaderboard.md`` (the README section), the plots and one ``method_*.json`` per method.
    ``readme`` and ``plot_dir`` publish as well: the section is written into ``readme`` between
    its markers, the plots and the summary ``leaderboard.json`` into ``plot_dir``. Nothing else is
    written.
    """
    from benchmarks._machine import machine
    from benchmarks.suite import methods as _m  # noqa: F401
    from benchmarks.suite import report
    from benchmarks.suite.config import Config
    from benchmarks.suite.registry import METHODS, get_method
    from benchmarks.suite.tasks import TASKS
    cfg = Config.make(quick)
    names = list(dict.fromkeys(methods)) if methods else list(METHODS)   # a repeated name runs once
    for n in names:
        get_method(n)
    unknown = [t for t in tasks or () if t not in TASKS]
    if unknown:
        raise ValueError(f"unknown task(s) {', '.join(map(repr, unknown))}; tasks: {', '.join(TASKS)}")
    selected = [t for t in TASKS if t in tasks] if tasks else list(TASKS)
    # absolute: the worker processes run in the repository root, not in the caller's folder
    out_dir = Path(out_dir).resolve() if out_dir else default_out_dir(quick)
    kept = {n: prev for n in names if resume
            and (prev := _keep(out_dir / f"method_{n.replace('/', '_')}.json", cfg, selected)) is not None}
    problem = missing_data(cfg, [n for n in names if n not in kept], selected)
    if problem:
        raise FileNotFoundError(problem)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    # the command as run: a table of some methods or tasks, or assembled by --resume, says so
    ran = (command + (" --quick" if quick else "") + (" --methods " + " ".join(names) if methods else "")
           + (" --tasks " + " ".join(shlex.quote(t) for t in selected) if tasks else "")
           + (" --resume" if resume else ""))
    results = {"config": cfg.to_dict(), "methods": {}, "command": ran,
               "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")}
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               LINXLING_NO_PROGRESS="1")
    root = str(BENCH_DIR.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    for n in names:
        f = out_dir / f"method_{n.replace('/', '_')}.json"
        if n in kept:
            results["methods"][n] = kept[n]
            results.setdefault("kept", []).append(n)
            log(f">> {n}: kept from {f} (same config)")
            continue
        log(f">> {n}")
        t = time.perf_counter()
        rc = subprocess.call([sys.executable, "-m", "benchmarks.suite.worker", n,
                              json.dumps(cfg.to_dict()), str(f)] + ([json.dumps(selected)] if tasks else []),
                             env=env, cwd=root)
        if rc:
            raise RuntimeError(f"method {n!r} failed in its worker process (exit code {rc})")
        results["methods"][n] = json.loads(f.read_text(encoding="utf-8"))
        results["methods"][n]["wall_s"] = time.perf_counter() - t
        write_atomic(f, json.dumps(results["methods"][n], indent=1, default=float))
        log(f"   {n}: fit {results['methods'][n]['fit_s']:.1f}s, total {time.perf_counter() - t:.0f}s")
    results["total_s"] = time.perf_counter() - t0
    import sklearn
    results["machine"] = {**machine(), "sklearn": sklearn.__version__}
    loads = [x for v in results["methods"].values() for k in ("load_before_fit", "load_after_fit")
             for x in v.get(k, [])[:1]]
    results["load_range"] = [min(loads), max(loads)] if loads else None
    # one method runs at a time (load ~1-2 on its own): more means other jobs shared the cores
    results["shared_machine"] = bool(loads) and max(loads) > (os.cpu_count() or 1) + 0.5
    results["verdicts"] = report.verdicts(results)
    results["plots"] = report.plots(results, out_dir)
    # both texts first, then two renames: an interruption leaves the previous pair, not a mix
    table_text, json_text = report.section(results) + "\n", json.dumps(results, indent=1, default=float)
    write_atomic(out_dir / "leaderboard.json", json_text)
    write_atomic(out_dir / "leaderboard.md", table_text)
    if readme is not None or plot_dir is not None:
        _publish(results, Path(readme) if readme else BENCH_DIR / "README.md",
                 Path(plot_dir) if plot_dir else BENCH_DIR)
    return results


def _publish(results: dict, readme: Path, plot_dir: Path) -> None:
    """The tracked copies: plots and a summary JSON (every metric, no tracebacks) in
    ``plot_dir``, the table in ``readme``."""
    from benchmarks.suite import report
    plot_dir.mkdir(parents=True, exist_ok=True)
    summary = json.loads(json.dumps(results, default=float))
    for v in summary["methods"].values():
        for t in v["tasks"].values():
            t.pop("traceback", None)
    summary["plots"] = [Path(f).name for f in report.plots(results, plot_dir)]
    write_atomic(plot_dir / "leaderboard.json", json.dumps(summary, indent=1))
    report.write_readme(readme, {**results, "plots": summary["plots"]})


def main(argv=None, prog: str = "python -m benchmarks") -> int:
    p = argparse.ArgumentParser(prog=prog, description="every registered method on every task")
    p.add_argument("--quick", action="store_true", help="reduced suite (< 10 min on 2 cores)")
    p.add_argument("--methods", nargs="+", metavar="METHOD",
                   help="only these registered methods (default: all; names: see --list)")
    p.add_argument("--tasks", nargs="+", metavar="TASK",
                   help="only these tasks, each name quoted as one argument, e.g. --tasks 'verse retrieval' "
                        "Tatoeba (default: all; names: see --list); the others show '— (not run: --tasks)'")
    p.add_argument("--out", help="folder for the results: JSON, leaderboard.md, plots "
                                 "(default benchmarks/results/quick or benchmarks/results/full)")
    p.add_argument("--publish", action="store_true",
                   help="full suite only: also write the table into benchmarks/README.md and the plots "
                        "and leaderboard.json beside it (tracked files)")
    p.add_argument("--readme", help="with --publish: the markdown file to write the table into "
                                    "(default benchmarks/README.md)")
    p.add_argument("--plots", help="with --publish: folder for the published PNGs and leaderboard.json "
                                   "(default benchmarks/)")
    p.add_argument("--resume", action="store_true",
                   help="keep the per-method results already in --out that were run with the same config")
    p.add_argument("--list", action="store_true", help="print the registered methods and the tasks, and exit")
    from benchmarks._cli import show_defaults
    a = show_defaults(p).parse_args(argv)
    from benchmarks.suite import methods as _registers  # noqa: F401  (fills METHODS)
    from benchmarks.suite.registry import METHODS
    from benchmarks.suite.tasks import TASKS
    if a.list:
        print("methods (--methods NAME ...):")
        print("\n".join(f"  {n}: {m.description}" for n, m in METHODS.items()))
        print("tasks (--tasks NAME ...; every method runs every task by default; column: metric):")
        print("\n".join(f"  {n}: {t.headline}" for n, t in TASKS.items()))
        return 0
    unknown = [n for n in a.methods or () if n not in METHODS]
    if unknown:
        p.error(f"argument --methods: unknown method(s) {', '.join(map(repr, unknown))}; registered: "
                f"{', '.join(METHODS)} ({prog} --list)")
    unknown = [t for t in a.tasks or () if t not in TASKS]
    if unknown:
        p.error(f"argument --tasks: unknown task(s) {', '.join(map(repr, unknown))}; tasks (quote the "
                f"names with spaces): {', '.join(map(repr, TASKS))} ({prog} --list)")
    if a.publish and a.tasks:
        p.error("--publish writes every task's column; a run of some --tasks is not published")
    if a.out:
        out = Path(a.out)
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            p.error(f"argument --out: cannot create the folder {a.out!r}: {exc.strerror or exc}")
        if not os.access(out, os.W_OK | os.X_OK):
            p.error(f"argument --out: the folder {a.out!r} is not writable")
    if (a.readme or a.plots) and not a.publish:
        p.error("--readme and --plots say where to publish: give --publish too")
    if a.publish and a.quick:
        p.error("--publish writes the full suite's table; a --quick run is not published "
                "(its results are in benchmarks/results/quick)")
    readme = (a.readme or BENCH_DIR / "README.md") if a.publish else None
    plots = (a.plots or BENCH_DIR) if a.publish else None
    try:
        r = run_suite(a.quick, a.methods, a.out, readme, plots, command=prog, resume=a.resume, tasks=a.tasks)
    except (ValueError, RuntimeError, FileNotFoundError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted (each leaderboard file is replaced whole or not at all); the methods "
              "that finished are kept by --resume", file=sys.stderr)
        return 130
    out = Path(a.out) if a.out else default_out_dir(a.quick)
    print(f"leaderboard written to {out / 'leaderboard.md'}"
          + (f" and published in {readme}" if readme else "") + f"; total {r['total_s'] / 60:.1f} min")
    errors = [(m, t, x["error"]) for m, v in r["methods"].items() for t, x in v["tasks"].items()
              if "error" in x]
    for m, t, e in errors:
        print(f"{prog}: {m} / {t} failed: {e.splitlines()[0]}", file=sys.stderr)
    from benchmarks.suite.report import declared_below_floor
    from benchmarks.suite.tasks import TASKS
    declared = declared_below_floor(r)
    weak = []
    for m, v in r["verdicts"].items():
        for t, ok in v.items():
            x = r["methods"][m]["tasks"][t]["metrics"]
            what = (f"{TASKS[t].headline} {x[TASKS[t].headline]:.4f}", f"the {x['baseline']['kind']} "
                    f"baseline {x['baseline']['value']:.4f} (floor {x['baseline']['floor']:.4f})")
            if ok is False and (m, t) in declared:
                print(f"{prog}: note: {m} / {t}: {what[0]} is not clearly above {what[1]}, as the method "
                      f"declares: {declared[m, t]}", file=sys.stderr)
            elif ok is False:
                weak.append((m, t))
                print(f"{prog}: {m} / {t}: {what[0]} is not clearly above {what[1]}", file=sys.stderr)
            elif (m, t) in declared:
                print(f"{prog}: note: {m} / {t}: {what[0]} now beats {what[1]} although the method "
                      "declares it expected below the floor: remove the declaration "
                      "(benchmarks/suite/methods.py) if it holds on the full run", file=sys.stderr)
    return 1 if errors else 3 if weak else 0
