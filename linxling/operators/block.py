"""Block-diagonal operator built from a list of operators."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

import numpy as np

from linxling._backend import get_namespace
from linxling._linop import LinearOperator, as_operator

__all__ = ["BlockDiagonal"]


class BlockDiagonal(LinearOperator):
    """``diag(A_1, ..., A_L)`` from operators (or matrices) ``A_l`` of shape (r_l, c_l).

    Parameters
    ----------
    blocks : sequence of LinearOperator / sparse / dense matrices
    n_jobs : int, default 1
        Apply the blocks in that many threads (SciPy's SpMM and LAPACK release the GIL, so
        per-language solves run in parallel). ``1`` applies them in order.

    Attributes
    ----------
    blocks : list of LinearOperator
    offsets : ndarray (L + 1,)
        Column (input) offsets: block ``l`` reads rows ``offsets[l]:offsets[l+1]`` of the input.
    row_offsets : ndarray (L + 1,)
        Row (output) offsets; equal to ``offsets`` when every block is square.
    """

    def __init__(self, blocks: Sequence[Any], *, n_jobs: int = 1) -> None:
        blocks = [as_operator(b) for b in blocks]
        if not blocks:
            raise ValueError("blocks is empty; give at least one operator")
        self.blocks = blocks
        self.offsets = np.concatenate([[0], np.cumsum([b.shape[1] for b in blocks])]).astype(np.int64)
        self.row_offsets = np.concatenate([[0], np.cumsum([b.shape[0] for b in blocks])]).astype(np.int64)
        self.n_jobs = int(n_jobs)
        dtype = np.result_type(*[b.dtype for b in blocks])
        super().__init__((int(self.row_offsets[-1]), int(self.offsets[-1])), dtype,
                         symmetric=all(b.symmetric for b in blocks))

    def _apply(self, X, in_off, out_off, fn_name: str):
        xp = get_namespace(X).xp
        parts = [X[in_off[i]:in_off[i + 1]] for i in range(len(self.blocks))]
        calls = [getattr(b, fn_name) for b in self.blocks]
        if self.n_jobs > 1 and len(self.blocks) > 1:
            with ThreadPoolExecutor(max_workers=min(self.n_jobs, len(self.blocks))) as ex:
                outs = list(ex.map(lambda fp: fp[0](fp[1]), zip(calls, parts)))
        else:
            outs = [f(x) for f, x in zip(calls, parts)]
        dtype = np.result_type(*[o.dtype for o in outs])
        Y = xp.empty((int(out_off[-1]), X.shape[1]), dtype=dtype)
        for i, o in enumerate(outs):
            Y[out_off[i]:out_off[i + 1]] = o
        return Y

    def _matmat(self, X):
        return self._apply(X, self.offsets, self.row_offsets, "matmat")

    def _rmatmat(self, Y):
        return self._apply(Y, self.row_offsets, self.offsets, "rmatmat")

    def diagonal(self):
        if self.shape[0] != self.shape[1] or not np.array_equal(self.offsets, self.row_offsets):
            raise ValueError("diagonal needs square diagonal blocks")
        return np.concatenate([np.asarray(b.diagonal()) for b in self.blocks])

    def __repr__(self) -> str:
        return f"<BlockDiagonal shape={self.shape} dtype={self.dtype} n_blocks={len(self.blocks)}>"
