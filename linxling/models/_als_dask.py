"""The Dask executor of the ALS driver (:mod:`linxling.models._als`): row blocks of X and of Xᵀ
persisted on the workers of a ``dask.distributed`` cluster.

Both models run it: b-WMF is WMF of the column-stacked [X_1 | X_2 | ...] whose word factor is the
row-stacked [A_1; A_2; ...] (equal λ and w_m), so a row block holds the languages' rows side by
side and every column block (rows of one language's Xᵀ) lies in one language. Per iteration the
client sends each factor once (it is the fixed factor of one half-step and the warm start of the
next) and gathers the solved blocks; the data stays put. The helpers of
:mod:`linxling._dask` place, pin and retry the tasks; a corpus on disk is read with
:func:`linxling.io._chunks.read_rows`.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

from linxling.io._chunks import read_rows
from linxling.models._als import _als, check_matrix

__all__ = ["DaskALS", "dask_sources", "balanced_ranges"]


def _dask_check_chunk(B, name: str, shape: tuple[int, int], dtype) -> sp.csr_matrix:
    if not sp.issparse(B):
        raise TypeError(f"{name} is a {type(B).__module__}.{type(B).__name__}, not a scipy.sparse "
                        "matrix; give a dask array with scipy.sparse chunks (e.g. "
                        "X.map_blocks(scipy.sparse.csr_matrix))")
    if B.ndim != 2 or tuple(B.shape) != tuple(shape):
        raise ValueError(f"{name} has shape {tuple(B.shape)}, but its dask array's chunks say {shape}")
    return check_matrix(B, name, dtype, shape[1])


def _dask_row_block(blocks, r0: int, r1: int, widths, dtype, names, h5: bool):
    """One row block of the (column-stacked) matrix as kernel parts."""
    mats = []
    for B, m, name in zip(blocks, widths, names, strict=True):
        if h5:                     # (absolute path, generation): the file the client opened
            B = read_rows(B[0], "X", r0, r1, generation=B[1])
        mats.append(_dask_check_chunk(B, name, (r1 - r0, m), dtype))
    M = mats[0] if len(mats) == 1 else sp.hstack(mats, format="csr")
    return _als()._csr_parts(M, dtype)


def _dask_col_counts(parts, n_cols: int) -> np.ndarray:
    return np.bincount(parts[1], minlength=n_cols).astype(np.int64)


def _dask_split(parts, n_rows: int, n_cols: int, col_ranges) -> tuple:
    """The row block's transpose cut into the column blocks (each (c1 − c0) × n_rows CSR)."""
    X = sp.csr_matrix((parts[2], parts[1], parts[0]), shape=(n_rows, n_cols))
    XT = X.T.tocsr()
    return tuple(XT[c0:c1] for c0, c1 in col_ranges)


def _dask_assemble(dtype, *pieces):
    """Rows c0:c1 of Xᵀ from the row blocks' pieces (in row-block order)."""
    M = sp.hstack(pieces, format="csr") if len(pieces) > 1 else sp.csr_matrix(pieces[0])
    M.sort_indices()
    return _als()._csr_parts(M, dtype)


def _dask_h5_col_block(path: str, c0: int, c1: int, n: int, dtype, name: str, generation: str | None = None):
    B = _dask_check_chunk(read_rows(path, "XT", c0, c1, generation=generation), name, (c1 - c0, n), dtype)
    return _als()._csr_parts(B, dtype)


def _dask_hot_plan(parts, n_other: int, k: int, dtype):
    """A column block's hot rows (frequent words) with their nonzeros transposed, to push their
    CG from the fixed factor read in order (:func:`linxling.kernels.als.hot_plan_local`); made
    on the worker that holds the block and kept there."""
    return _als().hot_plan_local(parts, n_other, k, dtype)


