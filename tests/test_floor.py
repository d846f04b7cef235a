"""benchmarks/floor.py: the work counters against brute-force counts, the machine measurers."""
from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from benchmarks import floor

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ an instrumented NumPy CG half-step
class _Tally:
    """Counts flops of the vector operations the reference performs (multiply-add = 2)."""

    def __init__(self):
        self.flops = 0

    def dot(self, a, b):                 # a·b: k multiplies, k adds
        self.flops += 2 * a.size
        return float(np.dot(a, b))

    def axpy(self, a, x, y):             # y + a x
        self.flops += 2 * x.size
        return y + a * x

    def matvec(self, x, G):              # x G, k x k; a G of one row is a diagonal (k flops)
        if G.shape[0] == 1:
            self.flops += G.size
            return x * G[0]
        self.flops += 2 * G.size
        return x @ G

    def scalar(self, n=1):
        self.flops += n


def _reference_half_step(X, Y, out, G, dw, steps, tally, eigenbasis=False):
    """One CG half-step, row by row, written from the normal equations (not from the kernel):
    A_u = G + Σ_i dw_i y_i y_iᵀ, b_u = Σ_i X_ui y_i, warm start out[u]; returns the solution and
    the objective term Σ_u x·(r + b). ``eigenbasis``: the same CG on z = Qᵀx with G = QΛQᵀ (Y
    rotated once, each warm start rotated in and its solution back)."""
    X = sp.csr_matrix(X)
    Q = None
    if eigenbasis:
        lam, Q = np.linalg.eigh(G)
        Y = np.vstack([tally.matvec(y, Q) for y in Y])
        G = lam[None, :]
    res = out.copy()
    quad = 0.0
    for u in range(X.shape[0]):
        cols = X.indices[X.indptr[u]:X.indptr[u + 1]]
        vals = X.data[X.indptr[u]:X.indptr[u + 1]]
        if cols.size == 0:
            res[u] = 0
            continue
        x = out[u].astype(np.float64)
        if Q is not None:
            x = tally.matvec(x, Q)
        r = -tally.matvec(x, G)
        b = np.zeros_like(x)
        for i, v in zip(cols, vals, strict=True):
            t = tally.dot(Y[i], x)
            coef = v - dw[i] * t
            tally.scalar(2)
            r = tally.axpy(coef, Y[i], r)
            b = tally.axpy(v, Y[i], b)
        p = r.copy()
        rs = tally.dot(r, r)
        for _ in range(steps):
            Ap = tally.matvec(p, G)
            for i in cols:
                t = tally.dot(Y[i], p) * dw[i]
                tally.scalar(1)
                Ap = tally.axpy(t, Y[i], Ap)
            pAp = tally.dot(p, Ap)
            alpha = rs / pAp
            tally.scalar(1)
            x = tally.axpy(alpha, p, x)
            r = tally.axpy(-alpha, Ap, r)
            rsnew = tally.dot(r, r)
            beta = rsnew / rs
            tally.scalar(1)
            p = tally.axpy(beta, p, r)
            rs = rsnew
        tally.scalar(3 * x.size)         # x·(r + b): an add, a multiply and an add per entry
        quad += float(x @ (r + b))
        res[u] = x if Q is None else tally.matvec(x, Q.T)
    return res, quad


def _tiny(n=40, m=25, k=6, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, m, density=0.2, random_state=seed, format="csr")
    X.data[:] = 1.0
    X = X.tolil()
    X[3, :] = 0                          # an empty row: no work
    X = X.tocsr()
    X.eliminate_zeros()
    Y = rng.standard_normal((m, k)) * 0.3
    out = rng.standard_normal((n, k)) * 0.3
    return X, Y, out


