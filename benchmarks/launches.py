"""How many array operations a GPU fit makes, counted without a GPU.

    python -m benchmarks.launches [--toy] [--fused] [--out DIR]

A fit of the array path (:mod:`linxling.xp`) on CuPy makes one or more kernel launches per array
operation, and a small fit is bound by them (the GPU suite's verse fit: 0.33-0.40 s on an H100 or
H200 whatever the dtype; benchmarks/README.md, "The GPU suite"). The same code runs on NumPy, so
its operations can be counted here: :func:`count_cr5` runs :func:`linxling.xp.cr5.fit_cr5` on a
NumPy device whose arrays are an ``ndarray`` subclass that counts every ufunc (operators
included) and NumPy function through the ``__array_ufunc__`` / ``__array_function__`` protocols,
every element read or write by index, and every product of a sparse matrix, each by the stage
of the fit it falls in (the blocks' set-up, the other set-up, the eigen-solver, its
orthonormalisations, the CG solves).

``--fused`` counts the CG solves as :data:`linxling.xp.linalg.FUSED_CG` runs them on CuPy: the
operator's operations plus one per fused kernel (:func:`linxling.xp.linalg._cg_fused` with NumPy
stand-ins of the kernels, each counted once). A count is a proxy for the launches, not a time:
CuPy launches a few kernels for some operations (a reduction over a large array, a sparse
product) and none for a view.

The verse inputs are those of the GPU suite (``python -m benchmarks.gpu prepare`` writes them to
benchmarks/results/gpu_inputs/); ``--toy`` counts a small random problem instead (seconds).
Writes ``launches.json`` under ``--out`` (default benchmarks/results/launches/, git-ignored).
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

OUT = ROOT / "benchmarks" / "results" / "launches"


class _Counter:
    """Operations by (stage, kind); ``stage`` is a stack (the innermost stage counts)."""

    def __init__(self) -> None:
        self.counts: collections.Counter = collections.Counter()
        self.stage = ["setup"]

    def add(self, kind: str) -> None:
        self.counts[(self.stage[-1], kind)] += 1

    @contextlib.contextmanager
    def within(self, stage: str):
        self.stage.append(stage)
        try:
            yield
        finally:
            self.stage.pop()

    def by_stage(self) -> dict:
        out: dict = collections.defaultdict(dict)
        for (stage, kind), n in sorted(self.counts.items()):
            out[stage][kind] = n
        return {stage: {"total": sum(kinds.values()), "kinds": kinds} for stage, kinds in out.items()}


_COUNTER: _Counter | None = None


def _plain(x: Any) -> Any:
    if isinstance(x, Counted):
        return x.view(np.ndarray)
    if isinstance(x, (list, tuple)):
        return type(x)(_plain(y) for y in x)
    return x


def _counted(x: Any) -> Any:
    if type(x) is np.ndarray:
        return x.view(Counted)
    if isinstance(x, tuple):
        return tuple(_counted(y) for y in x)
    return x


class Counted(np.ndarray):
    """An ``ndarray`` that counts the operations on it (in the active :class:`_Counter`)."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if _COUNTER is not None:
            _COUNTER.add(f"{ufunc.__name__}" + ("" if method == "__call__" else f".{method}"))
        if "out" in kwargs:
            kwargs["out"] = _plain(kwargs["out"])
        return _counted(getattr(ufunc, method)(*_plain(inputs), **kwargs))

    def __array_function__(self, func, types, args, kwargs):
        if _COUNTER is not None:
            _COUNTER.add(f"np.{func.__name__}")
        return _counted(func(*_plain(args), **{k: _plain(v) for k, v in kwargs.items()}))

    def __getitem__(self, key):
        if _COUNTER is not None and not _is_view(key):
            _COUNTER.add("take (fancy index)")
        return super().__getitem__(_plain(key))

    def __setitem__(self, key, value):
        if _COUNTER is not None:
            _COUNTER.add("assign by index")
        return super().__setitem__(_plain(key), _plain(value))


def _is_view(key: Any) -> bool:
    """Whether indexing by ``key`` gives a view (no kernel on CuPy): slices, None, Ellipsis and ints."""
    keys = key if isinstance(key, tuple) else (key,)
    return all(k is None or k is Ellipsis or isinstance(k, (slice, int, np.integer)) for k in keys)


class CountedCSR(sp.csr_matrix):
    """A SciPy CSR matrix whose products with dense blocks, and ``multiply``, count once each."""

    def __matmul__(self, other):
        if _COUNTER is not None:
            _COUNTER.add("sparse product")
        return _counted(sp.csr_matrix(self) @ _plain(other))

    def multiply(self, other):
        if _COUNTER is not None:
            _COUNTER.add("sparse multiply")
        return sp.csr_matrix(self).multiply(_plain(other))

    def __rmatmul__(self, other):
        if _COUNTER is not None:
            _COUNTER.add("sparse product")
        return _counted(_plain(other) @ sp.csr_matrix(self))


def _counting_kernels(counter: _Counter) -> tuple:
    """:func:`linxling.xp.linalg._numpy_cg_kernels`, each call counted once and run uncounted."""
    from linxling.xp.linalg import _numpy_cg_kernels

    def wrap(name, f):
        def g(*args, **kwargs):
            counter.add(f"fused kernel {name}")
            global _COUNTER
            saved, _COUNTER = _COUNTER, None
            try:
                return f(*_plain(args), **kwargs)
            finally:
                _COUNTER = saved
        return g
    names = ("coldot", "alpha", "update", "beta", "direction")
    return tuple(wrap(n, f) for n, f in zip(names, _numpy_cg_kernels(), strict=True))


