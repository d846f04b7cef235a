"""WMF / b-WMF on a dask.distributed LocalCluster of processes against the in-memory fit."""
from __future__ import annotations

import logging
import os
import signal

import numpy as np
import pytest
import scipy.sparse as sp
from _corpora import sentence_matrix

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from linxling._dask import CommMeter, WorkerLost, gather_watching, get_client, kernel_threads, retry_lost  # noqa: E402
from linxling.io import write_chunks  # noqa: E402
from linxling.models._als_dask import _dask_stack, _tiles  # noqa: E402
from linxling.models._als_dask import balanced_ranges as _balanced_ranges  # noqa: E402
from linxling.models.wmf import WMF, BilingualWMF  # noqa: E402


@pytest.fixture(scope="module")
def client():
    """One cluster of two single-threaded worker processes for the module; not the default
    client (so that a fit without ``client=`` has none to find)."""
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", silence_logs=logging.ERROR)
    c = distributed.Client(cluster, set_as_default=False)
    yield c
    c.close()
    cluster.close()


def _corpus(n=240, m=70, seed=0, dtype=np.float64, density=0.1):
    return sentence_matrix(n, m, seed=seed, dtype=dtype, density=density, empty_row=5, empty_col=2)


def _dask(X, rows=50):
    return da.from_array(X, chunks=(rows, -1), asarray=False)


def _same(a, b, tol):
    """Each row's solve is the same arithmetic in both fits; only the kernels' fastmath
    reductions may round the last bits differently for differently aligned arrays."""
    err = np.linalg.norm(a - b) / np.linalg.norm(b)
    assert err <= tol, err


KW = dict(n_components=5, alpha=0.5, missing_weight=0.05, max_iter=4, random_state=0,
          show_progress=False)


@pytest.mark.parametrize("solver", ["cg", "cholesky"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_wmf_dask_equals_in_memory(client, solver, dtype):
    X = _corpus(dtype=dtype)
    ref = WMF(solver=solver, **KW).fit(X)
    got = WMF(solver=solver, **KW).fit(_dask(X, rows=37), client=client)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    assert got.embedding_.dtype == dtype and got.components_.dtype == dtype
    _same(got.embedding_, ref.embedding_, tol)
    _same(got.components_, ref.components_, tol)
    np.testing.assert_allclose(got.loss_curve_, ref.loss_curve_, rtol=tol)
    assert got.n_iter_ == 4 and got.n_features_in_ == X.shape[1]
    info = got.fit_info_["dask"]
    assert got.dask_info_ is info and got.fit_info_["sources"] == {"X": "dask"}    # the old name: an alias
    assert info["n_workers"] == 2 and info["row_blocks"] == 7 and info["nnz"] == X.nnz
    np.testing.assert_allclose(got.transform(X[:6]), ref.transform(X[:6]), rtol=tol, atol=tol)


def test_wmf_dask_pushes_frequent_words_where_their_block_is(client):
    """Words with 128+ nonzeros (the default threshold) are pushed on the workers from a compact
    transposed copy of their column block, as the in-memory fit pushes them from the stacked rows."""
    X = _corpus(n=900, m=60, seed=4, density=0.25)
    from linxling.kernels import als
    assert als.hot_rows(np.diff(X.tocsc().indptr), KW["n_components"], X.dtype) is not None
    ref = WMF(**KW).fit(X)
    got = WMF(**KW).fit(_dask(X, rows=300), client=client)
    _same(got.embedding_, ref.embedding_, 1e-10)
    _same(got.components_, ref.components_, 1e-10)
    prefixes = client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.task_prefixes))
    assert "dask_hot_plan" in prefixes          # (the scheduler drops the leading underscore)


def test_wmf_dask_tight_tolerance_and_given_init(client):
    X = _corpus(n=180, m=60, seed=3)
    rng = np.random.default_rng(1)
    P0 = rng.standard_normal((6, 60))
    kw = dict(KW, n_components=6, max_iter=12, cg_steps=6)
    ref = WMF(**kw).fit(X, init_components=P0)
    got = WMF(**kw).fit(_dask(X, rows=45), init_components=P0, client=client)
    _same(got.embedding_, ref.embedding_, 1e-6)      # the goal (met with margin: 1e-10)
    _same(got.components_, ref.components_, 1e-10)