def _dask_solve(parts, Y, G, warm, r0: int, r1: int, w: float, lam: float, solver: str, steps: int,
                hot=None):
    """One block of a half-step: rows r0:r1 solved with Y fixed, warm-started from ``warm``:
    the whole factor (rows r0:r1 are used) or this block's previous ``(rows, objective)``;
    ``hot``: the block's :func:`_dask_hot_plan` (CG only) or None."""
    from linxling._dask import kernel_threads
    start = warm[0] if isinstance(warm, tuple) else warm[r0:r1]
    out = np.array(start, dtype=Y.dtype, order="C", copy=True)
    with kernel_threads():
        _, obj = _als().als_half_step(None, Y, out, missing_weight=w, regularization=lam,
                                      solver=solver, cg_steps=steps, parts=parts, gram_matrix=G,
                                      return_objective=True, hot=hot)
    return out, obj


def _dask_stack(*solved):
    """A half-step's fixed factor assembled on a worker from the other side's solved blocks
    (the ``(rows, objective)`` results of :func:`_dask_solve`, in row order): the same values
    as the client's copy, which it gathered from these results."""
    return np.concatenate([rows for rows, _ in solved], axis=0)


def _tiles(ranges, n: int) -> bool:
    """Whether ``ranges`` cover ``0:n`` in order, without gaps or overlaps."""
    return bool(ranges) and ranges[0][0] == 0 and ranges[-1][1] == n and all(
        a[1] == b[0] for a, b in zip(ranges[:-1], ranges[1:], strict=True))


def balanced_ranges(counts: np.ndarray, n_blocks: int) -> list[tuple[int, int]]:
    """Split range(len(counts)) into at most n_blocks contiguous ranges of similar sum."""
    m = len(counts)
    n_blocks = max(1, min(n_blocks, m))
    cum = np.concatenate([[0], np.cumsum(counts + 1)])   # +1: empty columns still cost a row
    cuts = np.searchsorted(cum, cum[-1] * np.arange(1, n_blocks) / n_blocks, side="left")
    bounds = np.unique(np.concatenate([[0], np.clip(cuts, 1, m - 1) if m > 1 else [], [m]]).astype(np.int64))
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def dask_sources(X: Mapping, langs: list, names: Mapping, n: int | None = None):
    """Validate the languages' dask arrays / ChunkedCSR and return
    (kind, per-language row-block inputs, row ranges, widths)."""
    from linxling._dask import is_dask_array, sparse_row_blocks
    from linxling.io._chunks import ChunkedCSR
    kinds = {lang: "h5" if isinstance(X[lang], ChunkedCSR) else "dask" for lang in langs}
    if len(set(kinds.values())) > 1:
        raise TypeError("X mixes ChunkedCSR corpora and dask arrays; give every language the same way")
    kind = kinds[langs[0]]
    ranges: list[tuple[int, int]] | None
    blocks: dict[str, Any] = {}
    row_ranges: dict[str, list] = {}
    if kind == "dask":                # checked first: an unknown chunk size makes the shape NaN
        for lang in langs:
            if not is_dask_array(X[lang]):
                raise TypeError(f"{names[lang]} is a {type(X[lang]).__name__}; with a dask array in X every "
                                "language must be a dask array")
            blocks[lang], row_ranges[lang] = sparse_row_blocks(X[lang], names[lang])
    widths = [int(X[lang].shape[1]) for lang in langs]
    rows = {lang: int(X[lang].shape[0]) for lang in langs}
    for lang in langs[1:]:
        if rows[lang] != rows[langs[0]]:
            raise ValueError(f"{names[lang]} has {rows[lang]} rows but {names[langs[0]]} has "
                             f"{rows[langs[0]]}; the languages must be row-aligned (parallel sentences)")
    if kind == "h5":
        for lang in langs:
            try:
                _ = X[lang].T
            except ValueError as e:   # written without the transpose
                raise ValueError(f"{names[lang]}: {e}") from None
        bounds = X[langs[0]].bounds
        ranges = [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]
        # absolute: a worker's working directory need not be this process's
        return kind, {lang: [(os.path.abspath(X[lang].path), X[lang].generation)] * len(ranges)
                      for lang in langs}, ranges, widths
    ranges = None
    for lang in langs:
        r = row_ranges[lang]
        if ranges is None:
            ranges = r
        elif r != ranges:
            raise ValueError(f"{names[lang]} has row chunks {X[lang].chunks[0]} but {names[langs[0]]} "
                             f"has {X[langs[0]].chunks[0]}; give the languages the same row chunks, e.g. "
                             f"X[{lang!r}].rechunk({{0: X[{langs[0]!r}].chunks[0]}})")
    # chunks of no rows (a filtered array, dask.array.concatenate) hold nothing to solve: left out,
    # as the h5 source leaves out empty chunk ranges (they failed as "chunk i is empty")
    assert ranges is not None
    keep = [i for i, (r0, r1) in enumerate(ranges) if r1 > r0]
    if len(keep) < len(ranges):
        ranges = [ranges[i] for i in keep]
        blocks = {lang: [blocks[lang][i] for i in keep] for lang in langs}
    return kind, blocks, ranges, widths


