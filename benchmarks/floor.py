"""The machine's floor (issue #30, item 5): a fit's time as a multiple of what the hardware allows.

    python -m benchmarks.floor [--part machine|wmf|cr5|all] [--quick] [--out DIR] [--cache FILE]

1. **The machine, measured in the same run**: sustainable memory bandwidth with STREAM-style
   kernels (numba, parallel over the threads the fits use, arrays 4x the last-level cache, best
   of several repeats; triad ``a = b + s c`` and add count 24 bytes per float64 element, copy and
   scale 16) and the GEMM rate (float64 and float32, ``n x k`` times ``k x k`` for k = 100 and
   300 and a square 2048 product; GFLOP/s, with all threads and with one: the fits limit BLAS to
   one thread, numba uses the cores). The CSR SpMM rate is *not* part of the floor: it is what
   the floor is compared with. One such rate is measured all the same, to split the gap: the
   row kernel with every gathered row from the cache (:func:`sparse_cached_rate`, at the fit's
   widths), the best a gather-based sparse product reaches here; and the cache's read bandwidth
   at a tile's size (:func:`cache_read_bandwidth`), the most any gather-based product can read
   (and, for comparison, a loop that only sums uniformly random rows of a tile: :func:`gather_rate`).
2. **The work a fit does, counted from the algorithm** (not from timing):

   - WMF, the benchmark of ``benchmarks/bench_wmf.py`` part (a) (binary 200,000 x 50,000, Zipf
     columns, 20 nonzeros per row, k = 100, 5 iterations, CG with ``cg_steps = 3``): the Gram
     GEMMs, per half-step the CG kernel of :mod:`linxling.kernels.als` counted operation by
     operation (:func:`wmf_half_step_flops`; tests/test_floor.py checks it against an
     instrumented NumPy CG), and the loss term.
   - Cr5 at K = 485,000 (``benchmarks.wiki_synth``, r = 300, float32, ``memory_budget="12G"``, as
     ``benchmarks.cr5_memory``): the fit runs with counters on its operators
     (:class:`Cr5Counter`): every product with Ĉ and every inner block solve is recorded with its
     stage, columns and, for block CG, the active width of every iteration.

   Each part's floor is a roofline, ``max(flops / GEMM rate, bytes / triad bandwidth)``; the
   fit's floor is their sum. Bytes are the DRAM traffic the part cannot avoid (see
   :func:`wmf_iteration_parts` for how gathered factor rows are counted).
   For Cr5 the sparse row kernels are timed too (every call: nonzeros, width, seconds), and the
   gap from the floor to the fit is split in steps: the sparse products at the cache's read
   bandwidth (a row of the dense operand per nonzero), at the cache-resident kernel rate, then as
   measured, then everything else.
3. Writes ``floor.json`` and ``floor.md`` (a table shaped for benchmarks/README.md, "### The
   machine's floor") under ``--out`` (default benchmarks/results/floor/, git-ignored).

``--quick`` runs small sizes (seconds; for the tests and to exercise the code). The real
measurement: ``python -m benchmarks.floor --part all --cache /tmp/wiki485k32.npz`` (about 9-12 min
on an idle 2-core machine: machine ~30 s, WMF ~1.5 min, Cr5 ~7 min plus 2.5 min to generate the
corpus the first time).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("LINXLING_NO_PROGRESS", "1")

OUT = ROOT / "benchmarks" / "results" / "floor"


# =============================================================================== the machine
def llc_bytes() -> int:
    """Size of the last-level cache (Linux sysfs: the highest cache index of cpu0); 32 MiB if unknown."""
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    best = 0
    for idx in sorted(base.glob("index*")) if base.exists() else []:
        try:
            txt = (idx / "size").read_text().strip()
        except OSError:
            continue
        mult = {"K": 2**10, "M": 2**20, "G": 2**30}.get(txt[-1:].upper(), 1)
        try:
            size = int(txt[:-1] if mult != 1 else txt) * mult
        except ValueError:
            continue
        best = max(best, size)
    return best or 32 * 2**20


def _kernels():
    from numba import njit, prange

    @njit(parallel=True, cache=True)
    def triad(a, b, c, s):
        for i in prange(a.shape[0]):
            a[i] = b[i] + s * c[i]

    @njit(parallel=True, cache=True)
    def copy(a, b):
        for i in prange(a.shape[0]):
            a[i] = b[i]

    @njit(parallel=True, cache=True)
    def scale(a, b, s):
        for i in prange(a.shape[0]):
            a[i] = s * b[i]

    @njit(parallel=True, cache=True)
    def add(a, b, c):
        for i in prange(a.shape[0]):
            a[i] = b[i] + c[i]

    @njit(parallel=True, fastmath=True, cache=True)
    def read(a, reps, out):
        # each thread sums its own row of a, reps times (fastmath: vector accumulators)
        for t in prange(a.shape[0]):
            acc = np.float32(0.0)
            for _ in range(reps):
                for j in range(a.shape[1]):
                    acc += a[t, j]
            out[t] = acc

    @njit(parallel=True, fastmath=True, cache=True)
    def gather(V, idx, acc):
        # thread t sums the rows V[idx[k]] of its share of idx into acc[t], four rows per pass
        nt = acc.shape[0]
        n = idx.shape[0]
        for t in prange(nt):
            k0 = t * n // nt
            k1 = k0 + ((t + 1) * n // nt - k0) // 4 * 4
            for k in range(k0, k1, 4):
                r0, r1, r2, r3 = idx[k], idx[k + 1], idx[k + 2], idx[k + 3]
                for j in range(V.shape[1]):
                    acc[t, j] += (V[r0, j] + V[r1, j]) + (V[r2, j] + V[r3, j])

    return triad, copy, scale, add, read, gather


_KERNELS = None


def stream_kernels():
    """The numba STREAM kernels ``(triad, copy, scale, add, read, gather)`` (compiled on first use)."""
    global _KERNELS
    if _KERNELS is None:
        _KERNELS = _kernels()
    return _KERNELS


def triad(a: np.ndarray, b: np.ndarray, c: np.ndarray, s: float) -> np.ndarray:
    """``a[i] = b[i] + s * c[i]`` with the parallel numba kernel (in place into ``a``)."""
    stream_kernels()[0](a, b, c, a.dtype.type(s))
    return a


def best_seconds(fn, repeats: int, warmup: bool = True) -> float:
    """The shortest of ``repeats`` timed calls of ``fn``, after one untimed call (compilation,
    first touch of the memory) unless ``warmup`` is False."""
    if warmup:
        fn()
    best = math.inf
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def stream_bandwidth(n: int | None = None, repeats: int = 10) -> dict:
    """Best-of-``repeats`` bandwidth (GB/s, 1e9 bytes) of the STREAM kernels on float64 arrays of
    ``n`` elements (default: each array 4x the last-level cache), over numba's threads."""
    import numba
    tri, cp, sc, ad = stream_kernels()[:4]
    if n is None:
        n = 4 * llc_bytes() // 8
    a = np.zeros(n)
    b = np.full(n, 1.0)
    c = np.full(n, 2.0)
    s = 3.0
    runs = {"copy": (lambda: cp(a, b), 16), "scale": (lambda: sc(a, b, s), 16),
            "add": (lambda: ad(a, b, c), 24), "triad": (lambda: tri(a, b, c, s), 24)}
    out = {"elements": int(n), "array_bytes": int(8 * n), "threads": numba.get_num_threads(),
           "repeats": repeats}
    for name, (fn, per) in runs.items():
        out[f"{name}_GBps"] = per * n / best_seconds(fn, repeats) / 1e9
    if not np.allclose(a[:5], b[:5] + s * c[:5]):     # the last kernel run was the triad
        raise AssertionError("triad kernel computed a wrong array")
    return out


