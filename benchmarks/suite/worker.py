"""Fit one method and run every task on it, in this (fresh) process; writes one JSON file.

``python -m benchmarks.suite.worker METHOD CONFIG_JSON OUT_JSON [TASKS_JSON]`` (called by the
runner; TASKS_JSON: the names of the tasks to run, default all).
Fit time is wall-clock around ``Method.fit``; memory is the process's peak RSS
(``getrusage``) at the end of the fit minus its RSS just before the fit (data already loaded),
and the process's peak RSS itself.
"""
from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
os.environ.setdefault("LINXLING_NO_PROGRESS", "1")

import json
import resource
import sys
import time
import traceback
import warnings

from linxling._memory import current_rss


def _peak() -> int:
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024   # Linux: KiB


def load_data(cfg):
    from linxling.datasets import load_bible
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        corpus = load_bible(list(cfg.languages), unit="verse")
    train, test = corpus.split(n_test=cfg.test_chapters, by="chapter", random_state=cfg.split_seed)
    return {"train": train, "test": test,
            "info": {"aligned_verses": len(corpus.keys), "train_verses": len(train.keys),
                     "test_verses": len(test.keys), "test_chapters": cfg.test_chapters,
                     "languages": list(cfg.languages)}}


#: the cell of a task left out by ``--tasks``
NOT_RUN = "not run: --tasks"


def run_method(name: str, cfg, tasks=None) -> dict:
    """Fit ``name`` and run ``tasks`` (default: every task) on it; the tasks left out are
    recorded as not applicable with :data:`NOT_RUN`, and the ones run under ``tasks_run``."""
    import threadpoolctl

    from benchmarks.suite.registry import NotApplicable, get_method
    from benchmarks.suite.tasks import TASKS
    method = get_method(name)
    data = load_data(cfg)
    out = {"method": name, "description": method.description, "data": data["info"], "tasks": {},
           "config": cfg.to_dict(), "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "load_before_fit": list(os.getloadavg()), "tasks_run": [t for t in TASKS if tasks is None or t in tasks]}
    with threadpoolctl.threadpool_limits(1, "blas"):
        rss0 = current_rss()
        t0 = time.perf_counter()
        embedder = method.fit(data["train"], cfg)
        out["fit_s"] = time.perf_counter() - t0
        out["load_after_fit"] = list(os.getloadavg())
        out["fit_peak_added_bytes"] = _peak() - rss0
        out["process_peak_bytes"] = _peak()
        for tname, task in TASKS.items():
            t1 = time.perf_counter()
            if tname not in out["tasks_run"]:
                out["tasks"][tname] = {"na": NOT_RUN}
                continue
            if tname in method.not_applicable:
                out["tasks"][tname] = {"na": method.not_applicable[tname]}
                continue
            try:
                res = task.run(embedder, cfg, data)
                out["tasks"][tname] = {"metrics": res, "eval_s": time.perf_counter() - t1}
                if tname in method.expected_below_floor:
                    out["tasks"][tname]["expected_below_floor"] = method.expected_below_floor[tname]
            except NotApplicable as exc:
                out["tasks"][tname] = {"na": str(exc)}
            except Exception as exc:  # noqa: BLE001  recorded and shown in the table, never silently dropped
                out["tasks"][tname] = {"error": f"{type(exc).__name__}: {exc}",
                                       "traceback": traceback.format_exc()}
            print(f"  {name} / {tname}: {time.perf_counter() - t1:.1f}s", file=sys.stderr, flush=True)
    return out


def main(argv=None) -> int:
    from benchmarks.suite.config import Config
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (3, 4):
        print("usage: python -m benchmarks.suite.worker METHOD CONFIG_JSON OUT_JSON [TASKS_JSON]", file=sys.stderr)
        return 2
    name, cfg_json, out_path = argv[:3]
    cfg = Config.from_dict(json.loads(cfg_json))
    res = run_method(name, cfg, **({"tasks": json.loads(argv[3])} if len(argv) == 4 else {}))
    from benchmarks.suite import write_atomic
    write_atomic(out_path, json.dumps(res, indent=1, default=float))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:     # Ctrl-C reaches the runner too, which says it once
        sys.exit(130)
