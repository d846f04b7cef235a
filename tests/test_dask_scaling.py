"""The Dask scaling model of benchmarks/dask_scaling.py: its formulas on known answers."""
from __future__ import annotations

import math

import pytest

from benchmarks.dask_scaling import Machine, file_bytes, predict_job, product_seconds, validate

M = Machine(s_per_nnz_col_1=2e-9, s_per_nnz_col_all=1e-9, cores=2, latency=0.01, bandwidth=1e9)


def test_rate_interpolates_between_one_and_all_cores():
    assert M.rate(1) == 2e-9 and M.rate(2) == pytest.approx(1e-9) and M.rate(8) == pytest.approx(1e-9)
    m4 = Machine(4e-9, 1e-9, 4, 0.0, 1.0)
    assert m4.rate(2) == pytest.approx(4e-9 / 2) and m4.rate(4) == pytest.approx(1e-9)


def test_product_seconds_by_hand():
    # local solve: one round trip, the bytes once, iterations x 2 passes on one worker's cores
    t = product_seconds(M, "solve", "local", 100, 10, 1e6, 2e8, 1, 2)
    assert t == pytest.approx(0.01 + 0.2 + 1e6 * 100 * 20 * 1e-9)
    # chunk by chunk on 4 workers of one thread: 1 + log2(4) rounds and link transfers, a quarter of the work
    t = product_seconds(M, "gram", "chunks", 100, 1, 1e6, 2e8, 4, 1)
    assert t == pytest.approx(3 * 0.01 + 3 * 0.2 + 1e6 / 4 * 100 * 2 * 2e-9)
    # more workers: less compute, more hops
    assert product_seconds(M, "gram", "chunks", 100, 1, 1e9, 1e6, 8, 1) < \
        product_seconds(M, "gram", "chunks", 100, 1, 1e9, 1e6, 2, 1)
    assert math.isclose(product_seconds(M, "matmat", "chunks", 10, 1, 1e6, 0, 1, 1), 0.01 + 1e6 * 10 * 2e-9)


def test_product_seconds_adds_partial_sums_between_workers_by_hand():
    m = Machine(2e-9, 1e-9, 2, 0.01, 1e9, add_seconds_per_byte=3e-9)
    # 4 workers, a Gram product: the block and the partial sums (here 1e8 of the 2e8 bytes each)
    # copied between workers at 2 levels, and the partials added at 2 levels
    t = product_seconds(m, "gram", "chunks", 100, 1, 1e6, 2e8, 4, 1, received=1e8)
    assert t == pytest.approx(3 * 0.01 + 3 * 0.2 + 1e6 / 4 * 100 * 2 * 2e-9 + 2 * 1e8 * 3e-9)
    # one link for every copy (a LocalCluster on a shaped loopback): the W - 1 copies of each
    # crossing block one after the other, not one per level
    fast = product_seconds(m, "gram", "chunks", 100, 1, 1e6, 2e8, 4, 1, received=1e8, link=1e9)
    one_link = product_seconds(m, "gram", "chunks", 100, 1, 1e6, 2e8, 4, 1, received=1e8, link=1e9, shared_link=True)
    assert fast == pytest.approx(t) and one_link - fast == pytest.approx(2e8 / 1e9)
    # the levels above the first add in memory the level below freed, at their own rate
    warm = Machine(2e-9, 1e-9, 2, 0.01, 1e9, add_seconds_per_byte=3e-9, add_warm_seconds_per_byte=1e-9)
    assert product_seconds(warm, "gram", "chunks", 100, 1, 1e6, 2e8, 8, 1, received=1e8) == pytest.approx(
        product_seconds(m, "gram", "chunks", 100, 1, 1e6, 2e8, 8, 1, received=1e8) - 2 * 1e8 * 2e-9)
    # X V: only the block crosses (its row blocks come straight back), nothing is added; Xᵀ W: only
    # the partial sums cross and are added (its row blocks go straight to their chunks)
    work = 1e6 / 4 * 100 * 2e-9
    assert product_seconds(m, "matmat", "chunks", 100, 1, 1e6, 2e8, 4, 1, received=1e8) == \
        pytest.approx(3 * 0.01 + 0.2 + 2 * 0.1 + work)
    assert product_seconds(m, "rmatmat", "chunks", 100, 1, 1e6, 2e8, 4, 1, received=1e8) == \
        pytest.approx(3 * 0.01 + 0.2 + 2 * 0.1 + work + 2 * 1e8 * 3e-9)
    assert product_seconds(m, "gram", "chunks", 100, 1, 1e6, 2e8, 1, 1, received=1e8) == \
        pytest.approx(0.01 + 0.2 + 1e6 * 100 * 2 * 2e-9)