def cache_read_bandwidth(nbytes: int, repeats: int = 5, total: float = 2e9) -> dict:
    """Best-of-``repeats`` read bandwidth (GB/s, 1e9 bytes) of a working set of ``nbytes`` float32
    held in the cache: each numba thread sums its own ``nbytes / threads`` slice again and again
    (about ``total`` bytes read per timed call). At a cache tile's size (:func:`linxling.kernels.spmm.tile_bytes`)
    this is the most a gather-based sparse product can read from the cache, as each nonzero reads
    one contiguous row of the dense operand: the bound of the step "the sparse products at the
    cache's read bandwidth" (not part of the floor)."""
    import numba
    read = stream_kernels()[4]
    threads = numba.get_num_threads()
    n = max(16, int(nbytes) // (4 * threads))
    a = np.ones((threads, n), dtype=np.float32)
    out = np.zeros(threads, dtype=np.float32)
    reps = max(1, int(total // (a.nbytes)))
    best = best_seconds(lambda: read(a, reps, out), repeats)
    if n * reps < (1 << 24) and not np.all(out == np.float32(n * reps)):   # checked where exact
        raise AssertionError("read kernel computed a wrong sum")
    return {"bytes": int(a.nbytes), "threads": threads, "GBps": a.nbytes * reps / best / 1e9}


def gather_rate(width: int, nbytes: int | None = None, repeats: int = 3, total: float = 2e9) -> dict:
    """Best-of-``repeats`` rate (GB/s of gathered rows) of a loop that only **sums random rows**
    of a float32 operand of ``nbytes`` held in the cache (default: one cache tile at this width,
    :func:`linxling.kernels.spmm.tile_rows`), four rows per pass as the sparse row kernels take
    their nonzeros, into one accumulator row per thread: the access pattern of a sparse product
    with its operand in the cache, without its multiplications or its output, and without the
    order a document's sorted columns give its gathers. Not part of the floor, nor a step of the
    Cr5 table: on the development machine it ran slower than the row kernel itself
    (:func:`sparse_cached_rate`), so it bounds nothing; it is reported for comparison."""
    import numba

    from linxling.kernels.spmm import tile_rows
    gather = stream_kernels()[5]
    q = tile_rows(1 << 40, width, 4) if nbytes is None else max(4, int(nbytes) // (4 * width))
    rng = np.random.default_rng(0)
    V = np.ones((q, width), dtype=np.float32)
    threads = numba.get_num_threads()
    per = 4 * threads           # every thread's share a multiple of four: no gather left out
    idx = rng.integers(0, q, size=max(16 * per, int(total // (4 * width)) // per * per)).astype(np.int32)
    acc = np.zeros((threads, width), dtype=np.float32)
    gather(V, idx[:64], acc)
    best = best_seconds(lambda: gather(V, idx, acc), repeats, warmup=False)
    return {"width": int(width), "operand_MiB": V.nbytes / 2**20, "gathers": int(idx.size),
            "GBps": idx.size * width * 4 / best / 1e9}


def gemm_rate(m: int, k: int, n: int, dtype, repeats: int = 3, threads: int | None = None) -> float:
    """Best-of-``repeats`` GFLOP/s (2 m k n flops) of ``(m, k) @ (k, n)`` in ``dtype`` with
    ``threads`` BLAS threads (None: BLAS's own setting)."""
    import threadpoolctl
    rng = np.random.default_rng(0)
    A = rng.standard_normal((m, k)).astype(dtype)
    B = rng.standard_normal((k, n)).astype(dtype)
    C = np.empty((m, n), dtype=dtype)
    ctx = threadpoolctl.threadpool_limits(threads, "blas") if threads else contextlib.nullcontext()
    best = math.inf
    with ctx:
        np.matmul(A, B, out=C)
        for _ in range(repeats):
            t = time.perf_counter()
            np.matmul(A, B, out=C)
            best = min(best, time.perf_counter() - t)
    return 2.0 * m * k * n / best / 1e9


def measure_machine(quick: bool = False) -> dict:
    """STREAM bandwidth and GEMM rates of this machine, now, with its load average around them."""
    import numba

    from benchmarks._machine import cpu_label
    load0 = os.getloadavg()
    cores = numba.get_num_threads()
    llc = llc_bytes()
    t0 = time.perf_counter()
    st = stream_bandwidth(n=(1 << 20) if quick else None, repeats=3 if quick else 10)
    if cores > 1:                         # one thread too: on a loaded machine it can be the faster
        numba.set_num_threads(1)
        try:
            st1 = stream_bandwidth(n=st["elements"], repeats=3 if quick else 10)
        finally:
            numba.set_num_threads(cores)
        st["one_thread"] = {k: v for k, v in st1.items() if k.endswith("GBps")}
    rows = 20_000 if quick else 200_000
    shapes = ([(rows, 100, 100), (rows, 300, 300), (512 if quick else 2048,) * 3])
    gemm = []
    for dt in (np.float64, np.float32):
        for m, k, n in shapes:
            for th in sorted({1, cores}):
                gemm.append({"dtype": np.dtype(dt).name, "m": m, "k": k, "n": n, "threads": th,
                             "GFLOPs": gemm_rate(m, k, n, dt, repeats=2 if quick else 3, threads=th)})
    sparse = [sparse_cached_rate(w, np.float32, n_rows=20_000 if quick else 200_000, repeats=2 if quick else 3)
              for w in SPARSE_WIDTHS]
    from linxling.kernels.spmm import tile_bytes
    cache_read = [cache_read_bandwidth(nb, repeats=2 if quick else 5, total=2e8 if quick else 2e9)
                  for nb in (tile_bytes() // 2, tile_bytes())]
    gather = [gather_rate(w, repeats=2 if quick else 3, total=2e8 if quick else 2e9) for w in SPARSE_WIDTHS]
    load1 = os.getloadavg()
    rates = {}
    for dt in ("float64", "float32"):
        rows_dt = [g for g in gemm if g["dtype"] == dt]
        rates[f"gemm_{dt}_GFLOPs"] = max(g["GFLOPs"] for g in rows_dt)   # the best the cores gave
        rates[f"gemm_{dt}_1thread_GFLOPs"] = max(g["GFLOPs"] for g in rows_dt if g["threads"] == 1)
    return {"cpu": cpu_label(), "cores": os.cpu_count(), "threads": cores, "llc_bytes": llc,
            "loadavg_before": load0, "loadavg_after": load1, "seconds": time.perf_counter() - t0,
            "stream": st, "gemm": gemm, "sparse_cached": sparse, "cache_read": cache_read,
            "gather": gather,
            # the slower of the two tile sizes: the wide rows' tile, most of the fit's gathers
            "cache_read_GBps": min(c["GBps"] for c in cache_read), **rates,
            "triad_GBps": max(st["triad_GBps"], st.get("one_thread", {}).get("triad_GBps", 0.0))}


# the widths (dense columns) of the Cr5 fit's sparse products: its inner block CG's chunks and
# its eigen-solver block
SPARSE_WIDTHS = (16, 64, 128, 360)


def sparse_cached_rate(width: int, dtype=np.float32, n_rows: int = 200_000, per_row: int = 170,
                       repeats: int = 3, operand_bytes: int | None = None) -> dict:
    """GFLOP/s (2 flops per nonzero and column) of linxling's CSR x dense row kernel
    (:func:`linxling.kernels.spmm.tiled_rows_matmat`) when **every gathered row comes from the
    cache**: a random CSR of ``n_rows`` rows with ``per_row`` sorted nonzeros each (Cr5's
    Wikipedia-shaped blocks have about 170), whose columns index a dense operand of
    ``operand_bytes`` (default: one cache tile at this width, :func:`linxling.kernels.spmm.tile_rows`), so
    the product runs in one tile with no repeated pass over its output. It is the best case of
    the tiled kernels on this machine; the fit's products gather from operands of hundreds of MB
    in many tiles, and the floor charges them at the GEMM rate. Not part of the floor: the
    step between the two in the table of where a fit's time goes."""
    import scipy.sparse as sp

    from linxling.kernels.spmm import tile_rows, tiled_rows_matmat
    dt = np.dtype(dtype)
    if operand_bytes is None:
        q = tile_rows(1 << 40, width, dt.itemsize)
    else:
        q = max(per_row, int(operand_bytes) // (width * dt.itemsize))
    rng = np.random.default_rng(0)
    cols = np.sort(rng.integers(0, q, size=(n_rows, per_row)), axis=1).astype(np.int32).ravel()
    data = rng.random(n_rows * per_row).astype(dt)
    indptr = np.arange(0, n_rows * per_row + 1, per_row, dtype=np.int64)
    X = sp.csr_matrix((data, cols, indptr), shape=(n_rows, q))
    V = rng.standard_normal((q, width)).astype(dt)
    out = np.empty((n_rows, width), dtype=dt)

    best = best_seconds(lambda: tiled_rows_matmat(X.indptr[:-1], X.indptr[1:], X.indices, X.data, V, out,
                                                  width=q), repeats)
    ref = X[:64] @ V
    if not np.allclose(out[:64], ref, rtol=1e-4, atol=1e-3):
        raise AssertionError("the row kernel computed a wrong product")
    return {"width": int(width), "dtype": dt.name, "rows": int(n_rows), "per_row": int(per_row),
            "operand_rows": int(q), "operand_MiB": q * width * dt.itemsize / 2**20,
            "seconds": best, "GFLOPs": 2.0 * X.nnz * width / best / 1e9}


def nearest_width(rates: list, width: int) -> dict:
    """The measured cache-resident CSR rate (:func:`sparse_cached_rate`) at the width nearest
    ``width`` (by ratio)."""
    return min(rates, key=lambda r: abs(math.log(max(1, width) / r["width"])))


# =============================================================================== rooflines
def roofline(part: dict, rates: dict, dtype: str) -> float:
    """Seconds a part needs at least: ``max(flops / GEMM rate, bytes / triad bandwidth)``."""
    flops = part.get("flops", 0.0) / (rates[f"gemm_{dtype}_GFLOPs"] * 1e9)
    mem = part.get("bytes", 0.0) / (rates["triad_GBps"] * 1e9)
    return max(flops, mem)


def floor_table(parts: dict, rates: dict, dtype: str) -> dict:
    """Each part's floor (s) and bound (``"compute"`` / ``"memory"``), and their sum."""
    out = {}
    for name, p in parts.items():
        f = p.get("flops", 0.0) / (rates[f"gemm_{dtype}_GFLOPs"] * 1e9)
        m = p.get("bytes", 0.0) / (rates["triad_GBps"] * 1e9)
        out[name] = {"floor_s": max(f, m), "bound": "compute" if f >= m else "memory",
                     "compute_s": f, "memory_s": m}
    out["total"] = {"floor_s": sum(v["floor_s"] for v in out.values())}
    return out


# =============================================================================== WMF
def wmf_half_step_flops(n_nonempty: int, nnz: int, k: int, cg_steps: int, rotated: bool = False,
                        n_fixed: int = 0) -> int:
    """Floating-point operations of one CG half-step of :func:`linxling.kernels.als._cg_chunk`,
    every row staying active for all ``cg_steps`` (as at a random start; a row that converges
    early does less), counted per operation: a multiply-add is 2, a negation 0.

    Per non-empty row: the initial ``x G`` (2k²), ``r·r`` (2k) and, per step, ``G p`` (2k²),
    ``p·Ap`` (2k), α and β (1 + 1), the updates of x, r and p (2k each) and ``r·r`` (2k), and the
    objective term ``x·(r + b)`` (3k). Per nonzero: the initial residual (``y·x`` 2k, ``x_ui −
    dw t`` 2, the updates of r and b 2k each) and per step ``y·p`` (2k), ``t dw`` (1) and the
    update of Ap (2k).

    ``rotated``: the half-step runs in the Gram's eigenbasis
    (:func:`linxling.kernels.als.eigen_basis_pays`): the fixed factor's ``n_fixed`` rows are
    rotated once (2k² each), each row's warm start is rotated in and its solution back (2k²
    each), and the Gram's products become diagonal scalings (k instead of 2k²). The k × k
    eigendecomposition (O(k³) once per half-step) is not counted."""
    gram_row = k if rotated else 2 * k * k
    per_row = gram_row + 2 * k + cg_steps * (gram_row + 10 * k + 2) + 3 * k
    if rotated:
        per_row += 4 * k * k
    per_nnz = 6 * k + 2 + cg_steps * (4 * k + 1)
    return int(n_nonempty * per_row + nnz * per_nnz + (2 * k * k * n_fixed if rotated else 0))


def _hot_fraction(counts: np.ndarray, row_bytes: int, cache: int) -> float:
    """Fraction of the gathers that an ideal static cache of ``cache`` bytes, holding the most
    often gathered rows, would serve."""
    if counts.sum() == 0:
        return 1.0
    fit = int(cache // max(row_bytes, 1))
    top = np.sort(counts)[::-1][:fit]
    return float(top.sum() / counts.sum())


def wmf_iteration_parts(X, k: int, cg_steps: int, dtype, llc: int) -> dict:
    """Flops and DRAM bytes of one WMF ALS iteration (in memory, one language) on CSR ``X``
    (n, m), per part, in the order :func:`linxling.models._als.run_als` runs them.

    Bytes: each half-step reads its CSR once (int64 row pointers, int32 indices, data in the
    factor dtype), writes and reads ``dw`` (m), reads the warm start and writes the solution,
    and reads the fixed factor Y once. The factor rows the kernel *gathers* per nonzero are
    DRAM traffic unless cached: a row's CG steps re-gather the same rows of a batch of 32 rows
    (32 x nnz_row x k x itemsize, 512 KB at k = 100 in float64) from L2 or L3, so only the first gather
    per nonzero can miss; of those, the ones an ideal last-level cache holding the most often
    gathered rows of Y would serve are counted as hits (V, 50,000 x 100, is 40 MB in float64 /
    20 MB in float32 against a 32 MB LLC, and its Zipf columns put most gathers on few rows;
    E, 200,000 x 100, is 80-160 MB and every sentence is gathered by ~20 words: mostly misses),
    the rest as 64-byte-rounded rows from DRAM (``gather_bytes``). ``bytes`` includes them;
    ``compulsory_bytes`` is the traffic with every gather a hit (the bound if Y fitted the LLC).

    The cols half-step's hot rows (the frequent words of :func:`linxling.kernels.als.hot_rows`,
    as the in-memory fit picks them) gather nothing: their CG walks X's rows, reading X's CSR
    and the rows of E with a hot nonzero in order once per pass (1 + cg_steps passes), counted
    in ``push_bytes`` (part of ``bytes``); the other words' nonzeros gather as above. The flops
    are the same (the threads' private sums, T·H·k additions a pass, are not counted: 0.01 % on
    the benchmark). A half-step that runs in its Gram's eigenbasis (``eigenbasis``; the sentence
    half-step, :func:`linxling.kernels.als.eigen_basis_pays`) counts the rotations' flops and
    the rotated factor's write and read instead of the Gram products."""
    import scipy.sparse as sp

    from linxling.kernels.als import eigen_basis_pays, hot_rows
    X = sp.csr_matrix(X)
    n, m = X.shape
    item = np.dtype(dtype).itemsize
    nnz = int(X.nnz)
    row_bytes = -(-k * item // 64) * 64
    col_counts = np.bincount(X.indices, minlength=m)          # gathers of V rows (rows half-step)
    row_counts = np.diff(X.indptr)                            # gathers of E rows (cols half-step)
    parts = {}

    def half(name, n_out, nnz_out, n_fixed, nonempty, gathered_counts, push_bytes=0):
        rotated = eigen_basis_pays(n_fixed, n_out, cg_steps)
        csr = 8 * (n_out + 1) + (4 + item) * nnz_out
        compulsory = csr + 2 * n_out * k * item + n_fixed * k * item + 2 * n_fixed * item + k * k * item
        if rotated:                     # the fixed factor read and its rotation written
            compulsory += 2 * n_fixed * k * item
        hot = _hot_fraction(gathered_counts, row_bytes, llc)
        gather = (1.0 - hot) * int(gathered_counts.sum()) * row_bytes
        flops = wmf_half_step_flops(nonempty, nnz_out, k, cg_steps, rotated, n_fixed)
        parts[name] = {"flops": flops + 2 * nnz_out, "eigenbasis": rotated,
                       "compulsory_bytes": compulsory, "gather_bytes": gather, "llc_hit_fraction": hot,
                       "push_bytes": push_bytes, "bytes": compulsory + gather + push_bytes}

    def gram(name, rows):
        parts[name] = {"flops": 2 * rows * k * k + k * k + k, "bytes": rows * k * item + k * k * item,
                       "compulsory_bytes": rows * k * item + k * k * item}

    gram("gram V (VᵀV)", m)
    half("rows half-step (E)", n, nnz, m, int(np.count_nonzero(row_counts)), col_counts)
    gram("gram E (EᵀE)", n)
    words = hot_rows(col_counts, k, dtype)
    if words is None:
        half("cols half-step (V)", m, nnz, n, int(np.count_nonzero(col_counts)), row_counts)
    else:
        is_hot = np.zeros(m, dtype=bool)
        is_hot[words] = True
        sentence = np.repeat(np.arange(n), row_counts)
        pushed = is_hot[X.indices]
        touched = int(np.count_nonzero(np.bincount(sentence[pushed], minlength=n)))
        push = (1 + cg_steps) * (8 * (n + 1) + (4 + item) * nnz + touched * k * item)
        half("cols half-step (V)", m, nnz, n, int(np.count_nonzero(col_counts)),
             np.bincount(sentence[~pushed], minlength=n), push)
    parts["loss (λ‖E‖²)"] = {"flops": 2 * n * k, "bytes": n * k * item, "compulsory_bytes": n * k * item}
    return parts


def _wmf_problem(quick: bool):
    from benchmarks.bench_wmf import zipf_binary
    n, m, nnz, k, n_iter = (20_000, 5_000, 20, 32, 3) if quick else (200_000, 50_000, 20, 100, 5)
    X = zipf_binary(n, m, nnz, seed=0)
    return X, k, n_iter


def _time_wmf(X, XT, E0, V0, k: int, n_iter: int, dtype, w_m: float, lam: float, steps: int,
              quick: bool) -> tuple[list, dict]:
    """The fit's seconds per iteration and each part's best time alone, BLAS one thread (as the fit)."""
    import threadpoolctl

    from linxling.kernels import als
    from linxling.models.wmf import WMF
    reps = 2 if quick else 3

    def best(fn):
        return best_seconds(fn, reps, warmup=False)

    with threadpoolctl.threadpool_limits(1, "blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # the quick size warns that alpha = 20 is large for it
        WMF(n_components=k, max_iter=1, solver="cg", dtype=dtype).fit(X[:200])   # compile
        stamps: list[float] = []
        model = WMF(n_components=k, alpha=lam, missing_weight=w_m, max_iter=n_iter, solver="cg",
                    cg_steps=steps, dtype=dtype, show_progress=False,
                    callback=lambda mdl, it, loss: stamps.append(time.perf_counter()))
        stamps.append(time.perf_counter())
        model.fit(X, init_components=V0.T.astype(dtype), init_embedding=E0.astype(dtype))
        per_iter = np.diff(stamps).tolist()
        lam_eff = float(model.alpha_)
        # each part alone, on the fit's final factors (same shapes, same kernels)
        E = np.ascontiguousarray(model.embedding_, dtype=dtype)
        V = np.ascontiguousarray(model.components_.T, dtype=dtype)
        pr, pc = als._csr_parts(X, dtype), als._csr_parts(XT, dtype)
        # the words' half-step as the fit runs it: its frequent words pushed from X's rows
        # (linxling.models._als makes the same plan); without it this part read 0.224 s against
        # the fit's 0.19 s (float32, 2026-11-29), the parts summing past the fit
        hot = als.hot_plan(pr, 0, np.diff(pc[0]), k, dtype)
        Gv, Ge = als.gram(V, w_m, lam_eff), als.gram(E, w_m, lam_eff)
        Ew, Vw = E.copy(), V.copy()
        kw = {"missing_weight": w_m, "regularization": lam_eff, "solver": "cg", "cg_steps": steps,
              "return_objective": True}
        parts_t = {
            "gram V (VᵀV)": best(lambda: als.gram(V, w_m, lam_eff)),
            "rows half-step (E)": best(lambda: als.als_half_step(None, V, Ew, parts=pr, gram_matrix=Gv, **kw)),
            "gram E (EᵀE)": best(lambda: als.gram(E, w_m, lam_eff)),
            "cols half-step (V)": best(lambda: als.als_half_step(None, E, Vw, parts=pc, gram_matrix=Ge, hot=hot,
                                                                 **kw)),
            "loss (λ‖E‖²)": best(lambda: float(np.dot(E.reshape(-1), E.reshape(-1)))),
        }
    return per_iter, parts_t


def measure_wmf(rates: dict, quick: bool = False, dtypes=("float32", "float64")) -> dict:
    """Counts, floors and measured times of the WMF benchmark (bench_wmf part (a)): the fit's time
    per iteration (WMF(...).fit with the benchmark's parameters, median of the iterations after
    the first) and each part timed alone with the kernels the fit calls."""
    X, k, n_iter = _wmf_problem(quick)
    w_m, lam, steps = 0.01, 20.0, 3
    rng = np.random.default_rng(1)
    E0 = rng.random((X.shape[0], k)) * 0.01
    V0 = rng.random((X.shape[1], k)) * 0.01
    XT = X.T.tocsr()
    out = {"shape": list(X.shape), "nnz": int(X.nnz), "k": k, "iterations": n_iter, "cg_steps": steps,
           "missing_weight": w_m, "lambda": lam, "runs": []}
    for dt in dtypes:
        dtype = np.dtype(dt)
        load0 = os.getloadavg()
        per_iter, parts_t = _time_wmf(X, XT, E0, V0, k, n_iter, dtype, w_m, lam, steps, quick)
        load1 = os.getloadavg()
        counts = wmf_iteration_parts(X, k, steps, dtype, llc=rates.get("llc_bytes", llc_bytes()))
        floors = floor_table(counts, rates, dtype.name)
        compulsory = floor_table({kk: {"flops": v["flops"], "bytes": v["compulsory_bytes"]}
                                  for kk, v in counts.items()}, rates, dtype.name)
        fit_iter = float(np.median(per_iter[1:])) if len(per_iter) > 1 else float(per_iter[0])
        out["runs"].append({
            "dtype": dtype.name, "fit_seconds_per_iteration": per_iter, "fit_median_s": fit_iter,
            "parts": counts, "floors": floors, "floor_s": floors["total"]["floor_s"],
            "floor_compulsory_s": compulsory["total"]["floor_s"],
            "part_seconds": parts_t, "parts_sum_s": sum(parts_t.values()),
            "multiple_of_floor": fit_iter / floors["total"]["floor_s"],
            "multiple_of_compulsory_floor": fit_iter / compulsory["total"]["floor_s"],
            "loadavg_before": load0, "loadavg_after": load1})
    return out


# =============================================================================== Cr5
class Cr5Counter:
    """Counts what a Cr5 fit computes, while it runs.

    Installed around ``model.fit_matrices`` (``with Cr5Counter(model) as cnt: model.fit_matrices(...)``):
    the model's stage methods are wrapped to know the stage (``factor``, ``start``, ``eig``, ``phi``,
    ``map``), :class:`~linxling.operators.CrossCovariance` products and
    :meth:`~linxling.operators.GramBlockInverse.solve` are wrapped (class attributes, restored
    on exit) to record each call: stage, columns, seconds, and for the inner solves the method,
    the iterations and the active width of each block-CG iteration."""

    def __init__(self, model) -> None:
        self.model = model
        self.stage = "setup"
        self.products: list[dict] = []     # Ĉ / Ĉᵀ applications
        self.solves: list[dict] = []       # block inverse applications
        self.problem = None
        self.stage_seconds: dict[str, float] = {}
        self.kernels: list[dict] = []      # every CSR x dense kernel call: stage, nonzeros, width, seconds

    def _set(self, stage):
        self.stage = stage

    def __enter__(self):
        from linxling.operators import crosscov, gram
        self._saved = []
        cnt = self
        m = self.model

        def wrap_method(name, stage, after=None):
            orig = getattr(m, name)

            def w(*a, **kw):
                prev = cnt.stage
                cnt.stage = stage
                t = time.perf_counter()
                res = orig(*a, **kw)
                cnt.stage_seconds[stage] = cnt.stage_seconds.get(stage, 0.0) + time.perf_counter() - t
                if after is not None:
                    after(res)
                if stage in ("factor", "setup"):
                    cnt.stage = prev
                return res
            setattr(m, name, w)

        def keep_problem(p):
            cnt.problem = p
        wrap_method("_set_up_problem", "setup", keep_problem)
        wrap_method("_factor_gram", "factor")
        wrap_method("_phi_star", "phi")
        wrap_method("_orthonormal_map", "map")
        orig_top = m._top_eigenvectors

        def top(*a, **kw):
            cnt.stage = "start"           # the start runs first inside, then eigsh (see below)
            return orig_top(*a, **kw)
        m._top_eigenvectors = top

        import linxling.models.cr5 as cr5mod
        orig_eigsh = cr5mod.eigsh

        def eigsh(*a, **kw):
            cnt.stage = "eig"
            return orig_eigsh(*a, **kw)
        self._saved.append((cr5mod, "eigsh", orig_eigsh))
        cr5mod.eigsh = eigsh

        CC = crosscov.CrossCovariance
        for name in ("matmat", "rmatmat"):
            orig = getattr(CC, name)

            def w(this, V, __orig=orig, __name=name):
                t = time.perf_counter()
                res = __orig(this, V)
                cnt.products.append({"stage": cnt.stage, "direction": __name, "columns": int(np.shape(V)[1]),
                                     "dtype": np.dtype(this.dtype).name, "seconds": time.perf_counter() - t})
                return res
            self._saved.append((CC, name, CC.__dict__.get(name)))
            setattr(CC, name, w)

        # the sparse row kernels themselves (numba dispatchers looked up in the module's globals
        # by their Python wrappers): nonzeros, width and seconds of every call
        from linxling.kernels import spmm
        for kname, v_arg in (("_tiled_rows", 4), ("_tiled_rows_mapped", 5), ("_rows_matmat", 5),
                             ("_csr_rmatmat", 3)):
            korig = getattr(spmm, kname)

            def kw_(*a, __orig=korig, __name=kname, __v=v_arg):
                if __name == "_csr_rmatmat":
                    nnz = int(a[0][-1] - a[0][0])
                else:
                    nnz = int(np.asarray(a[1], dtype=np.int64).sum() - np.asarray(a[0], dtype=np.int64).sum())
                t = time.perf_counter()
                res = __orig(*a)
                cnt.kernels.append({"stage": cnt.stage, "kernel": __name, "nnz": nnz,
                                    "width": int(a[__v].shape[1]), "itemsize": int(a[__v].dtype.itemsize),
                                    "seconds": time.perf_counter() - t})
                return res
            self._saved.append((spmm, kname, korig))
            setattr(spmm, kname, kw_)

        GBI = gram.GramBlockInverse
        orig_solve = GBI.solve

        def solve(this, R, x0=None, rtol=None):
            t = time.perf_counter()
            res = orig_solve(this, R, x0=x0, rtol=rtol)
            R2 = np.asarray(R)
            cols = 1 if R2.ndim == 1 else int(R2.shape[1])
            nnz = int(this.X.nnz) if getattr(this, "source", None) is None else int(this.source.nnz)
            cnt.solves.append({
                "stage": cnt.stage, "method": this.method_, "p": int(this.shape[0]), "nnz": nnz,
                "n_rows": int(this.X.shape[0]) if getattr(this, "X", None) is not None else None,
                "columns": cols, "n_iter": int(res.n_iter), "krylov": res.info.get("krylov"),
                "widths": [int(x) for x in res.info.get("width", [])],
                "n_matvec": int(res.info.get("n_matvec", 0)),
                "dtype": "float32" if getattr(this, "mixed_precision_", False) else np.dtype(this.dtype).name,
                "seconds": time.perf_counter() - t})
            return res
        self._saved.append((GBI, "solve", GBI.__dict__.get("solve")))
        GBI.solve = solve
        return self

    def __exit__(self, *exc):
        for obj, name, orig in reversed(self._saved):
            if orig is None:
                delattr(obj, name)
            else:
                setattr(obj, name, orig)
        for name in ("_set_up_problem", "_factor_gram", "_phi_star", "_orthonormal_map", "_top_eigenvectors"):
            self.model.__dict__.pop(name, None)
        return False

    def sparse_kernels(self, rates: dict) -> dict:
        """The fit's CSR x dense kernel calls summed: seconds measured, GFLOP (2 per nonzero and
        column), and the seconds they would take at the float32 GEMM rate (how the floor charges
        them) and at the cache-resident CSR rate of the nearest measured width
        (:func:`sparse_cached_rate`); ``by_width`` groups the calls by that width."""
        gemm = rates["gemm_float32_GFLOPs"] * 1e9
        cache_bw = rates.get("cache_read_GBps", math.inf) * 1e9
        out = {"calls": len(self.kernels), "seconds": 0.0, "flops": 0.0, "gemm_s": 0.0, "cached_s": 0.0,
               "gathered_bytes": 0.0, "cache_bw_s": 0.0, "by_width": {}}
        for k in self.kernels:
            f = 2.0 * k["nnz"] * k["width"]
            out["seconds"] += k["seconds"]
            out["flops"] += f
            out["gemm_s"] += f / gemm
            gathered = float(k["nnz"]) * k["width"] * k.get("itemsize", 4)   # one row read per nonzero
            out["gathered_bytes"] += gathered
            out["cache_bw_s"] += gathered / cache_bw
            near = nearest_width(rates["sparse_cached"], k["width"])
            out["cached_s"] += f / (near["GFLOPs"] * 1e9)
            w = out["by_width"].setdefault(f"~{near['width']}", {"calls": 0, "seconds": 0.0, "flops": 0.0,
                                                                 "cached_GFLOPs": near["GFLOPs"]})
            w["calls"] += 1
            w["seconds"] += k["seconds"]
            w["flops"] += f
        out["GFLOPs"] = out["flops"] / out["seconds"] / 1e9 if out["seconds"] else 0.0
        return out

    def operator_columns(self, stage: str = "eig") -> int:
        """Columns the operator M = ĈᵀA⁻¹Ĉ was applied to in ``stage`` (one Ĉᵀ column each). For
        the subspace eigen-solver this is ``convergence_["eig"]["n_matvec"]``; ARPACK's n_matvec
        leaves out the r columns of its final residual check, which the fit also computes."""
        return sum(p["columns"] for p in self.products if p["stage"] == stage and p["direction"] == "rmatmat")

    def parts(self, r: int) -> dict:
        """Flops and DRAM bytes per part and stage, from the recorded calls.

        A product of ``b`` columns with Ĉ (or Ĉᵀ) is one sparse product per language: 2 flops per
        nonzero and column; its bytes are each block's CSR once (int32 indices, data, int64 row
        pointers; the tiled kernels sweep the CSR once whatever the tile), the dense input read
        once and the output written once (gathered rows come from cache tiles: counted as hits).
        A block-CG iteration of width w on language l costs the two products ``X_l P`` and
        ``X_lᵀ T`` (4 nnz_l w flops, two CSR passes, P, T twice and Q: 5 dense (·, w) passes) plus
        its dense work, six (p_l, w) x (w, w) products (12 p_l w² flops, about 10 (p_l, w) passes);
        column-by-column CG: 4 nnz per column product and ~10 p_l flops per column and iteration.
        A dense Cholesky solve of b columns: 2 p_l² b flops and the factor read once. Φ from the
        record: one (p, n_applied) x (n_applied, r) GEMM; the orthonormal map: 4 p r² flops."""
        P = self.problem
        blocks = [P.blocks[lang] for lang in P.languages]
        nnz = [int(X.nnz) for X in blocks]
        rows = [int(X.shape[0]) for X in blocks]
        K, p = len(P.classes), int(P.p)
        parts: dict[str, dict] = {}

        def add(name, flops, nbytes):
            d = parts.setdefault(name, {"flops": 0.0, "bytes": 0.0, "calls": 0})
            d["flops"] += float(flops)
            d["bytes"] += float(nbytes)
            d["calls"] += 1

        for pr in self.products:
            item = np.dtype(pr["dtype"]).itemsize
            b = pr["columns"]
            csr = sum(8 * (n + 1) + (4 + item) * z for n, z in zip(rows, nnz, strict=True))
            add(f"{pr['stage']}: Ĉ products", 2 * sum(nnz) * b, csr + (K + p) * b * item)
        for s in self.solves:
            item = np.dtype(s["dtype"]).itemsize
            pl, z, nr = s["p"], s["nnz"], s["n_rows"] or 0
            csr = 8 * (nr + 1) + 8 * (pl + 1) + 2 * (4 + item) * z      # X_l and its CSR transpose
            if s["method"] == "cg":
                widths = s["widths"] or ([s["columns"]] * s["n_iter"] if s["krylov"] == "columns" else [])
                if s["krylov"] == "columns" or not s["widths"]:
                    n_iter = s["n_iter"]
                    mv = s["n_matvec"]
                    add(f"{s['stage']}: inner CG sparse", 4 * z * mv,
                        n_iter * csr + mv * (3 * pl + 2 * nr) * item)
                    add(f"{s['stage']}: inner CG dense", 10 * pl * mv, 10 * pl * mv * item)
                else:
                    for w in widths:
                        add(f"{s['stage']}: inner CG sparse", 4 * z * w + 2 * pl * w,
                            csr + (3 * pl + 2 * nr) * w * item)
                        add(f"{s['stage']}: inner CG dense", 12 * pl * w * w, 10 * pl * w * item)
            else:
                add(f"{s['stage']}: dense solves", 2 * pl * pl * s["columns"],
                    pl * pl * item + 2 * pl * s["columns"] * item)
        item = P.dtype.itemsize
        n_applied = self.operator_columns("eig")
        if str(getattr(self.model, "fit_info_", {}).get("phi_source", "recorded")) == "recorded":
            add("phi: Φ from the record", 2 * p * n_applied * r, (p * n_applied + p * r) * item)
        add("map: orthonormal rows", 4 * p * r * r, 3 * p * r * item)
        return parts


def _cr5_corpus(quick: bool, cache: str | None):
    import scipy.sparse as sp

    from benchmarks.wiki_synth import wiki_corpus
    K = 20_000 if quick else 485_000
    dtype = np.float32
    if cache and os.path.exists(cache):
        z = np.load(cache)
        blocks = {lang: sp.csr_matrix((z[f"{lang}_data"], z[f"{lang}_indices"], z[f"{lang}_indptr"]),
                                      shape=tuple(z[f"{lang}_shape"])).astype(dtype, copy=False)
                  for lang in ("l0", "l1")}
        concepts = {lang: np.arange(X.shape[0]) for lang, X in blocks.items()}
        return blocks, concepts
    blocks, concepts = wiki_corpus(K, dtype=dtype, vocab_size=20_000 if quick else 200_000)
    if cache:
        np.savez(cache, **{f"{lang}_{k}": getattr(X, k) for lang, X in blocks.items()
                           for k in ("data", "indices", "indptr")},
                 **{f"{lang}_shape": np.array(X.shape) for lang, X in blocks.items()})
    return blocks, concepts


def fit_cr5_counted(blocks, concepts, **params):
    """Fit Cr5 on ``blocks`` with a :class:`Cr5Counter`; returns ``(model, counter, seconds)``."""
    from linxling import Cr5
    model = Cr5(**{"n_components": 300, "alpha": 1.0, "random_state": 0, "show_progress": False, **params})
    with Cr5Counter(model) as cnt:
        t = time.perf_counter()
        model.fit_matrices(blocks, concepts)
        seconds = time.perf_counter() - t
    return model, cnt, seconds


def measure_cr5(rates: dict, quick: bool = False, cache: str | None = None) -> dict:
    """Counts, floors and measured times of Cr5 at K = 485,000 (``--quick``: K = 20,000, r = 50)."""
    t0 = time.perf_counter()
    blocks, concepts = _cr5_corpus(quick, cache)
    t_data = time.perf_counter() - t0
    r = 50 if quick else 300
    from benchmarks.wiki_synth import wiki_corpus
    warm_b, warm_c = wiki_corpus(1_000, vocab_size=2_000, dtype=np.float32)
    fit_cr5_counted(warm_b, warm_c, n_components=10, dtype="float32")   # compile outside the timing
    load0 = os.getloadavg()
    model, cnt, seconds = fit_cr5_counted(blocks, concepts, n_components=r, dtype="float32",
                                          memory_budget=None if quick else "12G")
    load1 = os.getloadavg()
    parts = cnt.parts(r)
    floors = floor_table(parts, rates, "float32")
    # measured seconds per part: the wrapped calls; the rest of each stage is its dense/solver work
    measured: dict[str, float] = {}
    for pr in cnt.products:
        key = f"{pr['stage']}: Ĉ products"
        measured[key] = measured.get(key, 0.0) + pr["seconds"]
    for s in cnt.solves:
        key = f"{s['stage']}: inner CG (sparse + dense)" if s["method"] == "cg" else f"{s['stage']}: dense solves"
        measured[key] = measured.get(key, 0.0) + s["seconds"]
    info = model.fit_info_
    stage_s = {"factor": info.get("time_factor", 0.0), "start": info.get("time_start", 0.0),
               "eig": info.get("time_eig", 0.0), "phi": info.get("time_phi", 0.0)}
    for st in ("start", "eig"):
        inside = sum(v for kk, v in measured.items() if kk.startswith(st + ":"))
        measured[f"{st}: rest (orthonormalisation, Rayleigh-Ritz, copies)"] = max(0.0, stage_s[st] - inside)
    measured["other (setup, factor rest, Φ, map, fitted attributes)"] = max(
        0.0, seconds - sum(measured.values()))
    # the gap in steps: the floor; the sparse products at the cache-resident CSR rate instead of
    # the GEMM rate; the sparse kernels as measured; the fit
    kern = cnt.sparse_kernels(rates)
    floor_s = floors["total"]["floor_s"]
    steps = [("the floor (every part at the GEMM rate or the triad bandwidth)", floor_s),
             ("+ the sparse products at the cache's read bandwidth instead of the GEMM rate (a row of "
              "the dense operand read per nonzero, every one from the cache: the bound of any "
              "gather-based product)", floor_s - kern["gemm_s"] + kern["cache_bw_s"]),
             ("+ the sparse products at the cache-resident CSR rate instead of the GEMM rate",
              floor_s - kern["gemm_s"] + kern["cached_s"]),
             ("+ the sparse kernels as measured in the fit (operands of 100s of MB: many cache tiles, "
              "the output rows streamed once per tile)", floor_s - kern["gemm_s"] + kern["seconds"]),
             ("+ everything else as measured (block-CG and eigen-solver dense work: single-threaded "
              "BLAS calls on row parts, copies, setup): the fit", seconds)]
    return {"K": len(model.classes_), "documents": sum(X.shape[0] for X in blocks.values()),
            "features": sum(X.shape[1] for X in blocks.values()),
            "nnz": int(sum(X.nnz for X in blocks.values())), "r": r, "dtype": "float32",
            "memory_budget": None if quick else "12G", "data_seconds": t_data,
            "fit_seconds": seconds, "stage_seconds": stage_s,
            "eig": dict(model.convergence_["eig"]), "operator_columns_eig": cnt.operator_columns("eig"),
            "start_steps": model.start_steps,
            "cg_iterations": {lang: b["cg_iterations"] for lang, b in model.convergence_["blocks"].items()},
            "block_methods": model.fit_info_.get("block_methods"),
            "parts": parts, "floors": floors, "floor_s": floors["total"]["floor_s"],
            "measured_seconds": measured, "multiple_of_floor": seconds / floors["total"]["floor_s"],
            "sparse_kernels": kern, "steps": [{"step": n, "seconds": v, "multiple_of_floor": v / floor_s}
                                              for n, v in steps],
            "loadavg_before": load0, "loadavg_after": load1}


# =============================================================================== report
def _fmt_s(x: float) -> str:
    return f"{x:.3g}" if x < 10 else f"{x:.1f}"


def markdown(res: dict) -> str:
    """The floor tables, shaped for benchmarks/README.md ("### The machine's floor")."""
    m = res["machine"]
    one_triad = m["stream"].get("one_thread", {}).get("triad_GBps", float("nan"))
    L = ["### The machine's floor", "",
         f"`{res['command']}` ({res['date']}, {m['cpu']}, {m['cores']} cores, LLC {m['llc_bytes'] / 2**20:.0f} MiB, "
         f"load {m['loadavg_before'][0]:.2f} before / {m['loadavg_after'][0]:.2f} after the machine measurement).", "",
         "| machine rate (measured in the same run) | value |", "|---|---|",
         f"| STREAM triad, the better of {m['threads']} threads and 1 (float64, "
         f"{m['stream']['array_bytes'] / 2**20:.0f} MiB arrays; {m['threads']} threads: "
         f"{m['stream']['triad_GBps']:.1f}, 1: {one_triad:.1f}) "
         f"| **{m['triad_GBps']:.1f} GB/s** ({m['threads']} threads: copy {m['stream']['copy_GBps']:.1f}, "
         f"scale {m['stream']['scale_GBps']:.1f}, add {m['stream']['add_GBps']:.1f}) |",
         f"| GEMM float64, best shape and thread count (best with 1 thread) "
         f"| **{m['gemm_float64_GFLOPs']:.1f} GFLOP/s** "
         f"({m['gemm_float64_1thread_GFLOPs']:.1f}) |",
         f"| GEMM float32, best shape and thread count (best with 1 thread) "
         f"| **{m['gemm_float32_GFLOPs']:.1f} GFLOP/s** "
         f"({m['gemm_float32_1thread_GFLOPs']:.1f}) |", ""]
    if m.get("sparse_cached"):
        L[-1:-1] = ["| CSR x dense, every gathered row from the cache (linxling's row kernel, float32, "
                    + ", ".join(f"{r['width']}" for r in m["sparse_cached"]) + " columns; not part of the floor) | "
                    + ", ".join(f"**{r['GFLOPs']:.1f}**" for r in m["sparse_cached"]) + " GFLOP/s |"]
    if m.get("gather"):
        L[-1:-1] = ["| random rows summed from the cache, four per pass (float32, "
                    + ", ".join(f"{g['width']}" for g in m["gather"]) + " columns, one cache tile each; "
                    "not part of the floor) | " + ", ".join(f"**{g['GBps']:.1f}**" for g in m["gather"])
                    + " GB/s |"]
    if m.get("cache_read"):
        L[-1:-1] = ["| cache read bandwidth, float32, a working set of "
                    + " and ".join(f"{c['bytes'] / 2**20:.0f} MiB" for c in m["cache_read"])
                    + f" over {m['cache_read'][0]['threads']} threads (one cache tile of the sparse kernels; "
                    "not part of the floor) | " + ", ".join(f"**{c['GBps']:.1f}**" for c in m["cache_read"])
                    + " GB/s |"]
    heads = [f"{g['dtype']} {g['m']}x{g['k']}x{g['n']} {g['threads']}t" for g in m["gemm"]]
    L += ["| GEMM | " + " | ".join(heads) + " |",
          "|---" * (len(m["gemm"]) + 1) + "|",
          "| GFLOP/s | " + " | ".join(f"{g['GFLOPs']:.1f}" for g in m["gemm"]) + " |", ""]
    if "wmf" in res:
        w = res["wmf"]
        L += [f"**WMF** ({w['shape'][0]:,} x {w['shape'][1]:,}, {w['nnz']:,} nonzeros, k = {w['k']}, CG "
              f"{w['cg_steps']} steps, per iteration):", ""]
        for run in w["runs"]:
            L += [f"{run['dtype']}: fit **{run['fit_median_s']:.3f} s per iteration** (median after the first; "
                  f"load {run['loadavg_before'][0]:.2f}-{run['loadavg_after'][0]:.2f}), floor "
                  f"**{run['floor_s']:.3f} s** → **{run['multiple_of_floor']:.2f}x the floor** "
                  f"({run['multiple_of_compulsory_floor']:.2f}x the floor with every gathered row an LLC hit, "
                  f"{run['floor_compulsory_s']:.3f} s).", "",
                  "| part | GFLOP | GB (of which gathers) | LLC hits of gathers | floor (s) | bound "
                  "| measured alone (s) | x floor |",
                  "|---|---|---|---|---|---|---|---|"]
            for name, p in run["parts"].items():
                f = run["floors"][name]
                t = run["part_seconds"].get(name, float("nan"))
                hits = f"{p['llc_hit_fraction']:.0%}" if "llc_hit_fraction" in p else "—"
                L.append(f"| {name} | {p['flops'] / 1e9:.2f} | {p['bytes'] / 1e9:.3f} "
                         f"({p.get('gather_bytes', 0) / 1e9:.3f}) "
                         f"| {hits} | {f['floor_s']:.4f} | {f['bound']} | {t:.4f} | {t / f['floor_s']:.1f} |")
            L += [f"| **iteration** | | | | **{run['floor_s']:.4f}** | | {run['parts_sum_s']:.4f} (parts), "
                  f"{run['fit_median_s']:.4f} (fit) | **{run['multiple_of_floor']:.2f}** |", ""]
    if "cr5" in res:
        c = res["cr5"]
        L += [f"**Cr5** (K = {c['K']:,}, {c['documents']:,} documents, {c['features']:,} features, "
              f"{c['nnz'] / 1e6:.1f}M nonzeros, r = {c['r']}, float32, memory_budget={c['memory_budget']}): "
              f"fit **{c['fit_seconds']:.1f} s** "
              f"(load {c['loadavg_before'][0]:.2f}-{c['loadavg_after'][0]:.2f}), floor **{c['floor_s']:.1f} s** → "
              f"**{c['multiple_of_floor']:.2f}x the floor**; eigen-solve {c['eig']['n_iter']} iteration(s), "
              f"{c['operator_columns_eig']} operator columns (diagnostics: n_matvec = {c['eig']['n_matvec']}), "
              f"start {c['start_steps']} steps; block CG iterations {c['cg_iterations']}.", "",
              "| part | calls | GFLOP | GB | floor (s) | bound |", "|---|---|---|---|---|---|"]
        for name, p in c["parts"].items():
            f = c["floors"][name]
            L.append(f"| {name} | {p['calls']} | {p['flops'] / 1e9:.1f} | {p['bytes'] / 1e9:.2f} | "
                     f"{_fmt_s(f['floor_s'])} | {f['bound']} |")
        L += [f"| **fit** | | | | **{_fmt_s(c['floor_s'])}** | |", "",
              "| where the time went (measured) | s | share |", "|---|---|---|"]
        for name, t in c["measured_seconds"].items():
            L.append(f"| {name} | {_fmt_s(t)} | {t / c['fit_seconds']:.0%} |")
        L.append("")
        if "steps" in c:
            k = c["sparse_kernels"]
            L += [f"The sparse kernels: {k['calls']} calls, {k['flops'] / 1e9:.0f} GFLOP in "
                  f"**{k['seconds']:.1f} s** ({k['seconds'] / c['fit_seconds']:.0%} of the fit, "
                  f"{k['GFLOPs']:.1f} GFLOP/s; by width: "
                  + ", ".join(f"{w} columns {v['calls']} calls, {v['seconds']:.1f} s at "
                              f"{v['flops'] / v['seconds'] / 1e9:.1f} GFLOP/s (cache-resident {v['cached_GFLOPs']:.1f})"
                              for w, v in sorted(k["by_width"].items(), key=lambda kv: int(kv[0][1:]))
                              if v["seconds"] > 0)
                  + f"); at the GEMM rate {k['gemm_s']:.1f} s, at the cache-resident CSR rate {k['cached_s']:.1f} s"
                  + (f"; {k['gathered_bytes'] / 1e12:.2f} TB of gathered rows, {k['cache_bw_s']:.1f} s at the "
                     f"cache's read bandwidth ({m['cache_read_GBps']:.1f} GB/s)" if "cache_read_GBps" in m else "")
                  + ".",
                  "", "| from the floor to the fit | s | x floor |", "|---|---|---|"]
            for st in c["steps"]:
                L.append(f"| {st['step']} | {_fmt_s(st['seconds'])} | {st['multiple_of_floor']:.2f} |")
            L.append("")
    return "\n".join(L)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("machine", "wmf", "cr5", "all"), default="all")
    ap.add_argument("--quick", action="store_true", help="small sizes: exercise the code in seconds")
    ap.add_argument("--out", default=str(OUT), help="directory for floor.json and floor.md")
    ap.add_argument("--cache", default=None, help=".npz of the Cr5 corpus (read if present, else written)")
    from benchmarks._cli import show_defaults
    a = show_defaults(ap).parse_args(argv)
    out_dir = Path(a.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    from benchmarks._machine import machine
    res: dict = {"command": "python -m benchmarks.floor " + " ".join(argv if argv is not None else sys.argv[1:]),
                 "date": time.strftime("%Y-%m-%d %H:%M"), "quick": a.quick, "versions": machine()}
    res["machine"] = measure_machine(a.quick)
    rates = res["machine"]
    print(f"machine: triad {rates['triad_GBps']:.1f} GB/s, GEMM f64 {rates['gemm_float64_GFLOPs']:.1f} / "
          f"f32 {rates['gemm_float32_GFLOPs']:.1f} GFLOP/s, load {rates['loadavg_before']}", flush=True)
    if a.part in ("wmf", "all"):
        res["wmf"] = measure_wmf(rates, a.quick)
        for run in res["wmf"]["runs"]:
            print(f"wmf {run['dtype']}: {run['fit_median_s']:.3f} s/it, floor {run['floor_s']:.3f} s, "
                  f"{run['multiple_of_floor']:.2f}x", flush=True)
    if a.part in ("cr5", "all"):
        res["cr5"] = measure_cr5(rates, a.quick, a.cache)
        c = res["cr5"]
        print(f"cr5 K={c['K']}: {c['fit_seconds']:.1f} s, floor {c['floor_s']:.1f} s, "
              f"{c['multiple_of_floor']:.2f}x", flush=True)
    (out_dir / "floor.json").write_text(json.dumps(res, indent=1, default=float))
    (out_dir / "floor.md").write_text(markdown(res) + "\n")
    print(f"wrote {out_dir / 'floor.json'} and {out_dir / 'floor.md'}")
    return res


if __name__ == "__main__":
    main()