class DaskALS:
    """Data persisted on the cluster and the per-iteration ALS half-steps (client-driven)."""

    def __init__(self, client, X: Mapping, langs: list, names: Mapping, dtype, sources):
        self.client = client
        self.rows: list = []
        self.cols: list = []
        self.prev: dict = {}
        self.hot: tuple[int, list] | None = None   # (k, a _dask_hot_plan future per column block)
        try:
            self._set_up(X, langs, names, dtype, sources)
        except BaseException:          # e.g. "X is all zero", or Ctrl-C while the blocks are made
            self.release()
            raise

    def _set_up(self, X: Mapping, langs: list, names: Mapping, dtype, sources) -> None:
        import dask

        from linxling._dask import direct, n_workers, on_worker, persist, worker_list
        from linxling.operators._dask import _tree_sum
        client = self.client
        self.dtype = dtype
        # factors go straight between the client and the workers (not through the scheduler),
        # unless the client was made with direct_to_workers=False
        self.direct = direct(client)
        kind, blocks, ranges, widths = sources
        self.row_ranges = ranges
        self.widths = widths
        self.offsets = np.concatenate([[0], np.cumsum(widths)]).astype(np.int64)
        n, M = ranges[-1][1], int(self.offsets[-1])
        self.shape = (n, M)
        workers = worker_list(client)
        if kind == "h5":                 # said once, before any task: not a worker's bare h5py error
            from linxling.operators._dask import _disk_check
            for lang in langs:
                path, generation = blocks[lang][0]
                why = {w: msg for w, msg in client.run(_disk_check, path, generation).items() if msg}
                if why:
                    w, msg = sorted(why.items())[0]
                    raise ValueError(f"{names[lang]}: every dask worker must read the corpus file {path!r} at "
                                     f"that path (a filesystem they share); worker {w}: {msg}")
        row_tasks = []
        for b, (r0, r1) in enumerate(ranges):
            bl = [blocks[lang][b] for lang in langs]
            nm = [f"{names[lang]} chunk {b} (rows {r0}:{r1})" for lang in langs]
            with on_worker(workers, b):              # blocks spread evenly over the workers
                row_tasks.append(dask.delayed(_dask_row_block, pure=False)(bl, r0, r1, widths, dtype,
                                                                         nm, kind == "h5"))
        self.rows = persist(client, row_tasks)
        counts = client.compute(_tree_sum([dask.delayed(_dask_col_counts, pure=True)(f, M)
                                           for f in self.rows], 8)).result()
        for lang, o0, o1 in zip(langs, self.offsets[:-1], self.offsets[1:], strict=True):
            if not counts[o0:o1].any():
                raise ValueError(f"{names[lang]} is all zero: there is nothing to fit")
        self.col_counts = counts
        col_ranges = []
        if kind == "h5":
            col_tasks: list[Any] = []
            for lang, o0 in zip(langs, self.offsets[:-1], strict=True):
                b = X[lang].T.bounds
                for c0, c1 in zip(b[:-1], b[1:], strict=True):
                    if c1 > c0:
                        col_ranges.append((int(o0 + c0), int(o0 + c1)))
                        with on_worker(workers, len(col_tasks)):
                            col_tasks.append(dask.delayed(_dask_h5_col_block, pure=False)(
                                os.path.abspath(X[lang].path), int(c0), int(c1), n, dtype,
                                f"{names[lang]}ᵀ rows {int(c0)}:{int(c1)}", X[lang].generation))
            cols = persist(client, col_tasks)
        else:
            per_lang = max(1, len(ranges))
            for o0, o1 in zip(self.offsets[:-1], self.offsets[1:], strict=True):
                col_ranges += [(int(o0 + a), int(o0 + b))
                               for a, b in balanced_ranges(counts[o0:o1], per_lang)]
            # each row block's transpose is cut where the block is; only the pieces travel to
            # the worker that assembles a column block (spread evenly)
            import operator
            splits = [client.submit(_dask_split, f, r1 - r0, M, col_ranges, pure=False)
                      for f, (r0, r1) in zip(self.rows, ranges, strict=True)]
            pieces = [[client.submit(operator.getitem, sf, j, pure=False) for sf in splits]
                      for j in range(len(col_ranges))]
            cols = [client.submit(_dask_assemble, dtype, *pieces[j], pure=False,
                                  workers=[workers[j % len(workers)]] if workers else None,
                                  allow_other_workers=True)
                    for j in range(len(col_ranges))]
            for f in cols:
                if f.exception() is not None:
                    f.result()
            del splits, pieces
        self.col_ranges = col_ranges
        self.cols = cols
        self.n_workers = n_workers(client)
        self.nnz = int(counts.sum())
        self.bytes_sent = {"scattered": 0, "gathered": 0}
        per_iter: list[int] = []
        #: what the estimator publishes as ``dask_info_`` (the list grows with each iteration)
        self.info: dict[str, Any] = {"n_workers": self.n_workers, "row_blocks": len(self.rows),
                     "col_blocks": len(self.cols), "nnz": self.nnz,
                     "payload_bytes_per_iteration": per_iter}
        self._iter_start = 0

    def _sent(self) -> int:
        return self.bytes_sent["scattered"] + self.bytes_sent["gathered"]

    def scatter(self, array, n_receivers: int):
        """One array to one worker; the ``n_receivers`` workers whose tasks use it fetch it
        from there (counted as that many copies). Not broadcast: a replica that the scheduler's
        active memory manager drops between two uses would be sent again."""
        fut = self.client.scatter(array, hash=False, direct=self.direct)
        self.bytes_sent["scattered"] += array.nbytes * n_receivers
        return fut

    def _hot_plans(self, k: int, where) -> list:
        """One :func:`_dask_hot_plan` future per column block, made where the block is on the
        first CG cols half-step (and again for another k); a plan lost with its worker is
        recomputed from its task like the block."""
        if self.hot is None or self.hot[0] != k:
            n = self.shape[0]
            # loosely pinned: a plan lost with its worker is remade wherever its block is remade
            self.hot = (k, [self.client.submit(_dask_hot_plan, blk, n, k, self.dtype, pure=False,
                                               workers=at, allow_other_workers=True)
                            for blk, at in zip(self.cols, where, strict=True)])
        return self.hot[1]

    def half_step(self, side: str, Y, G, out, w, lam, solver, steps) -> float:
        """Solve the rows of one side's blocks into ``out`` (in place) with ``Y`` fixed; return
        the solved rows' objective.

        Each block is warm-started from its own result of this side's previous half-step, still
        on the worker that computed it (no transfer); the first time, or when a worker was
        lost, from ``out`` as the client holds it (the same values). ``Y`` is assembled on each
        worker from the other side's solved blocks where they are (each worker fetches only the
        blocks it lacks, :func:`_dask_stack`); the first time, or when one of them was lost,
        it is sent from the client's copy (the same values)."""
        from linxling._dask import gather_watching, holders, retry_lost
        if side == "rows":                  # an iteration starts with its rows half-step
            self._iter_start = self._sent()
        blocks, ranges = (self.rows, self.row_ranges) if side == "rows" else (self.cols, self.col_ranges)
        other_side, other_ranges = ("cols", self.col_ranges) if side == "rows" else ("rows", self.row_ranges)
        state = {"warm": self.prev.get(side), "other": self.prev.get(other_side)}
        if not _tiles(other_ranges, int(Y.shape[0])):
            state["other"] = None

        def attempt():
            for b in blocks:     # blocks lost with a worker: wait until recomputed from their tasks
                b.exception()
            other = state["other"]
            if other is not None and any(f.status != "finished" for f in other):
                other = None
            # each task where its block is; where the other side's solved blocks are
            held = holders(self.client, [*blocks, *(other or ())])
            where, other_at = held[:len(blocks)], held[len(blocks):]
            at_all = {a for at in where for a in (at or ())}
            receivers = len(at_all) or self.n_workers
            if other is not None and all(at is not None for at in (*where, *other_at)):
                where = [at[:1] for at in where]       # one worker per task: its own assembled Y
                receivers = len({at[0] for at in where})
                fYs = {}
                for a in sorted({at[0] for at in where}):   # one Y per worker, from the blocks where they are
                    fYs[a] = self.client.submit(_dask_stack, *other, pure=False, workers=[a])
                    self.bytes_sent["scattered"] += sum(
                        (r1 - r0) * Y.shape[1] * Y.itemsize + 8
                        for (r0, r1), at in zip(other_ranges, other_at, strict=True) if a not in at)
                fY = [fYs[at[0]] for at in where]
                inputs = list(other)
            else:
                fY = [self.scatter(Y, receivers)] * len(blocks)
                inputs = fY[:1]
            fG = self.scatter(G, receivers)
            warm = state["warm"]
            if warm is None or any(f.status != "finished" for f in warm):
                warm = [self.scatter(out, receivers)] * len(blocks)
            hots = self._hot_plans(int(Y.shape[1]), where) if side == "cols" and solver == "cg" \
                else [None] * len(blocks)
            # made (or remade after a loss) before the solves that watch them; exception() waits
            # for a plan and raises its error without fetching the plan to the client (result() would)
            for h in hots:
                if h is not None and h.exception() is not None:
                    h.result()
            # pinned (strictly: a loosely restricted task may be stolen by another worker, which
            # then fetches the block); a block being recomputed after a loss runs anywhere
            futs = [self.client.submit(_dask_solve, blk, fy, fG, fw, r0, r1, w, lam, solver, steps,
                                       hp, pure=False, workers=at)
                    for blk, (r0, r1), at, fy, fw, hp in zip(blocks, ranges, where, fY, warm, hots,
                                                             strict=True)]
            try:
                watch = [*blocks, *inputs, fG, *{f.key: f for f in warm}.values(),
                         *(h for h in hots if h is not None)]
                return futs, gather_watching(self.client, futs, watch, direct=self.direct)
            except BaseException:
                state["warm"] = state["other"] = None     # a retry starts from the client's copies
                raise

        futs, results = retry_lost(attempt)
        self.prev[side] = futs
        obj = 0.0
        for (r0, r1), (blk, o) in zip(ranges, results, strict=True):
            out[r0:r1] = blk
            obj += o
            self.bytes_sent["gathered"] += blk.nbytes + 8
        if side == "cols":
            self.info["payload_bytes_per_iteration"].append(self._sent() - self._iter_start)
        return obj

    def release(self) -> None:
        """Let go of every block and solved block on the cluster (after the fit, or when it
        stopped: an error, Ctrl-C). Each future is released, not only forgotten: an interrupted
        half-step's frames, which an interactive session keeps with its last traceback
        (``sys.last_traceback``), still refer to them, and held the blocks of X and Xᵀ on the
        workers until then. Released rather than ``client.cancel``-ed: cancelling these keys,
        whose dependents are gone, failed the scheduler's ``assert ts.who_wants`` (distributed
        2026.8), which then dropped the client's connection."""
        futures = [*self.rows, *self.cols, *(f for fs in self.prev.values() for f in fs),
                   *(self.hot[1] if self.hot is not None else ())]
        self.rows, self.cols = [], []
        self.prev = {}
        self.hot = None
        for f in futures:
            f.release()            # idempotent; the scheduler forgets a key no future holds


