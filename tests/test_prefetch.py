"""The software prefetch hint used by the gathering kernels never changes a result."""
import numpy as np
import pytest
from numba import njit
from numba.core.errors import TypingError

from linxling.kernels._prefetch import prefetch_row


@njit(cache=False)
def _gather_sum(A, idx, dist):
    out = np.zeros(A.shape[1], dtype=np.float64)
    for t in range(idx.size):
        if t + dist < idx.size:
            prefetch_row(A, idx[t + dist])
        for j in range(A.shape[1]):
            out[j] += A[idx[t], j]
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("itype", [np.int32, np.int64])
@pytest.mark.parametrize("k", [1, 7, 100, 300])        # rows of < 1 line, several lines, > 1 KiB
def test_prefetch_leaves_the_gather_unchanged(dtype, itype, k):
    rng = np.random.default_rng(k)
    A = rng.standard_normal((500, k)).astype(dtype)
    idx = rng.integers(0, 500, size=2000).astype(itype)
    idx[-1] = 499                                        # the last row (and a hint past the end)
    got = _gather_sum(A, idx, 5)
    want = A[idx].astype(np.float64).sum(axis=0)
    np.testing.assert_allclose(got, want, rtol=1e-12 if dtype == np.float64 else 1e-5, atol=1e-9)
    # the same sums in the same order without hints: bitwise equal
    np.testing.assert_array_equal(got, _gather_sum(A, idx, idx.size))


def test_prefetch_needs_a_c_contiguous_matrix():
    A = np.ones((4, 3))

    @njit(cache=False)
    def hint(M):
        prefetch_row(M, 1)

    hint(A)                                                # fine
    with pytest.raises(TypingError):
        hint(A.T)                                          # a Fortran-ordered view is refused
