"""Cr5 on a dask.distributed cluster: dask arrays with scipy.sparse chunks, persisted on the workers."""
from __future__ import annotations

import os
import signal

import numpy as np
import pytest
import scipy.sparse as sp

from linxling import Cr5
from linxling._dask import worker_list
from tests.test_cr5 import TIGHT, dense_cr5_oracle, random_problem

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.slow       # a cluster of processes takes seconds to start; products round-trip


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def _dask_blocks(blocks, rows=20):
    return {lang: da.from_array(X, chunks=(rows, -1), asarray=False) for lang, X in blocks.items()}


def _projectors(model):
    return {lang: Phi.T @ Phi for lang, Phi in model.components_.items()}


@pytest.mark.parametrize("source", ["array", "disk"])
@pytest.mark.parametrize("block_method", ["dense", "cg"])
def test_dask_fit_equals_in_memory_fit(client, tmp_path, block_method, source):
    """Dask arrays persisted on the workers, or ChunkedCSR files the workers read (with client=):
    the fit equals the dense closed form and the in-memory fit (tight tolerances)."""
    rng = np.random.default_rng(11)
    blocks, concepts = random_problem(rng, n_langs=2, n_concepts=60 if block_method == "dense" else 30)
    r, alpha = 5, 0.5
    Phi, sv, _ = dense_cr5_oracle(blocks, concepts, r, alpha)
    kw = dict(n_components=r, alpha=alpha, block_method=block_method, eig_method="subspace",
              random_state=0, **TIGHT)
    ref = Cr5(**kw).fit_matrices(blocks, concepts)
    # block CG makes one round trip per iteration: fewer, larger chunks keep the test short
    rows = 20 if block_method == "dense" else 40
    data = _dask_blocks(blocks, rows=rows) if source == "array" else _disk_blocks(blocks, tmp_path, chunk_rows=rows)
    got = Cr5(**kw).fit_matrices(data, concepts, client=client)
    assert got.fit_info_["sources"] == {"a": "dask", "b": "dask"}
    assert not [k for k in got.fit_info_ if k.startswith("_")]      # "_dask_eig", an internal count, was kept
    np.testing.assert_allclose(got.singular_values_, sv, rtol=1e-6)
    np.testing.assert_allclose(got.eigenvalues_, ref.eigenvalues_, rtol=1e-6)
    P, Q = _projectors(got), _projectors(ref)
    for lang in blocks:
        np.testing.assert_allclose(P[lang], Q[lang], atol=1e-6)
        np.testing.assert_allclose(P[lang], Phi[lang].T @ Phi[lang], atol=1e-6)
    rec = got.fit_info_["dask"]
    assert rec["n_workers"] == 2 and rec["n_retries"] == 0
    assert rec["bytes_sent"] > 0 and rec["bytes_received"] > 0
    if source == "disk":
        # each language is given a worker (nothing is kept there), where its whole block-CG solves
        # run as one task each, reading the file; without a client the files stream here, same numbers
        assert len(set(rec["placed_on"].values()) - {None}) == 2
        assert (rec["n_local"] > 0) == (block_method == "cg")
        kinds = {k for k, where, *_ in rec["product_log"] if where == "local"}
        assert kinds == ({"solve"} if block_method == "cg" else set())
        if block_method == "cg":        # spread: the CG runs here, one product over the workers per iteration
            spread = Cr5(**kw).fit_matrices(data, concepts, client=client, placement="spread")
            assert spread.fit_info_["dask"]["n_local"] == 0
            assert set(spread.fit_info_["dask"]["placed_on"].values()) == {None}
            np.testing.assert_allclose(spread.eigenvalues_, ref.eigenvalues_, rtol=1e-6)
        local = Cr5(**kw).fit_matrices(data, concepts)
        assert local.fit_info_["sources"] == {"a": "hdf5", "b": "hdf5"}
        np.testing.assert_allclose(got.eigenvalues_, local.eigenvalues_, rtol=1e-12)
    assert rec["bytes_per_eig_iteration"] > 0 and rec["eig_iterations"] == got.convergence_["eig"]["n_iter"]

    # per product only dense blocks of the problem's size travel: never anything near nnz x n_chunks
    p = sum(X.shape[1] for X in blocks.values())
    assert rec["eig_stage"]["bytes_received"] / rec["eig_stage"]["n_products"] < 8 * p * 2 * 20 * 10