def test_bwmf_dask_equals_in_memory(client):
    X = _corpus(seed=0)
    Y = _corpus(m=55, seed=1)
    A0 = np.random.default_rng(2).standard_normal((5, 55))
    ref = BilingualWMF(**KW).fit({"en": X, "it": Y}, init_components={"it": A0})
    got = BilingualWMF(**KW).fit({"en": _dask(X, 60), "it": _dask(Y, 60)},
                                 init_components={"it": A0}, client=client)
    assert got.languages_ == ["en", "it"]
    _same(got.embedding_, ref.embedding_, 1e-10)
    for lang in ("en", "it"):
        _same(got.components_[lang], ref.components_[lang], 1e-10)
    np.testing.assert_allclose(got.loss_curve_, ref.loss_curve_, rtol=1e-10)
    np.testing.assert_allclose(got.transform(Y[:4], "it"), ref.transform(Y[:4], "it"), rtol=1e-8, atol=1e-12)



def test_row_chunks_of_no_rows_are_left_out(client):
    """A dask array with a chunk of no rows (a filtered array, dask.array.concatenate) failed
    with "X chunk 1 (rows 120:120) is empty" (Cr5 fitted it); such chunks hold nothing to solve."""
    X = _corpus(seed=0)
    Y = _corpus(m=55, seed=1)
    rows = (120, 0, 80, 0, 40)
    ref = BilingualWMF(**KW).fit({"en": X, "it": Y})
    got = BilingualWMF(**KW).fit({"en": da.from_array(X, chunks=(rows, 70), asarray=False),
                                  "it": da.from_array(Y, chunks=(rows, 55), asarray=False)}, client=client)
    _same(got.embedding_, ref.embedding_, 1e-10)
    assert got.dask_info_["row_blocks"] == 3

@pytest.mark.filterwarnings("ignore:write_chunks. memory_budget:UserWarning")   # a tiny budget on purpose
def test_chunked_corpus_on_the_cluster(client, tmp_path):
    X = _corpus(seed=4)
    Y = _corpus(m=40, seed=5)
    cx = write_chunks(tmp_path / "x.h5", X, chunk_rows=55, memory_budget=2000)
    cy = write_chunks(tmp_path / "y.h5", Y, chunk_rows=30)
    ref = WMF(**KW).fit(X)
    got = WMF(**KW).fit(cx, client=client)
    _same(got.embedding_, ref.embedding_, 1e-10)
    _same(got.components_, ref.components_, 1e-10)
    assert got.dask_info_["row_blocks"] == cx.n_chunks and got.dask_info_["col_blocks"] == cx.T.n_chunks
    refb = BilingualWMF(**KW).fit({"en": X, "it": Y})
    gotb = BilingualWMF(**KW).fit({"en": cx, "it": cy}, client=client)
    _same(gotb.embedding_, refb.embedding_, 1e-10)
    _same(gotb.components_["it"], refb.components_["it"], 1e-10)


def test_a_chunked_corpus_by_a_relative_path_is_read_by_the_workers(client, tmp_path, monkeypatch):
    """The workers read a ChunkedCSR at the path the client held: a relative one was resolved
    against each worker's own working directory (FileNotFoundError from h5py on a worker), and
    a worker that cannot open the file was found by its first task; now the path is absolute and
    every worker is asked once, before any task, as Cr5 does."""
    X = _corpus(seed=4)
    monkeypatch.chdir(tmp_path)                 # the workers started elsewhere (the module's cwd)
    assert tmp_path.as_posix() not in set(client.run(os.getcwd).values())
    cx = write_chunks("x.h5", X, chunk_rows=55)
    assert not cx.path.is_absolute()
    got = WMF(**KW).fit(cx, client=client)
    _same(got.embedding_, WMF(**KW).fit(X).embedding_, 1e-10)
    import linxling.operators._dask as odask

    def unseen(path, generation):
        return f"cannot open it (no {path} here)"
    monkeypatch.setattr(odask, "_disk_check", unseen)
    with pytest.raises(ValueError, match=r"X: every dask worker must read the corpus file '/.*x.h5' at "
                                         r"that path .*: cannot open it"):
        WMF(**KW).fit(cx, client=client)