def test_the_first_levels_addition_follows_the_pause_before_it():
    """A host that takes freed memory back after a delay: a product shorter than the delay adds
    its partial sums in memory the last product freed (the warm end of the measured curve), a
    longer one in fresh memory."""
    curve = Machine(2e-9, 1e-9, 2, 0.01, 1e9, add_seconds_per_byte=3e-9, add_warm_seconds_per_byte=1e-10,
                    add_idle_s=(0.0, 1.0, 2.0), add_after_idle_seconds_per_byte=(1e-10, 2e-9, 3e-9))
    assert curve.add_rate(0.0) == pytest.approx(1e-10) and curve.add_rate(0.5) == pytest.approx(1.05e-9)
    assert curve.add_rate(1.5) == pytest.approx(2.5e-9) and curve.add_rate(9.0) == pytest.approx(3e-9)
    flat = Machine(2e-9, 1e-9, 2, 0.01, 1e9, add_seconds_per_byte=3e-9)
    assert flat.add_rate(0.0) == flat.add_rate(9.0) == 3e-9
    bare = Machine(2e-9, 1e-9, 2, 0.01, 1e9)           # no additions: the product's own time
    own = {}
    for nnz in (1e6, 1e9):                            # a short product (0.19 s) and a long one (100 s)
        own[nnz] = product_seconds(bare, "gram", "chunks", 100, 1, nnz, 2e7, 4, 1, received=1e7)
        got = product_seconds(curve, "gram", "chunks", 100, 1, nnz, 2e7, 4, 1, received=1e7)
        assert got == pytest.approx(own[nnz] + 1e7 * (curve.add_rate(own[nnz]) + 1e-10))
    assert own[1e6] == pytest.approx(3 * 0.01 + (2e7 + 2 * 2e7) * 1e-9 + 1e6 / 4 * 100 * 2 * 2e-9)
    assert curve.add_rate(own[1e6]) < 5e-10 and curve.add_rate(own[1e9]) == 3e-9


@pytest.mark.slow
def test_cross_worker_add_measures_the_curve_on_a_local_cluster():
    pytest.importorskip("distributed")
    from benchmarks.dask_scaling import cross_worker_add
    got = cross_worker_add(nbytes=2 ** 20, idles=(0.1, 0.0), repeats=1)
    assert got["add_idle_s"] == [0.0, 0.1] and len(got["add_after_idle_seconds_per_byte"]) == 2
    assert all(r > 0 for r in got["add_after_idle_seconds_per_byte"]) and got["add_warm_seconds_per_byte"] > 0
    # the curve: the means made non-decreasing in the pause (equal where already in order)
    mean, curve = got["add_after_idle_mean_seconds_per_byte"], got["add_after_idle_seconds_per_byte"]
    assert curve[0] <= curve[1] and (curve == mean if mean[0] <= mean[1] else curve[0] == curve[1])
    assert got["add_seconds_per_byte"] == got["add_after_idle_seconds_per_byte"][-1]
    assert {k: len(v) for k, v in got["levels_s"].items()} == {"0.0": 1, "0.1": 1}
    with pytest.raises(ValueError, match="idles must be"):
        cross_worker_add(idles=())