def test_dask_uses_default_client_and_mixes_with_memory(client):
    rng = np.random.default_rng(12)
    blocks, concepts = random_problem(rng, n_langs=2, n_concepts=40)
    r, alpha = 4, 1.0
    _, sv, _ = dense_cr5_oracle(blocks, concepts, r, alpha)
    mixed = {"a": _dask_blocks(blocks)["a"], "b": blocks["b"]}
    model = Cr5(n_components=r, alpha=alpha, block_method="dense", eig_method="subspace", random_state=0,
                **TIGHT).fit_matrices(mixed, concepts)           # the module's client is the default one
    assert model.fit_info_["sources"] == {"a": "dask", "b": "memory"}
    np.testing.assert_allclose(model.singular_values_, sv, rtol=1e-6)


def test_a_client_that_is_not_the_default_one_is_used(client, monkeypatch):
    """client= made with set_as_default=False (or not the latest Client): the fit failed with
    dask's "No clients found" (distributed.wait looks for the default client)."""
    import distributed.client as dclient
    monkeypatch.setattr(dclient, "_global_clients", {})    # no default client, as for Client(..., set_as_default=False)
    with pytest.raises(ValueError, match="No clients found"):
        distributed.default_client()
    rng = np.random.default_rng(12)
    blocks, concepts = random_problem(rng, n_langs=2, n_concepts=40)
    kw = dict(n_components=4, block_method="dense", eig_method="subspace", random_state=0, **TIGHT)
    ref = Cr5(**kw).fit_matrices(blocks, concepts)
    got = Cr5(**kw).fit_matrices(_dask_blocks(blocks), concepts, client=client)
    np.testing.assert_allclose(got.eigenvalues_, ref.eigenvalues_, rtol=1e-6)


def test_dask_fit_survives_a_killed_worker(client):
    rng = np.random.default_rng(13)
    blocks, concepts = random_problem(rng, n_langs=2, n_concepts=60)
    kw = dict(n_components=5, alpha=0.5, block_method="dense", eig_method="subspace", random_state=0, **TIGHT)
    ref = Cr5(**kw).fit_matrices(_dask_blocks(blocks), concepts, client=client)
    pids = client.run(os.getpid)
    killed = []

    def kill_one(model, iteration, loss):
        if not killed:                             # during the eigen-solve: the worker dies hard
            addr, pid = sorted(pids.items())[0]
            os.kill(pid, signal.SIGKILL)
            killed.append(addr)

    got = Cr5(callback=kill_one, **kw).fit_matrices(_dask_blocks(blocks), concepts, client=client)
    assert killed
    assert got.fit_info_["dask"]["n_workers"] >= 1
    client.wait_for_workers(2, timeout=60)
    # the same numbers to round-off (after the kill the surviving worker holds every chunk and
    # computes on the stacked chunks: another summation order); the components' signs are fixed
    np.testing.assert_allclose(got.eigenvalues_, ref.eigenvalues_, rtol=1e-12)
    for lang in blocks:
        np.testing.assert_allclose(got.components_[lang], ref.components_[lang], rtol=1e-10, atol=1e-12)


def _n_worker_copies():
    from linxling.operators._dask import _WORKER_COPIES
    return len(_WORKER_COPIES)


@pytest.mark.parametrize("placement, block_method, stop", [("auto", "cg", KeyboardInterrupt),
                                                           ("spread", "dense", RuntimeError)])
def test_an_interrupted_fit_leaves_nothing_on_the_workers(client, placement, block_method, stop):
    """A fit stopped during the eigen-solve (Ctrl-C, or any error) closed nothing: each worker
    kept its copies of the chunks (and their transposes) in its process until it restarted,
    as many more per interrupted fit. The client stays usable and the next fit is the same."""
    rng = np.random.default_rng(15)
    blocks, concepts = random_problem(rng, n_langs=2, n_concepts=40)
    kw = dict(n_components=4, block_method=block_method, eig_method="subspace", random_state=0, **TIGHT)

    def interrupt(model, iteration, loss):
        raise stop("stopped by the user")

    assert set(client.run(_n_worker_copies).values()) == {0}
    with pytest.raises(stop, match="stopped by the user"):
        Cr5(callback=interrupt, **kw).fit_matrices(_dask_blocks(blocks), concepts, client=client,
                                                   placement=placement)
    assert set(client.run(_n_worker_copies).values()) == {0}
    got = Cr5(**kw).fit_matrices(_dask_blocks(blocks), concepts, client=client, placement=placement)
    np.testing.assert_allclose(got.eigenvalues_, Cr5(**kw).fit_matrices(blocks, concepts).eigenvalues_,
                               rtol=1e-6)
    assert set(client.run(_n_worker_copies).values()) == {0}