def test_wmf_half_step_flops_equal_instrumented_reference():
    from linxling.kernels import als
    X, Y, out0 = _tiny()
    k, steps, w, lam = Y.shape[1], 3, 0.1, 0.5
    G = als.gram(Y, w, lam)
    dw = np.full(Y.shape[0], 1.0 - w)
    tally = _Tally()
    ref, _ = _reference_half_step(X, Y, out0, G, dw, steps, tally)
    # the reference is the kernel's algorithm: same solution
    got = out0.copy()
    als.als_half_step(X, Y, got, missing_weight=w, regularization=lam, solver="cg", cg_steps=steps)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-10)
    nonempty = int(np.count_nonzero(np.diff(X.indptr)))
    assert floor.wmf_half_step_flops(nonempty, X.nnz, k, steps) == tally.flops
    # the same CG in the Gram's eigenbasis (the sentence half-step here: 25 words < 2 x 40 rows)
    assert als.eigen_basis_pays(Y.shape[0], X.shape[0], steps)
    t_eig = _Tally()
    ref_eig, _ = _reference_half_step(X, Y, out0, G, dw, steps, t_eig, eigenbasis=True)
    np.testing.assert_allclose(ref_eig, ref, rtol=1e-9, atol=1e-10)
    assert floor.wmf_half_step_flops(nonempty, X.nnz, k, steps, True, Y.shape[0]) == t_eig.flops
    # the iteration's parts: each half-step adds the objective's Σ data² (2 nnz)
    parts = floor.wmf_iteration_parts(X, k, steps, np.float64, llc=1 << 20)
    assert parts["rows half-step (E)"]["eigenbasis"]
    assert parts["rows half-step (E)"]["flops"] == t_eig.flops + 2 * X.nnz
    # the word half-step: 40 sentences < 2 x 25 words here too (not at the benchmark's shape)
    assert parts["cols half-step (V)"]["eigenbasis"] == als.eigen_basis_pays(X.shape[0], X.shape[1], steps)
    assert not floor.wmf_iteration_parts(sp.random(400, 25, density=0.2, random_state=1, format="csr"),
                                         k, steps, np.float64, llc=1 << 20)["cols half-step (V)"]["eigenbasis"]
    XT = X.T.tocsr()
    t2 = _Tally()
    _reference_half_step(XT, out0, Y.copy(), als.gram(out0, w, lam), np.full(X.shape[0], 1 - w), steps, t2,
                         eigenbasis=parts["cols half-step (V)"]["eigenbasis"])
    assert parts["cols half-step (V)"]["flops"] == t2.flops + 2 * X.nnz
    assert parts["gram V (VᵀV)"]["flops"] == 2 * X.shape[1] * k * k + k * k + k


def test_wmf_bytes_gathers_and_llc_model():
    X, Y, _ = _tiny()
    k = Y.shape[1]
    big = floor.wmf_iteration_parts(X, k, 3, np.float32, llc=1 << 30)
    small = floor.wmf_iteration_parts(X, k, 3, np.float32, llc=64)
    half = big["rows half-step (E)"]
    # every gather an LLC hit when the cache holds the factor; the CSR is read once
    assert half["gather_bytes"] == 0 and half["llc_hit_fraction"] == 1.0
    assert half["compulsory_bytes"] >= 8 * (X.shape[0] + 1) + 8 * X.nnz + 2 * X.shape[0] * k * 4
    # a cache of one row: only the most gathered row hits
    s = small["rows half-step (E)"]
    counts = np.bincount(X.indices, minlength=X.shape[1])
    assert s["llc_hit_fraction"] == pytest.approx(counts.max() / counts.sum())
    assert s["gather_bytes"] == pytest.approx((1 - counts.max() / counts.sum()) * X.nnz * 64)


def test_wmf_bytes_of_pushed_hot_words(monkeypatch):
    """Words whose CG is pushed from X's rows gather nothing; each pass reads X's CSR and the
    touched rows of E in order."""
    from linxling.kernels import als
    X, Y, _ = _tiny()
    n, k = X.shape[0], Y.shape[1]
    monkeypatch.setattr(als, "_HOT_MIN_SHARE", 2.0)          # no word pushed
    plain = floor.wmf_iteration_parts(X, k, 3, np.float32, llc=64)["cols half-step (V)"]
    assert plain["push_bytes"] == 0
    monkeypatch.setattr(als, "_HOT_MIN_SHARE", 0.0)          # every word with a nonzero pushed
    monkeypatch.setattr(als, "_HOT_MIN_NNZ", 1)
    monkeypatch.setattr(als, "_HOT_BYTES", 1 << 30)
    pushed = floor.wmf_iteration_parts(X, k, 3, np.float32, llc=64)["cols half-step (V)"]
    touched = int(np.count_nonzero(np.diff(X.indptr)))
    assert pushed["gather_bytes"] == 0
    assert pushed["push_bytes"] == 4 * (8 * (n + 1) + 8 * X.nnz + touched * k * 4)
    assert pushed["flops"] == plain["flops"]
    assert pushed["bytes"] == pushed["compulsory_bytes"] + pushed["push_bytes"]