def count_cr5(blocks: list, labels: list, K: int, r: int, *, fused: bool = False, dtype: Any = np.float32,
              random_state: int = 0, dense_max: int | None = None) -> dict:
    """Array operations of :func:`linxling.xp.cr5.fit_cr5` on a counting NumPy device, by stage;
    with ``fused`` the CG solves as on CuPy with :data:`~linxling.xp.linalg.FUSED_CG`
    (``dense_max``: :func:`~linxling.xp.cr5.fit_cr5`'s, default its ``DENSE_MAX``)."""
    global _COUNTER
    import linxling.xp.cr5 as xcr5
    import linxling.xp.linalg as xl
    from linxling.xp import Device

    counter = _Counter()
    dev = Device("numpy")
    plain_put = dev.put

    def put(a, dtype=None):
        counter.add("transfer to the device")
        out = plain_put(a, dtype)
        if sp.issparse(out):
            return CountedCSR(out)
        return out.view(Counted) if isinstance(out, np.ndarray) else out
    dev.put = put                                                # type: ignore[method-assign]

    iterations: list[int] = []
    plain_cg, plain_block, plain_eig, plain_orth = (xcr5.cg_columns, xcr5._Block.__init__, xcr5.eig_subspace,
                                                    xcr5.orthonormalize)

    def cg(dev_, apply, B, diag, rtol, maxiter, X0=None):
        with counter.within("cg"):
            if not fused:
                res = plain_cg(dev_, apply, B, diag, rtol, maxiter, X0)
            else:       # cg_columns' fused branch, its kernels NumPy stand-ins counted once each
                res = xl._cg_fused(dev_, apply, *xl.cg_start(dev_, apply, B, diag, rtol, X0), maxiter,
                                   _counting_kernels(counter))
        iterations.append(int(res[1]))
        return res

    def staged(stage, f):
        def g(*args, **kwargs):
            with counter.within(stage):
                return f(*args, **kwargs)
        return g
    try:
        _COUNTER = counter
        xcr5.cg_columns = cg
        xcr5._Block.__init__ = staged("blocks' set-up", plain_block)      # type: ignore[method-assign]
        xcr5.eig_subspace = staged("eigen-solver", plain_eig)
        xcr5.orthonormalize = staged("orthonormalisation", plain_orth)
        t = time.perf_counter()
        out = xcr5.fit_cr5(dev, blocks, labels, K, r, 1.0, dtype, random_state=random_state, dense_max=dense_max)
        seconds = time.perf_counter() - t
    finally:
        _COUNTER = None
        xcr5.cg_columns, xcr5.eig_subspace, xcr5.orthonormalize = plain_cg, plain_eig, plain_orth
        xcr5._Block.__init__ = plain_block                       # type: ignore[method-assign]
    stages = counter.by_stage()
    return {"operations": sum(s["total"] for s in stages.values()), "stages": stages,
            "cg_solves": len(iterations), "cg_iterations": sum(iterations), "fused_cg": fused,
            "numpy_fit_s": seconds, "methods": out["info"]["methods"],
            "singular_values": np.asarray(out["singular_values"]).tolist()}


#: the toy problem's blocks have 120 and 400 features: the second is solved by CG
TOY_DENSE_MAX = 200


def _toy() -> tuple[list, list, int, int]:
    rng = np.random.default_rng(0)
    K, blocks, labels = 300, [], []
    for p in (120, 400):
        X = sp.random(K, p, density=0.05, random_state=rng, format="csr", dtype=np.float64)
        blocks.append(X)
        labels.append(np.arange(K))
    return blocks, labels, K, 10


def _verse(path: Path) -> tuple[list, list, int, int]:
    from benchmarks.gpu import _verse_inputs
    blocks, concepts, _, _, _ = _verse_inputs(path)
    langs = list(blocks)
    classes = np.unique(np.concatenate([concepts[lang] for lang in langs]))
    return ([blocks[lang] for lang in langs], [np.searchsorted(classes, concepts[lang]) for lang in langs],
            classes.size, 100)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.launches", description=__doc__.split("\n")[0])
    ap.add_argument("--toy", action="store_true", help="a small random problem instead of the verse inputs")
    ap.add_argument("--fused", action="store_true", help="count the CG as FUSED_CG runs it on CuPy")
    ap.add_argument("--inputs", default=str(ROOT / "benchmarks" / "results" / "gpu_inputs"))
    ap.add_argument("--out", default=str(OUT))
    from benchmarks._cli import show_defaults
    args = show_defaults(ap).parse_args(argv)
    if args.toy:
        problem = _toy()
    else:
        path = Path(args.inputs)
        if not (path / "verse.npz").exists():
            print(f"no {path / 'verse.npz'}: run `python -m benchmarks.gpu prepare` first, or pass --toy",
                  file=sys.stderr)
            return 2
        problem = _verse(path)
    res = count_cr5(*problem, fused=args.fused, dense_max=TOY_DENSE_MAX if args.toy else None)
    print(f"Cr5 on the array path ({'toy' if args.toy else 'verse'} inputs, r = {problem[3]}, "
          f"{'fused CG' if args.fused else 'CG as array operations'}): {res['operations']:,} operations; "
          f"{res['cg_iterations']} CG iterations in {res['cg_solves']} solves")
    for stage, s in sorted(res["stages"].items(), key=lambda kv: -kv[1]["total"]):
        top = sorted(s["kinds"].items(), key=lambda kv: -kv[1])[:6]
        print(f"  {stage:20s} {s['total']:6d}  " + ", ".join(f"{k} {n}" for k, n in top))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = "launches_fused.json" if args.fused else "launches.json"
    (out / name).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
