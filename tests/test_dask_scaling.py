"""The Dask scaling model of benchmarks/dask_scaling.py: its formulas on known answers."""
from __future__ import annotations

import math

import pytest

from benchmarks.dask_scaling import Machine, predict_job, product_seconds, validate

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
                       cores_per_machine=2, bandwidth=M.bandwidth)
    assert same["local_s"] == pytest.approx(runs["dask"]["1"]["fit_s"])
    # twice the languages on twice the machines, whole-language solves side by side: the same time
    # inside products, twice the client's work
    big = predict_job(M, one, L, languages=2 * L, nnz_per_language=nnz / L, concepts_scale=1.0, machines=2,
                      cores_per_machine=2, bandwidth=M.bandwidth)
    assert big["local_s"] - big["client_s"] == pytest.approx(same["local_s"] - same["client_s"])
    assert big["client_s"] == pytest.approx(2 * client)


def test_validate_divides_the_products_of_languages_side_by_side():
    nnz, L = 4e6, 2
    one = product_seconds(M, "solve", "local", 50, 12, nnz / L, 8e7, 2, 1)
    log = [("solve", "local", 50, 12, one, 4e7, 4e7), ("solve", "local", 50, 12, one, 4e7, 4e7)]
    client = 3.0
    run = _run(log, client + one)                 # the two languages' solves overlapped
    run["dask"]["placed_on"] = {"a": "tcp://w1", "b": "tcp://w2"}
    [row] = validate({"nnz": nnz, "concepts": 10, "p": 100, "dask": {"2": run}}, M, L)
    assert row["languages_side_by_side"] == 2 and row["threads_per_worker"] == 1
    assert row["products_measured_s"] == pytest.approx(one) and row["ratio"] == pytest.approx(1.0)
