"""Cr5 at Wikipedia size: time and peak memory of each fit stage (issue #11, memory).

    python -m benchmarks.cr5_memory --concepts 60000 [--memory-budget 12G] [--cache /tmp/wiki60k.npz]

Generates the Wikipedia-shaped synthetic problem of :mod:`benchmarks.wiki_synth` (or reads it from
``--cache``), then fits Cr5 (r = 300, λ = 1, the paper's tolerances) while a thread samples the
process's resident memory every 20 ms. Prints, for each stage of ``Cr5.fit_matrices``, its time
and the peak RSS reached during it, and the fit's bytes per nonzero above the data. Synthetic
data: for time and memory only, never for quality claims.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import threading
import time

import numpy as np
import scipy.sparse as sp

from linxling._memory import current_rss


class _Sampler(threading.Thread):
    """Peak RSS per named stage (a stage is entered with :meth:`stage`)."""

    def __init__(self, interval: float = 0.02):
        super().__init__(daemon=True)
        self.interval = interval
        self.current = "setup"
        self.peaks: dict[str, int] = {}
        self.times: dict[str, float] = {}
        self._t0 = time.perf_counter()
        self._halt = threading.Event()

    def stage(self, name: str) -> None:
        now = time.perf_counter()
        self.times[self.current] = self.times.get(self.current, 0.0) + now - self._t0
        self._t0 = now
        self.current = name

    def run(self) -> None:
        while not self._halt.is_set():
            r = current_rss()
            self.peaks[self.current] = max(self.peaks.get(self.current, 0), r)
            time.sleep(self.interval)

    def stop(self) -> None:
        self.stage("done")
        self._halt.set()
        self.join()


def _instrument(model, sampler: _Sampler) -> None:
    """Wrap the fit's stage methods so that the sampler knows which stage runs."""
    for name in ("_set_up_problem", "_plan_memory", "_factor_gram", "_top_eigenvectors", "_phi_star",
                 "_orthonormal_map",
                 "_set_fitted"):
        method = getattr(model, name)

        def wrapped(*args, __m=method, __n=name, **kwargs):
            sampler.stage(__n)
            return __m(*args, **kwargs)
        setattr(model, name, wrapped)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--concepts", type=int, default=60_000)
    ap.add_argument("--n-components", type=int, default=300)
    ap.add_argument("--memory-budget", default=None, help="Cr5 memory_budget, e.g. 12G (default: none)")
    ap.add_argument("--start-steps", type=int, default=None,
                    help="Cr5 start_steps (power steps of the start; default: Cr5's)")
    ap.add_argument("--dtype", default="float64", choices=("float64", "float32"),
                    help="dtype of the generated tf-idf blocks and of the fit (Cr5 dtype)")
    ap.add_argument("--cache", default=None, help=".npz file to read the corpus from / write it to")
    ap.add_argument("--json", default=None, help="write the result here")
    ap.add_argument("--shuffle-documents", action="store_true",
                    help="list the second language's documents (with their concept ids) in a random "
                         "order, as real corpora do: the concept of a row is then not its row number")
    from benchmarks._cli import show_defaults
    args = show_defaults(ap).parse_args(argv)

    from benchmarks.wiki_synth import wiki_corpus
    from linxling import Cr5

    t0 = time.perf_counter()
    if args.cache and os.path.exists(args.cache):
        z = np.load(args.cache)
        blocks = {}
        for lang in ("l0", "l1"):
            blocks[lang] = sp.csr_matrix((z[f"{lang}_data"], z[f"{lang}_indices"], z[f"{lang}_indptr"]),
                                         shape=tuple(z[f"{lang}_shape"])).astype(args.dtype, copy=False)
        concepts = {lang: np.arange(blocks[lang].shape[0]) for lang in blocks}
    else:
        blocks, concepts = wiki_corpus(args.concepts, dtype=np.dtype(args.dtype))
        if args.cache:
            np.savez(args.cache, **{f"{lang}_{k}": getattr(X, k) for lang, X in blocks.items()
                                    for k in ("data", "indices", "indptr")},
                     **{f"{lang}_shape": np.array(X.shape) for lang, X in blocks.items()})
    if args.shuffle_documents:
        order = np.random.default_rng(5).permutation(blocks["l1"].shape[0])
        blocks["l1"] = blocks["l1"][order]
        concepts["l1"] = np.asarray(concepts["l1"])[order]
    t_data = time.perf_counter() - t0
    nnz = sum(X.nnz for X in blocks.values())
    rss_data = current_rss()

    model = Cr5(n_components=args.n_components, alpha=1.0, random_state=0, show_progress=False,
                memory_budget=args.memory_budget, dtype=args.dtype,
                **({} if args.start_steps is None else {"start_steps": args.start_steps}))
    sampler = _Sampler()
    _instrument(model, sampler)
    sampler.start()
    t0 = time.perf_counter()
    model.fit_matrices(blocks, concepts)
    t_fit = time.perf_counter() - t0
    sampler.stop()
    peak = max(sampler.peaks.values())
    out = {
        "concepts": args.concepts, "documents": sum(X.shape[0] for X in blocks.values()),
        "features": sum(X.shape[1] for X in blocks.values()), "nnz": nnz,
        "n_components": args.n_components, "memory_budget": args.memory_budget, "dtype": args.dtype,
        "start_steps": model.start_steps, "shuffle_documents": bool(args.shuffle_documents),
        "data_seconds": round(t_data, 1), "fit_seconds": round(t_fit, 1),
        "rss_after_data_GiB": round(rss_data / 2 ** 30, 2), "peak_rss_GiB": round(peak / 2 ** 30, 2),
        "fit_bytes_per_nnz": round((peak - rss_data) / nnz, 1),
        "stages": {k: {"seconds": round(sampler.times.get(k, 0.0), 1),
                       "peak_rss_GiB": round(v / 2 ** 30, 2)} for k, v in sampler.peaks.items()},
        "eig": {k: v for k, v in model.convergence_["eig"].items()},
        # iterations of each block-CG application per language (start, eigen-solve, Φ in order)
        "cg_iterations": {lang: b["cg_iterations"] for lang, b in model.convergence_["blocks"].items()},
        "cg_krylov": {lang: sorted(set(b.get("cg_krylov", []))) for lang, b in model.convergence_["blocks"].items()},
        "fit_info": {k: v for k, v in model.fit_info_.items() if isinstance(v, (int, float, str, dict))},
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "loadavg": os.getloadavg(),
    }
    print(json.dumps(out, indent=1))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return out


if __name__ == "__main__":
    main()
