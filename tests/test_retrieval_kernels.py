"""CSLS kernels (linxling.kernels.retrieval) against their NumPy references, and their use."""
from __future__ import annotations

import numpy as np
import pytest

from linxling.kernels import retrieval as kr


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("knn", [1, 3, 10])
@pytest.mark.parametrize("nparts,width", [(1, 4), (3, 4), (2, 64), (4, 1), (7, 3)])
def test_topk_block_update_matches_reference(dtype, knn, nparts, width):
    rng = np.random.default_rng(0)
    S = rng.standard_normal((37, 53)).astype(dtype)
    S[5, :20] = S[5, 20:40]                  # ties
    S[:, 7] = 0.25                           # a constant column
    S[9, :] = -1.5                           # a constant row
    S[11, 40:] = 9.0                         # a row's largest entries all in the last range
    n = S.shape[1]
    tb = np.full((n, knn), -np.inf, dtype=dtype)
    thr = np.full(n, -np.inf, dtype=dtype)
    amin = np.zeros(n, dtype=np.int64)
    for a, b in [(0, 4), (4, 5), (5, 30), (30, 37)]:     # columns merged over uneven row blocks
        part = np.full((nparts, b - a, knn), np.nan, dtype=dtype)
        kr.topk_block_update(S[a:b], part, tb, thr, amin, width)
        rows = np.sort(part.transpose(1, 0, 2).reshape(b - a, -1), axis=1)[:, -knn:]
        np.testing.assert_array_equal(rows, kr.topk_rows_reference(S[a:b], knn))
    np.testing.assert_array_equal(np.sort(tb, axis=1), kr.topk_cols_reference(S, knn))
    np.testing.assert_array_equal(thr, tb.min(axis=1))


def test_topk_block_update_ranges_shorter_than_knn():
    """Thread ranges of fewer than knn columns leave -inf in their row buffers; the merge of
    all ranges is still the row's knn largest."""
    S = np.random.default_rng(3).standard_normal((6, 10))
    part = np.empty((4, 6, 5))
    tb = np.full((10, 5), -np.inf)
    kr.topk_block_update(S, part, tb, np.full(10, -np.inf), np.zeros(10, dtype=np.int64), 2)
    assert np.isinf(part[3]).any()                           # 3 columns in the last range
    rows = np.sort(part.transpose(1, 0, 2).reshape(6, -1), axis=1)[:, -5:]
    np.testing.assert_array_equal(rows, kr.topk_rows_reference(S, 5))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_csls_count_matches_reference(dtype):
    rng = np.random.default_rng(1)
    S = rng.standard_normal((20, 31)).astype(dtype)
    r_q = rng.random(20).astype(dtype)
    r_c = rng.random(31).astype(dtype)
    best = ((2 * S[:, 3] - r_q) - r_c[3]).astype(dtype)   # ties with column 3 exactly
    out = np.empty(20, dtype=np.int64)
    kr.csls_count_greater(S, r_q, r_c, best, out)
    np.testing.assert_array_equal(out, kr.csls_count_reference(S, r_q, r_c, best))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_count_greater_matches_numpy(dtype):
    rng = np.random.default_rng(4)
    S = rng.standard_normal((23, 131)).astype(dtype)
    best = S[np.arange(23), rng.integers(0, 131, 23)].copy()    # ties with one entry exactly
    best[3] = -np.inf                                            # a query that can never be hit
    out = np.empty(23, dtype=np.int64)
    kr.count_greater(S, best, out)
    np.testing.assert_array_equal(out, np.count_nonzero(S > best[:, None], axis=1))


def test_numpy_csls_uses_the_kernels_and_equals_generic_path(monkeypatch):
    """The CPU path (kernels) and the generic array-API path give identical ranks."""
    import linxling.evaluate._retrieval as mod
    from linxling.evaluate import retrieval

    rng = np.random.default_rng(2)
    Q = rng.standard_normal((300, 12))
    C = rng.standard_normal((350, 12))
    C[:300] += 0.5 * Q
    calls = []
    real = kr.topk_block_update

    def spy(S, *a):
        calls.append(S.shape)
        return real(S, *a)

    monkeypatch.setattr(kr, "topk_block_update", spy)
    fast = retrieval(Q, C, similarity="csls", knn=7, block_size=64, return_ranks=True)
    monkeypatch.undo()
    assert calls and max(s[0] for s in calls) <= 64

    class XP:                       # the same NumPy behind a different object: generic path
        def __getattr__(self, name):
            return getattr(np, name)

    real_get = mod.get_namespace
    monkeypatch.setattr(mod, "get_namespace",
                        lambda *arr: type(real_get(*arr))(real_get(*arr).name, XP(),
                                                          real_get(*arr).sparse, real_get(*arr).linalg))
    generic = retrieval(Q, C, similarity="csls", knn=7, block_size=64, return_ranks=True)
    np.testing.assert_array_equal(fast.pop("ranks"), generic.pop("ranks"))
    assert fast == generic