def test_dask_bad_input_errors(client, monkeypatch):
    rng = np.random.default_rng(14)
    blocks, concepts = random_problem(rng, n_langs=2, n_concepts=30)
    dense_chunks = {"a": da.from_array(blocks["a"].toarray(), chunks=(10, -1)), "b": blocks["b"]}
    with pytest.raises(TypeError, match=r"blocks\['a'\] is a dask array with numpy.ndarray chunks; give scipy.sparse"):
        Cr5(n_components=3).fit_matrices(dense_chunks, concepts, client=client)
    by_cols = {"a": da.from_array(blocks["a"], chunks=(10, 7), asarray=False), "b": blocks["b"]}
    with pytest.raises(ValueError, match=r"chunked along rows only .*rechunk"):
        Cr5(n_components=3).fit_matrices(by_cols, concepts, client=client)
    short = dict(concepts, a=concepts["a"][:-1])
    with pytest.raises(ValueError, match=r"concepts\['a'\] has .* entries but blocks\['a'\] has"):
        Cr5(n_components=3).fit_matrices(_dask_blocks(blocks), short, client=client)
    bad = blocks["a"].copy()
    bad.data[2] = np.inf
    with pytest.raises(ValueError, match=r"blocks\['a'\] contains 1 non-finite"):
        Cr5(n_components=3).fit_matrices({"a": _dask_blocks({"a": bad})["a"], "b": blocks["b"]}, concepts,
                                         client=client)
    with pytest.raises(ValueError, match=r"client is for row-partitioned blocks.*every block is in memory"):
        Cr5(n_components=3).fit_matrices(blocks, concepts, client=client)     # as WMF: not ignored
    import distributed as dist

    def no_client(c=None):
        raise ValueError("No clients found")
    monkeypatch.setattr(dist, "default_client", no_client)
    with pytest.raises(ValueError, match="no dask.distributed client: pass client="):
        Cr5(n_components=3).fit_matrices(_dask_blocks(blocks), concepts)
    assert sp.issparse(blocks["a"])


def test_chunks_unlike_their_dask_array_are_named(client):
    """A chunk with fewer columns than its dask array says failed deep in the Woodbury operator
    ("mean must have shape (p,)"), one with fewer rows blamed the concept ids, and a dense chunk
    said "a chunk is a ndarray" without naming the language; b-WMF names all three."""
    rng = np.random.default_rng(14)
    blocks, concepts = random_problem(rng, n_langs=2, n_concepts=30)
    arr = da.from_array(blocks["a"], chunks=(10, -1), asarray=False)
    meta = sp.csr_matrix((0, 0))
    narrow = arr.map_blocks(lambda b: b[:, :-1] if b.shape[0] == 10 else b, meta=meta)
    short = arr.map_blocks(lambda b: b[:-1], meta=meta)
    dense = arr.map_blocks(lambda b: b.toarray(), meta=meta)
    kw = dict(n_components=3, block_method="dense", eig_method="subspace")
    p = blocks["a"].shape[1]
    with pytest.raises(ValueError, match=rf"blocks\['a'\] chunk 0 \(rows 0:10\) has shape \(10, {p - 1}\), "
                                         rf"but its dask array's chunks say \(10, {p}\)"):
        Cr5(**kw).fit_matrices({"a": narrow, "b": blocks["b"]}, concepts, client=client)
    with pytest.raises(ValueError, match=rf"blocks\['a'\] chunk \d+ \(rows \d+:\d+\) has shape \(\d+, {p}\), but"):
        Cr5(**kw).fit_matrices({"a": short, "b": blocks["b"]}, concepts, client=client)
    with pytest.raises(TypeError, match=r"blocks\['a'\] chunk \d+ \(rows \d+:\d+\) is a numpy.ndarray, "
                                        r"not a scipy.sparse matrix"):
        Cr5(**kw).fit_matrices({"a": dense, "b": blocks["b"]}, concepts, client=client)


