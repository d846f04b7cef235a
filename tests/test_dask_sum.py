"""The chunk-order tree of partial sums of :class:`linxling.operators._dask.DaskSource`, worked out
in this process: which chunks one task sums (``_sum_plan``) and that a task's in-place sums give
the bits of the pairwise tree of new arrays they replace (``_group_sum``)."""
from __future__ import annotations

import uuid

import numpy as np
import pytest
import scipy.sparse as sp

pytest.importorskip("distributed")
from linxling.operators import _dask as mod  # noqa: E402


def test_sum_plan_cuts_each_workers_subtrees_into_one_task():
    plan = mod._sum_plan
    assert plan(["a"] * 4) == ("group", 2, 0, "a")
    assert plan(["a", "a", "b", "b"]) == ("add", ("group", 1, 0, "a"), ("group", 1, 1, "b"))
    # five chunks, 3 + 2: the tree's pairs (0,1) (2,3) (4), then (01,23) (4): chunks 2 and 3 differ
    assert plan(["a", "a", "a", "b", "b"]) == (
        "add", ("add", ("group", 1, 0, "a"), ("add", ("group", 0, 2, "a"), ("group", 0, 3, "b"))),
        ("group", 2, 1, "b"))
    # alternating holders: every chunk alone, every addition a task (the tree without groups)
    assert plan(["a", "b", "a", "b"]) == ("add", ("add", ("group", 0, 0, "a"), ("group", 0, 1, "b")),
                                          ("add", ("group", 0, 2, "a"), ("group", 0, 3, "b")))
    assert plan([None, None]) == ("add", ("group", 0, 0, None), ("group", 0, 1, None))   # holders unknown
    assert plan(["a"]) == ("group", 0, 0, "a")


def _pairwise(parts):
    """The pairwise tree in chunk order, here: neighbours first, an odd last one carried."""
    while len(parts) > 1:
        parts = [parts[i] + parts[i + 1] if i + 1 < len(parts) else parts[i] for i in range(0, len(parts), 2)]
    return parts[0]


def _evaluate(plan, fn, head, chunks, b, blocks):
    """A plan evaluated here as the cluster would: groups by ``_group_sum``, additions new."""
    if plan[0] == "add":
        left = _evaluate(plan[1], fn, head, chunks, b, blocks)
        return mod._add(left, _evaluate(plan[2], fn, head, chunks, b, blocks))
    _, level, j, _owner = plan
    lo, hi = j << level, min((j + 1) << level, len(chunks))
    return mod._group_sum(fn, head, level, j, len(chunks), b, hi - lo, *chunks[lo:hi], *blocks[lo:hi])


@pytest.mark.parametrize("owners", [["a"] * 7, ["a", "a", "a", "a", "b", "b", "b"], ["a", "b"] * 3 + ["a"],
                                    ["a", "a", "b", "b", "c", "d", "d"]])
@pytest.mark.parametrize("kind", ["gram", "rmatmat"])
def test_group_sums_are_bitwise_the_pairwise_tree(owners, kind, monkeypatch):
    from linxling.kernels import spmm
    monkeypatch.setattr(spmm, "MIN_PARALLEL_WORK", 0)          # the kernels, not SciPy
    rng = np.random.default_rng(4)
    X = sp.random(700, 300, density=0.05, random_state=rng, format="csr", dtype=np.float32)
    rows = np.linspace(0, 700, len(owners) + 1).astype(int)
    chunks = [X[a:b] for a, b in zip(rows[:-1], rows[1:], strict=True)]
    token = uuid.uuid4().hex
    V = rng.standard_normal((300, 9)).astype(np.float32)
    W = rng.standard_normal((700, 9)).astype(np.float32)
    spans = list(zip(rows[:-1], rows[1:], strict=True))
    b, blocks = (V, [None] * len(chunks)) if kind == "gram" else (None, [W[a:c] for a, c in spans])
    try:
        parts = [mod._cached_part(kind, token, i, c, b, blocks[i]) for i, c in enumerate(chunks)]
        want = _pairwise(parts)
        got = _evaluate(mod._sum_plan(owners), mod._cached_part, (kind, token), chunks, b, blocks)
        np.testing.assert_array_equal(got, want)
        ref = X.T @ (X @ V) if kind == "gram" else X.T @ W
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
        assert not any(got is p for p in parts)
    finally:
        mod._drop_copies(token)


def test_group_sums_reuse_pooled_buffers_and_never_return_one(monkeypatch):
    """The first sum of four chunks makes one buffer for each of the tree's two lower levels and
    leaves them in the pool; the second (a narrower block) takes the same two (views of them), their
    old contents never leak into the result, and no result is a pooled buffer."""
    from linxling.kernels import spmm
    monkeypatch.setattr(spmm, "MIN_PARALLEL_WORK", 0)
    monkeypatch.setattr(mod, "_POOL", {})
    rng = np.random.default_rng(5)
    X = sp.random(400, 200, density=0.05, random_state=rng, format="csr", dtype=np.float32)
    chunks = [X[:100], X[100:200], X[200:300], X[300:]]
    token = uuid.uuid4().hex
    pools = []
    try:
        for cols in (9, 5):
            V = rng.standard_normal((200, cols)).astype(np.float32)
            got = mod._group_sum(mod._cached_part, ("gram", token), 2, 0, 4, V, 4, *chunks, *[None] * 4)
            np.testing.assert_allclose(got, X.T @ (X @ V), rtol=1e-4, atol=1e-4)
            pooled = [a for bufs in mod._POOL.values() for a in bufs]
            assert not any(np.shares_memory(got, a) for a in pooled)
            pools.append({id(a): a.size for a in pooled})
        assert list(pools[0].values()) == [200 * 9, 200 * 9]
        assert pools[1] == pools[0]                 # the same two buffers, reused
    finally:
        mod._drop_copies(token)
    assert mod._POOL == {}


def test_pool_takes_the_smallest_buffer_that_fits(monkeypatch):
    monkeypatch.setattr(mod, "_POOL", {})
    taken: list = []
    small, large = mod._pool_take((3, 4), np.float32, taken), mod._pool_take((10, 4), np.float32, taken)
    mod._pool_give(taken)
    assert taken == [] and sorted(a.size for a in mod._POOL["<f4"]) == [12, 40]
    again = mod._pool_take((2, 5), np.float32, taken)          # 10 elements: the 12-element one
    assert np.shares_memory(again, small) and again.shape == (2, 5) and again.flags.c_contiguous
    assert [a.size for a in mod._POOL["<f4"]] == [40]
    assert mod._pool_take((2, 5), np.float64, taken).dtype == np.float64        # another dtype: new
    del large