def test_callback_sees_current_factors_and_bytes(client):
    """Each half-step's fixed factor is assembled on each worker from the other side's solved
    blocks, so each block goes once to the worker that lacks it (2 workers: each factor once
    per iteration), and the solved blocks come back to the client: the payload is counted by
    the fit and checked against distributed's own TCP writes."""
    X = _corpus(n=3000, m=600, density=0.1, seed=6)
    k, n, m, W = 4, 3000, 600, 2
    seen = []
    meter = CommMeter(client)
    marks = []

    def cb(model, it, loss):
        seen.append((it, loss, model.embedding_.copy(), model.components_.copy()))
        marks.append(meter.read())

    model = WMF(**dict(KW, n_components=k, max_iter=4), callback=cb).fit(_dask(X, 500), client=client)
    ref = WMF(**dict(KW, n_components=k, max_iter=2)).fit(X)
    it, loss, E1, P1 = seen[1]
    _same(E1, ref.embedding_, 1e-10)
    _same(P1, ref.components_, 1e-10)
    assert loss == pytest.approx(ref.loss_curve_[1], rel=1e-10)
    info = model.dask_info_
    nb, nc = info["row_blocks"], info["col_blocks"]
    factors = (n + m) * k * 8
    # blocks between the workers (each a (rows, objective) pair) + the solved blocks gathered +
    # each half-step's Gram to each worker
    moved = factors + 8 * (nb + nc)
    expected = moved + factors + 8 * (nb + nc) + 2 * W * k * k * 8
    assert (W - 1) * factors < expected - factors < W * factors     # was W + 1 factors in all
    assert info["payload_bytes_per_iteration"][1:] == [expected] * 3
    # the first iteration sends the initial V from the client to every worker instead of its
    # blocks between the workers, and the initial factors as warm starts (later the blocks' own
    # previous results, on their workers, are used)
    assert info["payload_bytes_per_iteration"][0] == (expected - (m * k * 8 + 8 * nc) + W * m * k * 8
                                                      + W * (n + m) * k * 8)
    # iterations 2, 3, 4: the factors plus task messages, heartbeats and the meter's own reads
    # (≈ 65 KiB here); one data block moved (≈ 0.35 MiB of X or Xᵀ) would exceed the margin
    measured = np.diff(marks)
    block_bytes = X.nnz * 12 // nb
    assert block_bytes > 300_000
    assert np.all(measured >= expected), (measured, expected)
    assert np.all(measured < expected + 192 * 1024), (measured, expected)


def test_no_client_and_bad_client(client):
    X = _dask(_corpus())
    with pytest.raises(ValueError, match="no dask.distributed client: pass client="):
        WMF(**KW).fit(X)
    with pytest.raises(TypeError, match="client must be a dask.distributed.Client"):
        WMF(**KW).fit(X, client="tcp://nowhere:1")
    with pytest.raises(ValueError, match="client is for row-partitioned data"):
        WMF(**KW).fit(_corpus(), client=client)
    with pytest.raises(ValueError, match="client is for row-partitioned data"):
        BilingualWMF(**KW).fit({"a": _corpus(), "b": _corpus()}, client=client)
    with pytest.raises(ValueError, match="memory_budget applies"):
        WMF(**KW).fit(X, client=client, memory_budget="1G")
    assert get_client(client) is client


def test_workers_without_this_linxling_are_an_error_not_a_hang():
    """A worker process that cannot import linxling failed to read the fit's first task (its comm
    broke, its nanny restarted it) and the fit waited forever; a worker with another linxling ran
    other code under the same names. Now an ImportError at once that names the workers (WMF and
    Cr5)."""
    from linxling import Cr5

    def without():                    # nested: pickled by value, runs in the worker process
        import sys
        for key in [k for k in sys.modules if k == "linxling" or k.startswith("linxling.")]:
            del sys.modules[key]
        sys.modules["linxling"] = None        # import linxling: ModuleNotFoundError

    def another():
        import sys
        import types
        sys.modules["linxling"] = types.SimpleNamespace(__version__="0.0.1")
    X = _corpus()
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  silence_logs=logging.ERROR) as cluster, \
            distributed.Client(cluster, set_as_default=False) as c:
        c.run(without)
        with pytest.raises(ImportError, match=r"client: 1 of 1 dask workers cannot import linxling \(e.g. tcp://"):
            WMF(**KW).fit(_dask(X), client=c)
        with pytest.raises(ImportError, match="cannot import linxling"):
            Cr5(n_components=3).fit_matrices({"a": _dask(X), "b": X}, {"a": np.arange(240), "b": np.arange(240)},
                                             client=c)
        c.run(another)
        with pytest.raises(ImportError, match=r"1 of 1 dask workers run another linxling \(e.g. .*'0.0.1'\)"):
            WMF(**KW).fit(_dask(X), client=c)