def test_dask_source_products_and_retry_after_a_lost_worker(client, monkeypatch):
    """The source's products against SciPy; a product whose gather fails as if a worker died is
    submitted again with the same result (and counted in n_retries)."""
    from linxling.operators._dask import DaskSource
    rng = np.random.default_rng(15)
    X = sp.random(70, 25, density=0.2, random_state=rng, format="csr")
    src = DaskSource(da.from_array(X, chunks=(16, -1), asarray=False), client=client)
    assert src.shape == X.shape and src.nnz == X.nnz and src.n_chunks == 5
    # consecutive chunks on the same worker (a wish the source keeps by moving chunks the scheduler
    # put elsewhere): the chunk-order tree of partial sums crosses between workers only W - 1 times
    from linxling._dask import holders, worker_list
    ws = worker_list(client)
    on = [ws.index(h[0]) for h in holders(client, src._futures)]
    assert on == sorted(on) and sum(a != b for a, b in zip(on, on[1:], strict=False)) <= len(ws) - 1, on
    if len(ws) == 2:                  # wished the other way round: every chunk moves, once
        assert src._keep_wish(ws[::-1]) == len(on) and src._keep_wish(ws[::-1]) == 0
        assert [ws.index(h[0]) for h in holders(client, src._futures)] == [1 - w for w in on]
    np.testing.assert_allclose(src.gram_sparse().toarray(), (X.T @ X).toarray(), rtol=1e-12, atol=1e-14)
    V, sent = _products_and_a_retry(client, monkeypatch, src, X, rng)
    assert sent == V.nbytes      # counted once, when it succeeded


def test_dask_source_products_move_their_blocks_once(client):
    """Chunk by chunk on 2 workers, a Gram product's traffic is the minimum of its scheme: the
    block to one worker and from there to the other, one partial sum across, the sum to the
    client (4 blocks; through the scheduler it was 6, with each chunk's block of Xᵀ W in the
    task graph 8). The chunks are small next to the blocks, so copies of them barely count."""
    from linxling._dask import CommMeter, worker_list
    from linxling.operators._dask import DaskSource
    if len(worker_list(client)) != 2:
        pytest.skip("needs the module's 2 workers up")
    rng = np.random.default_rng(3)
    X = sp.random(4000, 20000, density=0.0005, random_state=rng, format="csr")
    src = DaskSource(da.from_array(X, chunks=(1000, -1), asarray=False), client=client)
    if src.local_worker() is not None:
        pytest.skip("every chunk landed on one worker: products run there whole")
    meter = CommMeter(client)
    V = rng.standard_normal((X.shape[1], 25))            # 4 MB
    W = rng.standard_normal((X.shape[0], 25))
    for product, arg, blocks in ((src.gram_matmat, V, 4), (src.rmatmat, W, 1 + 3 * V.nbytes / W.nbytes)):
        before = meter.read()
        product(arg)
        moved = meter.read() - before
        assert moved < (blocks + 0.5) * arg.nbytes, (product.__name__, moved / arg.nbytes)