def _run(log, fit_s):
    return {"fit_s": fit_s, "dask": {"product_log": [list(e) for e in log]}}


def test_validate_reproduces_a_run_made_by_the_model():
    nnz, L = 4e6, 2
    log1 = [("solve", "local", 50, 12, product_seconds(M, "solve", "local", 50, 12, nnz / L, 8e7, 1, 2), 4e7, 4e7),
            ("matmat", "local", 50, 1, product_seconds(M, "matmat", "local", 50, 1, nnz / L, 3e7, 1, 2), 1e7, 2e7)]
    log2 = [("gram", "chunks", 50, 1, product_seconds(M, "gram", "chunks", 50, 1, nnz / L, 8e7, 2, 1), 4e7, 4e7)]
    client = 5.0
    runs = {"nnz": nnz, "concepts": 1000, "p": 20000,
            "dask": {"1": _run(log1, client + sum(e[4] for e in log1)),
                     "2": _run(log2, client + sum(e[4] for e in log2))}}
    rows = validate(runs, M, L)
    for r in rows:
        assert r["products_predicted_s"] == pytest.approx(r["products_measured_s"])
        assert r["ratio"] == pytest.approx(1.0) and r["client_s"] == pytest.approx(client)
    one = dict(runs["dask"]["1"], concepts=1000, p=20000)
    same = predict_job(M, one, L, languages=L, nnz_per_language=nnz / L, concepts_scale=1.0, machines=1,
                       cores_per_machine=2, network=M.bandwidth)
    assert same["local_s"] == pytest.approx(runs["dask"]["1"]["fit_s"])
    # twice the languages on twice the machines, whole-language solves side by side: the same work
    # inside products, twice the transfers (each through the client's one link), twice the client's work
    big = predict_job(M, one, L, languages=2 * L, nnz_per_language=nnz / L, concepts_scale=1.0, machines=2,
                      cores_per_machine=2, network=M.bandwidth)
    transfers = (8e7 + 3e7) / M.bandwidth
    assert big["local_s"] - big["client_s"] == pytest.approx(same["local_s"] - same["client_s"] + transfers)
    assert big["client_s"] == pytest.approx(2 * client)
    # a slower network: the link, not the host, sets the transfers' time
    slow = predict_job(M, one, L, languages=L, nnz_per_language=nnz / L, concepts_scale=1.0, machines=1,
                       cores_per_machine=2, network=M.bandwidth / 4)
    assert slow["local_s"] - same["local_s"] == pytest.approx(3 * transfers)


def test_spread_prediction_crosses_only_the_broadcast_block_and_the_partial_sums():
    # one X V and one Xᵀ W of a 1-worker run, predicted spread over 4 machines with the document
    # rows 3x as many: X V sends V (p rows, kept) and receives X V (document rows, x3), of which
    # only V crosses between workers; Xᵀ W sends W (x3) straight to its chunks and receives the
    # sum (kept), which crosses and is added
    m = Machine(2e-9, 1e-9, 2, 0.01, 1e9, add_seconds_per_byte=3e-9)
    nnz, L = 4e6, 1
    log = [("matmat", "local", 50, 1, 1.0, 2e7, 1e7), ("rmatmat", "local", 50, 1, 1.0, 1e7, 2e7)]
    one = dict(_run(log, 5.0), concepts=1000, p=2000)
    pred = predict_job(m, one, L, languages=L, nnz_per_language=nnz, concepts_scale=3.0, machines=4,
                       cores_per_machine=1, network=m.bandwidth)
    work = nnz / 4 * 50 * 2e-9
    matmat = 3 * 0.01 + (2e7 + 3e7) * 1e-9 + 2 * 2e7 * 1e-9 + work
    rmatmat = 3 * 0.01 + (3e7 + 2e7) * 1e-9 + 2 * 2e7 * 1e-9 + work + 2 * 2e7 * 3e-9
    assert pred["client_s"] == pytest.approx(3 * 3.0)
    assert pred["spread_s"] == pytest.approx(pred["client_s"] + matmat + rmatmat)