def test_triad_kernel_and_rates():
    n = 10_007
    b = np.arange(n, dtype=np.float64)
    c = np.full(n, 2.0)
    a = np.zeros(n)
    floor.triad(a, b, c, 3.0)
    np.testing.assert_array_equal(a, b + 3.0 * c)
    st = floor.stream_bandwidth(n=200_000, repeats=2)
    for key in ("triad_GBps", "copy_GBps", "scale_GBps", "add_GBps"):
        assert math.isfinite(st[key]) and st[key] > 0
    for dt in (np.float64, np.float32):
        g = floor.gemm_rate(300, 50, 50, dt, repeats=1, threads=1)
        assert math.isfinite(g) and g > 0


def test_cache_resident_sparse_rate_and_nearest_width():
    r = floor.sparse_cached_rate(16, np.float32, n_rows=2_000, per_row=20, repeats=1, operand_bytes=1 << 16)
    # the operand is the bytes asked for (rows of 16 float32), the rate a positive number
    assert r["operand_rows"] == (1 << 16) // 64 and r["width"] == 16
    assert math.isfinite(r["GFLOPs"]) and r["GFLOPs"] > 0
    rates = [{"width": 16, "GFLOPs": 1.0}, {"width": 128, "GFLOPs": 2.0}]
    assert floor.nearest_width(rates, 40)["width"] == 16       # 40/16 = 2.5 < 128/40 = 3.2
    assert floor.nearest_width(rates, 60)["width"] == 128      # 60/16 = 3.75 > 128/60 = 2.1