def test_a_sparse_dask_array_given_to_transform_is_named():
    """The fits take a dask array of CSR chunks; transform (and the other methods that take a
    matrix) said "got an object array that does not convert to numbers"."""
    X = _corpus()
    model = WMF(**KW).fit(X)
    with pytest.raises(TypeError, match=r"X is a dask array of scipy.sparse chunks, .* \(X.compute\(\)\)"):
        model.transform(_dask(X))
    np.testing.assert_array_equal(model.transform(_dask(X).compute()), model.transform(X))


def test_a_cluster_without_workers_is_an_error_not_a_hang():
    """A LocalCluster with no workers and no adapt(): the fit's tasks waited forever; now a
    ValueError at once (WMF and Cr5). A cluster that gets a worker later is waited on."""
    from linxling import Cr5
    X = _corpus()
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None,
                                  silence_logs=logging.ERROR) as cluster, \
            distributed.Client(cluster, set_as_default=False) as empty:
        with pytest.raises(ValueError, match="client's cluster has no workers"):
            WMF(**KW).fit(_dask(X), client=empty)
        with pytest.raises(ValueError, match="client's cluster has no workers"):
            Cr5(n_components=3).fit_matrices({"a": _dask(X), "b": X}, {"a": np.arange(240), "b": np.arange(240)},
                                             client=empty)
        cluster.adapt(minimum=1, maximum=1)          # a worker joins later: waited for
        model = WMF(**KW).fit(_dask(X), client=empty)
        np.testing.assert_allclose(model.components_, WMF(**KW).fit(X).components_, rtol=1e-6, atol=1e-9)


def test_a_cluster_whose_worker_comes_late_is_waited_on_with_a_warning(monkeypatch):
    """A cluster that has no worker yet (an adaptive one at minimum 0 here, a batch queue in
    practice): the fit warns after WORKER_WAIT_S and goes on waiting until a worker joins."""
    import threading

    import linxling._dask as ldask
    monkeypatch.setattr(ldask, "WORKER_WAIT_S", 0.5)
    X = _corpus()
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None,
                                  silence_logs=logging.ERROR) as cluster, \
            distributed.Client(cluster, set_as_default=False) as late:
        cluster.adapt(minimum=0, maximum=1)
        timer = threading.Timer(1.5, lambda: cluster.adapt(minimum=1, maximum=1))
        timer.start()
        try:
            with pytest.warns(RuntimeWarning, match="has had no worker for 0.5 s; the fit waits"):
                model = WMF(**KW).fit(_dask(X), client=late)
        finally:
            timer.cancel()
    np.testing.assert_allclose(model.components_, WMF(**KW).fit(X).components_, rtol=1e-6, atol=1e-9)