def test_validate_divides_the_work_of_languages_side_by_side_but_not_their_transfers():
    nnz, L = 4e6, 2
    one = product_seconds(M, "solve", "local", 50, 12, nnz / L, 8e7, 2, 1)
    transfer = 8e7 / M.bandwidth
    # the two languages' solves overlapped, each waiting for the other's transfer at the client
    log = [("solve", "local", 50, 12, one + transfer, 4e7, 4e7), ("solve", "local", 50, 12, one + transfer, 4e7, 4e7)]
    client = 3.0
    run = _run(log, client + one + transfer)
    run["dask"]["placed_on"] = {"a": "tcp://w1", "b": "tcp://w2"}
    runs = {"nnz": nnz, "concepts": 10, "p": 100, "dask": {"2": run}}
    [row] = validate(runs, M, L)
    assert row["languages_side_by_side"] == 2 and row["threads_per_worker"] == 1
    assert row["products_measured_s"] == pytest.approx(one + transfer) and row["ratio"] == pytest.approx(1.0)
    # the same run over a link 4x slower than the host: each transfer 4x as long
    runs["links"] = {"2": {"2": run}}
    [row] = validate(runs, M, L, link_gbit=8 * M.bandwidth / 4 / 1e9)
    assert row["products_predicted_s"] == pytest.approx(one + transfer + 2 * 3 * transfer)


def test_a_link_slower_than_the_host_sets_the_transfer_time():
    assert M.seconds_per_byte() == pytest.approx(1e-9)
    assert M.seconds_per_byte(link=1e10) == pytest.approx(1e-9)      # a fast link: the host's cost
    assert M.seconds_per_byte(link=2.5e8) == pytest.approx(4e-9)     # a slow one: the link's


def test_shaped_loopback_unshaped_and_bad_input(monkeypatch):
    from benchmarks import _netshape
    calls = []
    monkeypatch.setattr(_netshape, "_tc", lambda *a, **k: calls.append(a))
    with _netshape.shaped_loopback(0) as rate:           # 0: the loopback left alone, tc never run
        assert rate == math.inf
    assert calls == []
    with pytest.raises(ValueError, match="gbit must be positive"), _netshape.shaped_loopback(-1):
        pass
    # an existing queueing discipline on lo is never replaced
    monkeypatch.setattr(_netshape.shutil, "which", lambda name: "/sbin/tc")
    monkeypatch.setattr(_netshape, "loopback_qdisc", lambda: "qdisc tbf 8001: root rate 1Gbit")
    with pytest.raises(RuntimeError, match="already has a queueing discipline"), _netshape.shaped_loopback(1):
        pass
    assert calls == []


def test_shaped_loopback_removes_its_filter_also_on_errors(monkeypatch):
    from types import SimpleNamespace

    from benchmarks import _netshape
    calls = []

    def tc(*args, check=True):
        calls.append(args[:2] + args[5:7] if args[1] == "add" else args[:2])
        return SimpleNamespace(returncode=0, stdout="", stderr="")
    monkeypatch.setattr(_netshape, "_tc", tc)
    monkeypatch.setattr(_netshape.shutil, "which", lambda name: "/sbin/tc")
    monkeypatch.setattr(_netshape, "loopback_qdisc", lambda: "qdisc noqueue 0: root refcnt 2")
    with pytest.raises(KeyError), _netshape.shaped_loopback(2) as rate:
        assert rate == pytest.approx(2.5e8)                      # 2 Gbit/s in bytes/s
        raise KeyError("a failed fit")
    assert calls == [("qdisc", "add", "tbf", "rate"), ("qdisc", "del")]


