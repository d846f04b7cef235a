"""CSLS kernels (linxling.kernels.retrieval) against their NumPy references, and their use."""
from __future__ import annotations

import numpy as np
import pytest

from linxling.kernels import retrieval as kr


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("knn", [1, 3, 10])
def test_topk_rows_and_cols_match_reference(dtype, knn):
    rng = np.random.default_rng(0)
    S = rng.standard_normal((37, 53)).astype(dtype)
    S[5, :20] = S[5, 20:40]                  # ties
    S[:, 7] = 0.25                           # a constant column
    top = np.empty((37, knn), dtype=dtype)
    kr.topk_rows(S, knn, top)
    np.testing.assert_array_equal(np.sort(top, axis=1), kr.topk_rows_reference(S, knn))
    # columns, merged over uneven row blocks
    n = S.shape[1]
    tb = np.full((n, knn), -np.inf, dtype=dtype)
    thr = np.full(n, -np.inf, dtype=dtype)
    amin = np.zeros(n, dtype=np.int64)
    for a, b in [(0, 4), (4, 5), (5, 30), (30, 37)]:
        kr.topk_cols_update(S[a:b], tb, thr, amin, 3)
    np.testing.assert_array_equal(np.sort(tb, axis=1), kr.topk_cols_reference(S, knn))
    np.testing.assert_array_equal(thr, tb.min(axis=1))


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


def test_numpy_csls_uses_the_kernels_and_equals_generic_path(monkeypatch):
    """The CPU path (kernels) and the generic array-API path give identical ranks."""
    import linxling.evaluate._retrieval as mod
    from linxling.evaluate import retrieval

    rng = np.random.default_rng(2)
    Q = rng.standard_normal((300, 12))
    C = rng.standard_normal((350, 12))
    C[:300] += 0.5 * Q
    calls = []
    real = kr.topk_cols_update

    def spy(S, *a):
        calls.append(S.shape)
        return real(S, *a)

    monkeypatch.setattr(kr, "topk_cols_update", spy)
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