def test_bad_dask_input_is_named(client):
    X = _corpus()
    with pytest.raises(TypeError, match=r"X is a dask array with numpy.ndarray chunks; give scipy.sparse"):
        WMF(**KW).fit(da.from_array(X.toarray(), chunks=(50, -1)), client=client)
    with pytest.raises(ValueError, match=r"chunked along rows only .*rechunk\(\{1: -1\}\)"):
        WMF(**KW).fit(da.from_array(X, chunks=(50, 30), asarray=False), client=client)
    # a chunk that is not what the array says: dense despite a sparse meta, or too few columns
    dense_inside = _dask(X).map_blocks(lambda b: b.toarray(), meta=sp.csr_matrix((0, 0)))
    with pytest.raises(TypeError, match=r"X chunk 0 \(rows 0:50\) is a numpy.ndarray, not a scipy.sparse"):
        WMF(**KW).fit(dense_inside, client=client)
    narrow = _dask(X).map_blocks(lambda b: b[:, :-1] if b.shape[0] == 40 else b,
                                 meta=sp.csr_matrix((0, 0)))
    with pytest.raises(ValueError, match=r"X chunk 4 \(rows 200:240\) has shape \(40, 69\), but its "
                                         r"dask array's chunks say \(40, 70\)"):
        WMF(**KW).fit(narrow, client=client)
    neg = X.copy()
    neg.data[-1] = -1.0
    with pytest.raises(ValueError, match=r"X chunk 4 \(rows 200:240\).*negative"):
        WMF(**KW).fit(_dask(neg), client=client)
    with pytest.raises(ValueError, match="X is all zero"):
        WMF(**KW).fit(_dask(sp.csr_matrix((100, 20))), client=client)
    with pytest.raises(ValueError, match="n_components=5 is larger than the vocabulary of X"):
        WMF(**KW).fit(_dask(X[:, :4]), client=client)
    with pytest.raises(ValueError, match=r"X\['b'\] has row chunks .* same row chunks"):
        BilingualWMF(**KW).fit({"a": _dask(X, 50), "b": _dask(X, 60)}, client=client)
    with pytest.raises(ValueError, match=r"X\['b'\] has 200 rows but X\['a'\] has 240"):
        BilingualWMF(**KW).fit({"a": _dask(X), "b": _dask(X[:200])}, client=client)
    with pytest.raises(TypeError, match=r"X\['b'\] is a csr_matrix; with a dask array in X every"):
        BilingualWMF(**KW).fit({"a": _dask(X), "b": X}, client=client)


def test_unknown_chunk_sizes_are_named(client):
    """A dask array of unknown chunk sizes (e.g. rows selected by a dask mask) failed in WMF with
    "cannot convert float NaN to integer"; Cr5 already named it."""
    X = _corpus()
    masked = _dask(X)[da.from_array(np.ones(X.shape[0], dtype=bool), chunks=50)]
    assert np.isnan(masked.shape[0])
    with pytest.raises(ValueError, match=r"X has unknown chunk sizes; call X.compute_chunk_sizes\(\) first"):
        WMF(**KW).fit(masked, client=client)
    with pytest.raises(ValueError, match=r"X\['b'\] has unknown chunk sizes"):
        BilingualWMF(**KW).fit({"a": _dask(X), "b": masked}, client=client)


def test_other_dask_collections_are_named_not_taken_for_in_memory_data(client):
    """A dask Bag or Delayed (a DataFrame alike) is not a dask array: with client= the error said
    "X is in memory", a Delayed failed with "Truth of Delayed objects is not supported", and a
    Bag of texts without a client was computed on this machine unasked."""
    import dask
    import dask.bag as db
    X = _corpus()
    bag = db.from_sequence(["the cat sat", "a dog ran", "the dog sat"] * 40, npartitions=4)
    lazy = dask.delayed(sp.csr_matrix)(X)
    for given, what in ((bag, r"dask\.bag\.core\.Bag"), (lazy, r"dask\.delayed\.Delayed")):
        for kw in ({}, {"client": client}):
            with pytest.raises(TypeError, match=rf"^X is a {what}, not a dask array: .*X\.compute\(\)"):
                WMF(**KW).fit(given, **kw)
        with pytest.raises(TypeError, match=rf"^X\['b'\] is a {what}, not a dask array"):
            BilingualWMF(**KW).fit({"a": _dask(X), "b": given}, client=client)
    # Cr5 alike ("Cannot interpret 'Delayed(...)' as a data type" before)
    from linxling import Cr5
    concepts = {"a": np.arange(X.shape[0]), "b": np.arange(X.shape[0])}
    with pytest.raises(TypeError, match=r"^blocks\['b'\] is a dask\.delayed\.Delayed, not a dask array"):
        Cr5(n_components=3).fit_matrices({"a": X, "b": lazy}, concepts)