def test_cache_read_bandwidth_sums_the_working_set():
    r = floor.cache_read_bandwidth(1 << 16, repeats=1, total=1e6)
    # the working set is the bytes asked for, split over the threads; the rate a positive number
    assert r["bytes"] == 4 * r["threads"] * ((1 << 16) // (4 * r["threads"]))
    assert math.isfinite(r["GBps"]) and r["GBps"] > 0
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = np.zeros(2, dtype=np.float32)
    floor.stream_kernels()[4](a, 2, out)
    np.testing.assert_array_equal(out, [6.0, 24.0])       # each row summed twice


def test_gather_rate_sums_random_rows():
    r = floor.gather_rate(16, nbytes=1 << 16, repeats=1, total=1e6)
    assert r["width"] == 16 and r["operand_MiB"] == pytest.approx((1 << 16) / 2**20)
    assert r["gathers"] % 4 == 0 and math.isfinite(r["GBps"]) and r["GBps"] > 0
    V = np.arange(12, dtype=np.float32).reshape(6, 2)
    idx = np.array([0, 5, 5, 2, 1, 1, 3, 4, 0], dtype=np.int32)     # the 9th row is left over
    acc = np.zeros((1, 2), dtype=np.float32)
    floor.stream_kernels()[5](V, idx, acc)
    np.testing.assert_array_equal(acc[0], V[idx[:8]].sum(axis=0))


def test_roofline_takes_the_larger_bound():
    rates = {"gemm_float64_GFLOPs": 10.0, "triad_GBps": 5.0}
    t = floor.floor_table({"a": {"flops": 2e10, "bytes": 5e9}, "b": {"flops": 1e9, "bytes": 1e10}}, rates, "float64")
    assert t["a"]["floor_s"] == pytest.approx(2.0) and t["a"]["bound"] == "compute"
    assert t["b"]["floor_s"] == pytest.approx(2.0) and t["b"]["bound"] == "memory"
    assert t["total"]["floor_s"] == pytest.approx(4.0)


def test_cr5_counter_matches_the_fit_diagnostics():
    from benchmarks.wiki_synth import wiki_corpus
    from linxling._linop import LinearOperator
    from linxling.operators import CrossCovariance, GramBlockInverse
    blocks, concepts = wiki_corpus(1_500, vocab_size=3_000, dtype=np.float32)
    model, cnt, seconds = floor.fit_cr5_counted(blocks, concepts, n_components=12, dtype="float32",
                                                block_method="cg", eig_method="subspace")
    assert seconds > 0
    # the subspace eigen-solver (the one the K = 485,000 fit runs) counts every column it applies
    assert model.convergence_["eig"]["method"] == "subspace"
    assert cnt.operator_columns("eig") == model.convergence_["eig"]["n_matvec"] > 0
    # the start: two products (Ĉ, Ĉᵀ) per power step
    assert sum(1 for p in cnt.products if p["stage"] == "start") == 2 * model.start_steps
    # the inner solves recorded are every block CG application the model reports, in order
    for lang in model.languages_:
        p_l = blocks[lang].shape[1]
        its = [s["n_iter"] for s in cnt.solves if s["p"] == p_l and s["nnz"] == blocks[lang].nnz]
        assert its == model.convergence_["blocks"][lang]["cg_iterations"]
    parts = cnt.parts(12)
    assert all(v["flops"] >= 0 and v["bytes"] > 0 for v in parts.values())
    nnz = sum(X.nnz for X in blocks.values())
    eig_cols = sum(p["columns"] for p in cnt.products if p["stage"] == "eig")
    assert parts["eig: Ĉ products"]["flops"] == 2 * nnz * eig_cols
    # the sparse row kernels were timed in every stage that multiplies, and their flops cover the
    # eigen-stage's Ĉ products (which run on them)
    stages = {k["stage"] for k in cnt.kernels}
    assert {"start", "eig"} <= stages
    assert all(k["nnz"] >= 0 and k["width"] >= 1 and k["seconds"] >= 0 for k in cnt.kernels)
    assert sum(2 * k["nnz"] * k["width"] for k in cnt.kernels if k["stage"] == "eig") >= \
        parts["eig: Ĉ products"]["flops"]
    rates = {"gemm_float32_GFLOPs": 100.0, "sparse_cached": [{"width": 16, "GFLOPs": 10.0}],
             "cache_read_GBps": 50.0}
    summary = cnt.sparse_kernels(rates)
    assert summary["calls"] == len(cnt.kernels)
    # one float32 row of the dense operand gathered per nonzero
    assert all(k["itemsize"] == 4 for k in cnt.kernels)
    assert summary["gathered_bytes"] == pytest.approx(sum(4.0 * k["nnz"] * k["width"] for k in cnt.kernels))
    assert summary["cache_bw_s"] == pytest.approx(summary["gathered_bytes"] / 5e10)
    assert summary["cached_s"] == pytest.approx(summary["flops"] / 1e10)
    assert summary["gemm_s"] == pytest.approx(summary["flops"] / 1e11)
    # the class attributes and the kernels are restored
    from linxling.kernels import spmm
    assert all(hasattr(getattr(spmm, k), "py_func")
               for k in ("_tiled_rows", "_tiled_rows_mapped", "_rows_matmat", "_csr_rmatmat"))
    assert CrossCovariance.matmat is LinearOperator.matmat
    assert "solve" in GramBlockInverse.__dict__ and GramBlockInverse.solve.__name__ == "solve"
    assert "_top_eigenvectors" not in model.__dict__


@pytest.mark.slow
def test_quick_end_to_end_writes_only_its_output(tmp_path):
    def status():
        try:
            return subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True,
                                  text=True, timeout=60).stdout
        except (OSError, subprocess.SubprocessError):
            return None
    before = status()
    res = floor.main(["--quick", "--out", str(tmp_path)])
    data = json.loads((tmp_path / "floor.json").read_text())
    md = (tmp_path / "floor.md").read_text()
    assert "### The machine's floor" in md and "**WMF**" in md and "**Cr5**" in md
    assert data["machine"]["triad_GBps"] > 0 and data["machine"]["gemm_float64_GFLOPs"] > 0
    for run in data["wmf"]["runs"]:
        assert run["floor_s"] > 0 and run["multiple_of_floor"] > 0
    assert data["cr5"]["operator_columns_eig"] == data["cr5"]["eig"]["n_matvec"]
    assert res["cr5"]["floor_s"] > 0
    assert data["machine"]["cache_read_GBps"] > 0 and "cache's read bandwidth" in md
    assert len(data["cr5"]["steps"]) == 5 and len(data["machine"]["gather"]) == len(floor.SPARSE_WIDTHS)
    assert status() == before


def test_the_cpu_identity_reads_family_model_and_vector_extension(tmp_path, monkeypatch):
    """A VM's "AMD EPYC" can be hosted on different generations: the machine description carries
    the family, model and widest vector extension from /proc/cpuinfo (first processor only)."""
    import builtins

    from benchmarks import _machine
    text = ("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\n"
            "model name\t: AMD EPYC\nflags\t\t: fpu sse2 avx avx2 avx512f avx512bw\n\n"
            "processor\t: 1\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: other\nflags\t\t: sse2\n")
    fake = tmp_path / "cpuinfo"
    fake.write_text(text)
    real_open = builtins.open
    monkeypatch.setattr(builtins, "open", lambda f, *a, **k: real_open(fake if f == "/proc/cpuinfo" else f, *a, **k))
    assert _machine.cpu_identity() == {"cpu": "AMD EPYC", "cpu_family": 26, "cpu_model": 2, "vector_isa": "avx512"}
    assert _machine.cpu_label() == "AMD EPYC (family 26, model 2, avx512)"
    fake.write_text("model name\t: Some CPU\nflags\t\t: sse2 avx2\n")
    assert _machine.cpu_label() == "Some CPU (avx2)"