def test_reads_from_files_by_hand():
    m = Machine(2e-9, 1e-9, 2, 0.01, 1e9, read_seconds_per_byte=5e-10, s_per_nnz_col_stream_1=4e-9,
                s_per_nnz_col_stream_all=3e-9)
    assert m.rate(1, streamed=True) == 4e-9 and m.rate(2, streamed=True) == pytest.approx(3e-9)
    assert M.rate(2, streamed=True) == M.rate(2)          # not measured: the in-memory kernel's rate
    # a local solve from a file: one read of the file per CG iteration, the Gram at the streamed rate
    t = product_seconds(m, "solve", "local", 100, 10, 1e6, 2e8, 1, 2, file_bytes=1.2e7)
    assert t == pytest.approx(0.01 + 0.2 + 1e6 * 100 * 20 * 3e-9 + 10 * 1.2e7 * 5e-10)
    # in memory (file_bytes 0): as before
    assert product_seconds(m, "solve", "local", 100, 10, 1e6, 2e8, 1, 2) == \
        pytest.approx(0.01 + 0.2 + 1e6 * 100 * 20 * 1e-9)
    # chunk by chunk on 4 workers: each reads a quarter of the file; X V at the in-memory kernel's rate
    t = product_seconds(m, "matmat", "chunks", 100, 1, 1e6, 2e8, 4, 1, received=1e8, file_bytes=1.2e7)
    assert t == pytest.approx(product_seconds(m, "matmat", "chunks", 100, 1, 1e6, 2e8, 4, 1, received=1e8)
                              + 1.2e7 / 4 * 5e-10)


def test_file_bytes_of_runs():
    assert file_bytes({"source": "array", "nnz": 10, "concepts": 5}, 2) == 0.0
    assert file_bytes({"nnz": 10, "concepts": 5}, 2) == 0.0
    # recorded: the mean over the languages' files
    runs = {"source": "disk", "nnz": 10, "concepts": 5, "files": {"a": {"nbytes": 100}, "b": {"nbytes": 300}}}
    assert file_bytes(runs, 2) == 200.0
    # not recorded: the float64 files the bench writes, 8 (n + 1) + 12 nnz_l
    assert file_bytes({"source": "disk", "nnz": 10, "concepts": 5}, 2) == 8 * 6 + 12 * 5


def test_predict_job_from_files_reads_every_iteration_and_a_slow_disk_sets_the_pace():
    m = Machine(2e-9, 1e-9, 2, 0.01, 1e9, read_seconds_per_byte=5e-10)
    log = [("solve", "local", 50, 12, 1.0, 4e7, 4e7)]
    one = dict(_run(log, 5.0), concepts=1000, p=2000)
    kw = dict(languages=1, nnz_per_language=4e6, concepts_scale=1.0, machines=1, cores_per_machine=2, network=1e9)
    mem = predict_job(m, one, 1, **kw)
    cached = predict_job(m, one, 1, file_bytes_per_language=3e7, **kw)
    slow = predict_job(m, one, 1, file_bytes_per_language=3e7, disk_bandwidth=1e8, **kw)
    assert cached["local_s"] - mem["local_s"] == pytest.approx(12 * 3e7 * 5e-10)
    assert slow["local_s"] - mem["local_s"] == pytest.approx(12 * 3e7 / 1e8)
    # spread over 4 machines: each of the 12 iterations' Gram products reads a quarter of the file on each
    spread = predict_job(m, one, 1, file_bytes_per_language=3e7, **{**kw, "machines": 4})
    spread_mem = predict_job(m, one, 1, **{**kw, "machines": 4})
    assert spread["spread_s"] - spread_mem["spread_s"] == pytest.approx(12 * 3e7 / 4 * 5e-10)