def test_a_complex_dask_array_is_refused_before_any_task():
    """Complex values were refused by each chunk's task on the workers (each logging its
    traceback); the array's dtype says it at once, before a client is looked for."""
    X = _dask(_corpus().astype(np.complex128))
    with pytest.raises(ValueError, match=r"^Complex data not supported: X has dtype complex128"):
        WMF(**KW).fit(X)
    with pytest.raises(ValueError, match=r"^Complex data not supported: X\['b'\] has dtype complex128"):
        BilingualWMF(**KW).fit({"a": _dask(_corpus()), "b": X})


def _keys_on_workers(client):
    return {k for keys in client.has_what().values() for k in keys}


def test_an_interrupted_fit_lets_go_of_its_blocks(client, monkeypatch):
    """Ctrl-C during a half-step: the blocks of X and Xᵀ (and the solved blocks) stayed on the
    workers for as long as the traceback lived (an interactive session keeps the last one in
    sys.last_traceback), since the interrupted frames still referred to them. What the frames
    may still hold is the interrupted half-step's dense inputs (its fixed factor and Gram)."""
    import time

    import linxling._dask as ldask
    X = _corpus()
    before = _keys_on_workers(client)
    original, calls = ldask.gather_watching, [0]

    def interrupted(c, futures, watch, **kw):      # the third gather is interrupted, as Ctrl-C would
        calls[0] += 1
        if calls[0] == 3:
            c.cancel(list(futures))                # what gather_watching does on its way out
            raise KeyboardInterrupt
        return original(c, futures, watch, **kw)

    monkeypatch.setattr(ldask, "gather_watching", interrupted)
    with pytest.raises(KeyboardInterrupt) as kept:     # the traceback kept, as a session would
        WMF(**KW).fit(_dask(X), client=client)
    assert kept.tb is not None and calls[0] == 3
    blocks = ("_dask_row_block", "_dask_assemble", "_dask_solve", "_dask_hot_plan")

    def left():
        return [k for k in _keys_on_workers(client) - before if str(k).startswith(blocks)]

    deadline = time.monotonic() + 10
    while left() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left()
    monkeypatch.setattr(ldask, "gather_watching", original)
    _same(WMF(**KW).fit(_dask(X), client=client).embedding_, WMF(**KW).fit(X).embedding_, 1e-6)


def test_balanced_ranges():
    counts = np.array([5, 0, 0, 9, 1, 1, 1, 30, 2, 0])
    for nb in (1, 2, 3, 4, 10, 20):
        r = _balanced_ranges(counts, nb)
        assert r[0][0] == 0 and r[-1][1] == 10 and len(r) <= nb
        assert all(a < b for a, b in r) and all(r[i][1] == r[i + 1][0] for i in range(len(r) - 1))


def _sleep_then(x, seconds):
    import time
    time.sleep(seconds)
    if x is None:
        raise ValueError("a task's own error")
    return x


def test_gather_watching_fetches_each_result_when_it_is_done(client, monkeypatch):
    """A finished task's result is fetched while the others still run (its transfer overlaps
    their work); the results come back in the order of the futures."""
    calls = []
    real = client.gather

    def recording(futs, **kw):
        calls.append([f.key for f in futs])
        return real(futs, **kw)

    monkeypatch.setattr(client, "gather", recording)
    slow = client.submit(_sleep_then, "slow", 1.5, pure=False)
    fast = client.submit(_sleep_then, "fast", 0.0, pure=False)
    assert gather_watching(client, [slow, fast], [], poll_s=0.05) == ["slow", "fast"]
    assert calls[0] == [fast.key] and calls[-1] == [slow.key]


def test_gather_watching_gives_up_when_data_is_lost_and_passes_task_errors(client):
    data = client.scatter(np.arange(3), hash=False)
    slow = client.submit(_sleep_then, 1, 5.0, pure=False)
    client.cancel([data])                  # as a block lost with its worker
    with pytest.raises(WorkerLost, match="was lost"):
        gather_watching(client, [slow], [data], poll_s=0.01)
    assert slow.status == "cancelled"      # not left running on the cluster
    bad = client.submit(_sleep_then, None, 0.0, pure=False)
    slow = client.submit(_sleep_then, 1, 5.0, pure=False)
    with pytest.raises(ValueError, match="own error"):
        gather_watching(client, [slow, bad], [], poll_s=0.01)
    assert slow.status == "cancelled"