def _products_and_a_retry(client, monkeypatch, src, X, rng):
    """``src``'s products against SciPy, then a Gram product whose first gather fails as if a
    worker died: submitted again, with the same result. Returns V and the bytes counted for it."""
    from distributed.scheduler import KilledWorker
    V, W = rng.standard_normal((X.shape[1], 3)), rng.standard_normal((X.shape[0], 3))
    np.testing.assert_allclose(src.matmat(V), X @ V, rtol=1e-12)
    np.testing.assert_allclose(src.rmatmat(W), X.T @ W, rtol=1e-12, atol=1e-12)
    ref = src.gram_matmat(V)
    np.testing.assert_allclose(ref, X.T @ (X @ V), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(src.column_sums(), np.asarray(X.sum(0)).ravel(), rtol=1e-12)
    if V.dtype == np.float64:
        got32 = src.gram_matmat(V.astype(np.float32))
        assert got32.dtype == np.float32
        np.testing.assert_allclose(got32, ref, rtol=1e-4, atol=1e-5)
    sent, retries = src.bytes_sent, src.n_retries
    gather = client.gather
    calls = []

    def flaky(futures, *a, **k):
        calls.append(1)
        if len(calls) == 1:
            raise KilledWorker("task", "tcp://lost", allowed_failures=0)
        return gather(futures, *a, **k)
    monkeypatch.setattr(client, "gather", flaky)
    np.testing.assert_array_equal(src.gram_matmat(V), ref)
    assert src.n_retries == retries + 1
    return V, src.bytes_sent - sent


def _worker_copies(client, src):
    """The worker-side copies of ``src`` on each worker."""
    from linxling.operators import _dask as mod
    token = src._token
    return client.run(lambda: sorted(str(k[1]) for k in mod._WORKER_COPIES if k[0] == token))


def test_dask_source_on_one_worker_solves_there(client):
    """Every chunk on one worker: products are one task on the stacked chunks and a Gram solve is
    one task (the fused in-memory block CG, run there), equal to the in-memory solve; the
    worker's copies are dropped by close()."""
    from linxling.operators._dask import DaskSource
    from linxling.operators.gram import GramBlockInverse
    rng = np.random.default_rng(16)
    X = sp.random(90, 30, density=0.2, random_state=rng, format="csr")
    w0 = worker_list(client)[0]
    src = DaskSource(da.from_array(X, chunks=(25, -1), asarray=False), client=client, workers=w0)
    assert src.local_worker() == w0 and src.n_chunks == 4
    V, W = rng.standard_normal((30, 4)), rng.standard_normal((90, 4))
    np.testing.assert_allclose(src.matmat(V), X @ V, rtol=1e-12)
    np.testing.assert_allclose(src.rmatmat(W), X.T @ W, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(src.gram_matmat(V), X.T @ (X @ V), rtol=1e-12, atol=1e-12)
    assert src.n_local == 3 and src.bytes_sent == V.nbytes + W.nbytes + V.nbytes
    R = rng.standard_normal((30, 6))
    kw = dict(method="cg", cg_rtol=1e-12, mixed_precision=False)
    inv, ref = GramBlockInverse(src, 0.7, **kw), GramBlockInverse(X, 0.7, **kw)
    got, want = inv.solve(R), ref.solve(R)
    assert got.info["where"] == "worker" and src.n_local == 4
    np.testing.assert_allclose(got.x, want.x, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got.x, np.linalg.solve((X.T @ X).toarray() + 0.7 * np.eye(30), R), rtol=1e-8)
    assert any(_worker_copies(client, src).values())
    src.close()
    assert not any(_worker_copies(client, src).values())


def test_dask_source_without_room_for_copies(client):
    """A worker near its memory limit keeps no copies: the products come from the chunks alone,
    with the same results (spread and stacked)."""
    from linxling.operators import _dask as mod
    from linxling.operators._dask import DaskSource
    rng = np.random.default_rng(17)
    X = sp.random(80, 20, density=0.25, random_state=rng, format="csr")
    V, W = rng.standard_normal((20, 3)), rng.standard_normal((80, 3))
    client.run(lambda: setattr(mod, "COPY_MEMORY_SHARE", 0.0))
    try:
        w0 = worker_list(client)[0]
        for workers in (None, w0):
            src = DaskSource(da.from_array(X, chunks=(30, -1), asarray=False), client=client, workers=workers)
            np.testing.assert_allclose(src.matmat(V), X @ V, rtol=1e-12)
            np.testing.assert_allclose(src.rmatmat(W), X.T @ W, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(src.gram_matmat(V), X.T @ (X @ V), rtol=1e-12, atol=1e-12)
            if workers is not None:
                R = rng.standard_normal((20, 2))
                d = np.asarray(X.multiply(X).sum(0)).ravel() + 0.5
                res = src.solve_local(R, 0.5, d, rtol=1e-12)
                assert np.all(res.converged)
                G = (X.T @ X).toarray() + 0.5 * np.eye(20)
                np.testing.assert_allclose(res.x, np.linalg.solve(G, R), rtol=1e-8, atol=1e-10)
            assert not any(_worker_copies(client, src).values())
            src.close()
    finally:
        client.run(lambda: setattr(mod, "COPY_MEMORY_SHARE", 0.5))


def test_dask_fit_on_one_worker_equals_in_memory_fit():
    """A 1-worker cluster holds every chunk: the inner block-CG solves run there whole; the fit
    equals the in-memory fit (tight tolerances) and sends per solve only right-hand sides and
    solutions."""
    rng = np.random.default_rng(18)
    blocks, concepts = random_problem(rng, n_langs=2, n_concepts=30)
    kw = dict(n_components=4, alpha=0.5, block_method="cg", eig_method="subspace", random_state=0, **TIGHT)
    ref = Cr5(**kw).fit_matrices(blocks, concepts)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as c:
        got = Cr5(**kw).fit_matrices(_dask_blocks(blocks), concepts, client=c)
    rec = got.fit_info_["dask"]
    assert rec["n_local"] == rec["n_products"] > 0
    np.testing.assert_allclose(got.eigenvalues_, ref.eigenvalues_, rtol=1e-6)
    for lang in blocks:
        np.testing.assert_allclose(got.components_[lang], ref.components_[lang], atol=1e-6)


@pytest.mark.parametrize("placement", ["auto", "spread"])
def test_dask_fit_places_languages_on_workers(client, placement):
    """With 2 workers and 2 languages, "auto" moves each language whole onto its own worker: every
    product and solve is one task there, and the fit equals the in-memory fit; "spread" leaves
    the chunks where the scheduler put them, with the same result."""
    rng = np.random.default_rng(19)
    blocks, concepts = random_problem(rng, n_langs=2, n_concepts=30)
    kw = dict(n_components=4, alpha=0.5, block_method="cg", eig_method="subspace", random_state=0, **TIGHT)
    ref = Cr5(**kw).fit_matrices(blocks, concepts)
    got = Cr5(**kw).fit_matrices(_dask_blocks(blocks, rows=15), concepts, client=client, placement=placement)
    rec = got.fit_info_["dask"]
    if placement == "auto":
        assert len(set(rec["placed_on"].values())) == 2 and None not in rec["placed_on"].values()
        assert rec["n_local"] == rec["n_products"] and rec["n_chunks"] == {"blocks['a']": 1, "blocks['b']": 1}
        assert "time_placement" in got.fit_info_
    else:
        assert set(rec["placed_on"].values()) == {None}
    np.testing.assert_allclose(got.eigenvalues_, ref.eigenvalues_, rtol=1e-6)
    for lang in blocks:
        np.testing.assert_allclose(got.components_[lang], ref.components_[lang], atol=1e-6)
    with pytest.raises(ValueError, match="placement must be 'auto' or 'spread'"):
        Cr5(**kw).fit_matrices(_dask_blocks(blocks), concepts, client=client, placement="everywhere")


# ---------------------------------------------------------------------------------------------
# a corpus on disk, read by the workers per product (DaskDiskSource): nothing kept on a worker
# ---------------------------------------------------------------------------------------------

def _disk_blocks(blocks, tmp_path, chunk_rows=8, transpose=True):
    from linxling.io import ChunkedCSR, write_chunks
    out = {}
    for lang, X in blocks.items():
        path = tmp_path / f"{lang}.h5"
        write_chunks(path, X, chunk_rows=chunk_rows, transpose=transpose)
        out[lang] = ChunkedCSR(path)
    return out


@pytest.mark.parametrize("transpose", [True, False])
def test_disk_source_products_and_retry_after_a_lost_worker(client, tmp_path, monkeypatch, transpose):
    """Each task reads its rows from the file on a worker: the products against SciPy (with the
    stored transpose, and by per-range scatters summed on the workers without it), in float64 and
    cast to float32; a product whose gather fails as if a worker died is submitted again, with the
    same result."""
    from linxling.operators._dask import DaskDiskSource
    rng = np.random.default_rng(21)
    X = sp.random(70, 25, density=0.2, random_state=rng, format="csr")
    chunked = _disk_blocks({"a": X}, tmp_path, chunk_rows=10, transpose=transpose)["a"]
    src = DaskDiskSource(chunked, client=client, read_bytes=1)       # one stored chunk per task
    assert src.shape == X.shape and src.nnz == X.nnz and src.n_chunks == 7 and src.kind == "dask"
    V, sent = _products_and_a_retry(client, monkeypatch, src, X, rng)
    # Xᵀ(X V) is one product: each task's X_iᵀ(X_i V) summed on the workers, so V goes out once
    # and one p × m block comes back (no n × m block travels)
    assert src.n_products == 5 and sent == V.nbytes
    kind, _, cols, _, _, out_bytes, in_bytes = src.product_log[-1]
    assert (kind, cols, out_bytes, in_bytes) == ("gram", V.shape[1], V.nbytes, X.shape[1] * V.shape[1] * 8)


def test_disk_source_groups_ranges_per_worker_and_solves_on_one(client, tmp_path, monkeypatch):
    """Consecutive ranges are grouped per worker (one task each, a summed product's subtrees
    added there): the sum is the pairwise tree over the ranges wherever they ran, bitwise equal
    to every range alone. A whole block-CG solve is one task on one worker reading the file:
    equal to the same solve streamed in this process, bitwise, and to a dense solve; retried
    when its gather fails as if a worker died; None when no worker's memory limit could hold it;
    an error when the file was rewritten."""
    import linxling._dask as ldask
    from linxling.io import ChunkedCSR
    from linxling.operators import _dask as mod
    from linxling.operators._dask import DaskDiskSource
    from linxling.operators._source import ChunkedSource
    from linxling.operators.gram import SourceGram
    from linxling.solvers.cg import jacobi_block_cg, krylov_block_cg
    rng = np.random.default_rng(25)
    X = sp.random(90, 30, density=0.2, random_state=rng, format="csr")
    for transpose in (True, False):
        (tmp_path / str(transpose)).mkdir()
        chunked = _disk_blocks({"a": X}, tmp_path / str(transpose), chunk_rows=10, transpose=transpose)["a"]
        src = DaskDiskSource(chunked, client=client, read_bytes=1)       # 9 ranges over 2 workers
        V, W = rng.standard_normal((30, 4)), rng.standard_normal((90, 4))
        grouped = (src.gram_matmat(V), src.matmat(V), src.rmatmat(W))
        with monkeypatch.context() as m:        # no worker known: every range its own task
            m.setattr(mod, "worker_list", lambda _c: [])
            alone = (src.gram_matmat(V), src.matmat(V), src.rmatmat(W))
        for a, b in zip(grouped, alone, strict=True):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(grouped[0], X.T @ (X @ V), rtol=1e-12, atol=1e-12)

    alpha = 0.7
    R, d = rng.standard_normal((30, 3)), np.asarray(X.multiply(X).sum(0)).ravel() + alpha
    src = DaskDiskSource(ChunkedCSR(tmp_path / "True" / "a.h5"), client=client, read_bytes=1)
    dense = np.linalg.solve((X.T @ X).toarray() + alpha * np.eye(30), R)
    for krylov, solver in (("columns", jacobi_block_cg), ("block", krylov_block_cg)):
        got = src.solve_local(R, alpha, d, rtol=1e-12, maxiter=500, krylov=krylov)
        here = solver(SourceGram(ChunkedSource(src.chunked, np.float64, src.read_bytes), alpha), R, d,
                      rtol=1e-12, maxiter=500)
        np.testing.assert_array_equal(got.x, here.x)
        np.testing.assert_allclose(got.x, dense, rtol=1e-8, atol=1e-10)
    assert src.n_local == 2 and src.product_log[-1][:4] == ("solve", "local", 3, got.n_iter)

    from distributed.scheduler import KilledWorker
    gather, calls = client.gather, []

    def flaky(futures, *a, **k):
        calls.append(1)
        if len(calls) == 1:
            raise KilledWorker("task", "tcp://lost", allowed_failures=0)
        return gather(futures, *a, **k)
    with monkeypatch.context() as m:
        m.setattr(client, "gather", flaky)
        again = src.solve_local(R, alpha, d, rtol=1e-12, maxiter=500, krylov="block")
    np.testing.assert_array_equal(again.x, got.x)
    assert src.n_retries == 1
    limits = ldask.worker_memory_limits
    with monkeypatch.context() as m:        # workers of 1 kB: the solve stays with the caller
        m.setattr(ldask, "worker_memory_limits", lambda c: dict.fromkeys(limits(c), 1000))
        assert src.solve_local(R, alpha, d, rtol=1e-12) is None
    from linxling.io import write_chunks
    write_chunks(tmp_path / "True" / "a.h5", 2 * X, chunk_rows=10, overwrite=True)
    with pytest.raises(RuntimeError, match="was rewritten since it was opened"):
        src.solve_local(R, alpha, d, rtol=1e-12)


def test_disk_source_errors(client, tmp_path):
    """A file the workers cannot open, or one rewritten since it was opened, is a clear error."""
    from linxling.io import ChunkedCSR, write_chunks
    from linxling.operators._dask import DaskDiskSource, _disk_check
    rng = np.random.default_rng(22)
    X = sp.random(30, 10, density=0.3, random_state=rng, format="csr")
    path = tmp_path / "x.h5"
    write_chunks(path, X, chunk_rows=10)
    chunked = ChunkedCSR(path)
    src = DaskDiskSource(chunked, client=client)
    write_chunks(path, 2 * X, chunk_rows=10, overwrite=True)            # a new generation
    with pytest.raises(RuntimeError, match="was rewritten since it was opened"):
        src.matmat(np.ones((10, 2)))
    with pytest.raises(RuntimeError, match=r"was rewritten since it was opened .* open it again"):
        DaskDiskSource(chunked, client=client, name="blocks['a']")      # its transpose, read here
    rows_only = tmp_path / "rows.h5"                 # no transpose: the workers' check finds it
    write_chunks(rows_only, X, chunk_rows=10, transpose=False)
    opened = ChunkedCSR(rows_only)
    write_chunks(rows_only, 2 * X, chunk_rows=10, transpose=False, overwrite=True)
    with pytest.raises(ValueError, match=r"blocks\['a'\]: every dask worker must read the corpus file .*"
                                         r"holds another version"):
        DaskDiskSource(opened, client=client, name="blocks['a']")
    # a file damaged after it was opened (h5py: a bare OSError) fails at once, not as a lost worker
    src = DaskDiskSource(ChunkedCSR(path), client=client)
    path.write_bytes(b"not an HDF5 file any more" * 100)
    from linxling._dask import CorpusReadError
    with pytest.raises(CorpusReadError, match="from the corpus file .* on a dask worker failed"):
        src.matmat(np.ones((10, 2)))
    assert src.n_retries == 0
    # what a worker that cannot see the file reports (the client can, here: checked on its own)
    assert _disk_check(str(tmp_path / "elsewhere.h5"), chunked.generation).startswith("cannot open it")
    write_chunks(path, X, chunk_rows=10, overwrite=True)
    assert _disk_check(str(path), ChunkedCSR(path).generation) == ""


@pytest.mark.parametrize("block_method", ["dense", "cg"])
def test_disk_fit_survives_a_killed_worker(client, tmp_path, block_method):
    """A worker killed hard during the eigen-solve: the product or whole block-CG solve it was in
    is submitted again (the data are in the file, not on the worker) and the fit gives the same
    numbers."""
    rng = np.random.default_rng(24)
    blocks, concepts = random_problem(rng, n_langs=2, n_concepts=60)
    kw = dict(n_components=5, alpha=0.5, block_method=block_method, eig_method="subspace", random_state=0,
              **TIGHT)
    files = _disk_blocks(blocks, tmp_path)
    ref = Cr5(**kw).fit_matrices(files, concepts, client=client)
    pids = client.run(os.getpid)
    killed = []

    def kill_one(model, iteration, loss):
        if not killed:
            addr, pid = sorted(pids.items())[0]
            os.kill(pid, signal.SIGKILL)
            killed.append(addr)

    got = Cr5(callback=kill_one, **kw).fit_matrices(files, concepts, client=client)
    assert killed
    client.wait_for_workers(2, timeout=60)
    # every product is a row-parallel gather: the same numbers wherever the tasks ran
    np.testing.assert_array_equal(got.eigenvalues_, ref.eigenvalues_)
    for lang in blocks:
        np.testing.assert_array_equal(got.components_[lang], ref.components_[lang])


@pytest.mark.parametrize("eig_method", ["subspace", "lobpcg"])
def test_dask_fit_in_feature_space_equals_the_closed_form(client, eig_method):
    """eig_space="features" with the blocks on the workers: the dense closed form (subspace
    iteration with dense block factors; LOBPCG on the pencil, X̂ᵀX̂ + λI from the workers)."""
    rng = np.random.default_rng(12)
    blocks, concepts = random_problem(rng, n_langs=2, n_concepts=60)
    r, alpha = 4, 0.5
    Phi, sv, _ = dense_cr5_oracle(blocks, concepts, r, alpha)
    got = Cr5(n_components=r, alpha=alpha, block_method="dense", eig_space="features", eig_method=eig_method,
              random_state=0, **TIGHT).fit_matrices(_dask_blocks(blocks), concepts, client=client)
    assert got.fit_info_["sources"] == {"a": "dask", "b": "dask"}
    assert got.fit_info_["memory_plan"]["eig_space"] == "features"
    np.testing.assert_allclose(got.singular_values_, sv, rtol=1e-6)
    for lang, P in _projectors(got).items():
        np.testing.assert_allclose(P, Phi[lang].T @ Phi[lang], atol=1e-6)