def test_read_constants_on_a_small_file():
    import numpy as np
    import scipy.sparse as sp

    from benchmarks.dask_scaling import read_constants
    X = sp.random(3000, 500, density=0.02, format="csr", random_state=0)
    V = np.random.default_rng(0).standard_normal((500, 8)).astype(np.float32)
    got = read_constants(X, V, "float64", chunk_rows=256, repeats=1)
    assert got["file_bytes"] == 8 * 3001 + 12 * X.nnz and got["file_dtype"] == "float64"
    # timings are measured, not compared: with one repeat a cold first read can take longer than
    # a later pass of reads and products (gram_1_s < read_s failed once under Prescott at load 2)
    assert got["read_seconds_per_byte"] > 0 and got["gram_1_s"] > 0 and got["gram_all_s"] > 0
    assert got["columns"] == 8 and got["reads_per_pass"] >= 1
    assert got["s_per_nnz_col_stream_1"] >= 0 and got["s_per_nnz_col_stream_all"] >= 0


def test_solve_constants_and_bandwidth_recover_a_run_made_by_the_model():
    from benchmarks.dask_scaling import effective_bandwidth, solve_constants
    truth = Machine(2e-9, 1e-9, 2, 0.01, 5e8, read_seconds_per_byte=5e-10, solve_seconds=0.8,
                    cg_seconds_per_element=3e-9)
    guess = Machine(2e-9, 1e-9, 2, 0.01, 1e9, read_seconds_per_byte=5e-10)
    nnz, p_l, fb = 2e6, 1e5, 2.4e7

    def entry(kind, cols, iters, sent, received):
        t = product_seconds(truth, kind, "local", cols, iters, nnz, sent + received, 1, 2, file_bytes=fb,
                            block_rows=p_l)
        return (kind, "chunks" if kind != "solve" else "local", cols, iters, t, sent, received)
    log = [entry("solve", 1, 1, 8e5, 4e5), entry("matmat", 300, 0, 1.2e8, 7e7),
           entry("rmatmat", 300, 0, 7e7, 1.2e8), entry("solve", 300, 15, 2.4e8, 1.2e8),
           entry("solve", 300, 12, 2.4e8, 1.2e8)]
    run = _run(log, 60.0)
    # the bandwidth from the products other than solves, then the solves' own constants
    bw = effective_bandwidth(run, guess, nnz, 2, fb)
    assert bw == pytest.approx(5e8)
    fixed, per_element = solve_constants(run, Machine(**{**guess.__dict__, "bandwidth": bw}), nnz, p_l, 2, fb)
    assert fixed == pytest.approx(0.8) and per_element == pytest.approx(3e-9)
    # a run of whole solves only: nothing left to explain the solves by, so nothing is charged
    assert solve_constants(_run([], 1.0), guess, nnz, p_l, 2) == (0.0, 0.0)
    # never negative: solves faster than their products alone charge nothing beyond them
    fast = _run([("solve", "local", 300, 15, 0.01, 2.4e8, 1.2e8), ("solve", "local", 1, 1, 0.001, 8e5, 4e5)], 1.0)
    assert all(c >= 0 for c in solve_constants(fast, guess, nnz, p_l, 2, fb))


def test_predict_job_charges_a_whole_solves_own_work_on_the_runs_vocabulary_rows():
    m = Machine(2e-9, 1e-9, 2, 0.01, 1e9)
    own = Machine(2e-9, 1e-9, 2, 0.01, 1e9, solve_seconds=0.5, cg_seconds_per_element=1e-9)
    log = [("solve", "local", 50, 12, 1.0, 4e7, 4e7)]
    one = dict(_run(log, 5.0), concepts=1000, p=2000)
    kw = dict(languages=1, nnz_per_language=4e6, concepts_scale=1.0, machines=1, cores_per_machine=2, network=1e9)
    # p = 2000 over the run's 2 languages: blocks of 1000 rows x 50 columns, 12 iterations
    assert predict_job(own, one, 2, **kw)["local_s"] - predict_job(m, one, 2, **kw)["local_s"] == \
        pytest.approx((0.5 + 12 * 1000 * 50 * 1e-9) / 2)