def test_fixed_factor_assembled_from_solved_blocks():
    blocks = [(np.full((2, 3), i, dtype=np.float32), 0.5) for i in range(3)]
    Y = _dask_stack(*blocks)
    assert Y.shape == (6, 3) and Y.dtype == np.float32 and Y.flags.c_contiguous
    np.testing.assert_array_equal(Y[:, 0], [0, 0, 1, 1, 2, 2])
    assert _tiles([(0, 2), (2, 4), (4, 6)], 6)
    assert not _tiles([(0, 2), (3, 6)], 6) and not _tiles([(0, 2), (2, 5)], 6) and not _tiles([], 0)


def test_retry_lost_and_kernel_threads():
    from distributed.comm.core import CommClosedError
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise CommClosedError("worker gone")
        return 7

    assert retry_lost(flaky, wait_s=0) == 7 and len(calls) == 3

    def bad():
        calls.append(1)
        raise ValueError("a task's own error")

    calls.clear()
    with pytest.raises(ValueError, match="own error"):
        retry_lost(bad, wait_s=0)
    assert len(calls) == 1
    calls.clear()
    with pytest.raises(FileNotFoundError):
        retry_lost(lambda: calls.append(1) or open("/nonexistent/linxling"), wait_s=0)
    assert len(calls) == 1
    import numba

    from linxling._threads import blas_held
    before = numba.get_num_threads()
    with kernel_threads() as t:         # outside a worker: numba's and BLAS's settings kept
        assert t == before == numba.get_num_threads()
        assert not blas_held()
    assert numba.get_num_threads() == before


def _blas_on_worker():
    from threadpoolctl import threadpool_info

    from linxling._threads import blas_held
    blas = lambda: {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}   # noqa: E731
    with kernel_threads() as t:
        inside = (t, blas_held(), blas())
    return inside, blas_held()


@pytest.mark.slow
def test_kernel_threads_hold_blas_on_a_worker(client):
    """On a worker, a task's kernels run with BLAS held to one thread, as a fit in one process does
    (the solvers' dense products then take their row parts on the worker's threads), and the hold
    ends with the task."""
    (threads, held, blas), after = client.submit(_blas_on_worker, pure=False).result()
    assert threads >= 1 and held and blas <= {1} and not after


@pytest.mark.slow
def test_worker_killed_during_fit(client, monkeypatch):
    """A worker process killed after the first iteration (SIGKILL; its nanny starts a new one)
    while it holds blocks of the fit: the blocks are recomputed from their tasks and the fit ends
    with the same factors as without the failure. Whether a half-step has to run again is a race:
    when the scheduler has noticed the death before the next half-step is submitted, the blocks
    are remade before its tasks need them and nothing fails (seen once in a loaded CI run);
    otherwise the half-step's tasks, pinned to the dead worker, fail and it runs again
    (``retry_lost``, tested on its own above)."""
    X = _corpus(n=400, m=90, seed=8)
    Y = _corpus(n=400, m=70, seed=9)
    kw = dict(KW, max_iter=4)
    ref = BilingualWMF(**kw).fit({"en": X, "it": Y})
    killed, attempts = [], []
    import linxling._dask as ldask
    real = ldask.retry_lost

    def counting(step, **kw):
        def counted():
            attempts.append(1)
            return step()
        return real(counted, **kw)

    monkeypatch.setattr(ldask, "retry_lost", counting)

    def kill_one(model, it, loss):
        if it == 0:
            pids = client.run(os.getpid)
            addr = sorted(pids)[0]
            held = client.has_what().get(addr, ())
            os.kill(pids[addr], signal.SIGKILL)
            killed.append((addr, len(held)))

    got = BilingualWMF(**kw, callback=kill_one).fit({"en": _dask(X, 50), "it": _dask(Y, 50)},
                                                    client=client)
    assert killed and killed[0][1] > 0 and got.n_iter_ == 4    # the killed worker held data of the fit
    assert len(attempts) >= 2 * 4           # every half-step ran (more than once when it lost the race)
    _same(got.embedding_, ref.embedding_, 1e-10)
    for lang in ("en", "it"):
        _same(got.components_[lang], ref.components_[lang], 1e-10)
    np.testing.assert_allclose(got.loss_curve_, ref.loss_curve_, rtol=1e-10)
    client.wait_for_workers(2, timeout=60)
