"""Centred cross-covariance ``Ĉ = X̂^T Ŷ`` with a one-hot ``Y`` given by integer labels."""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from linxling.kernels.dense import add_outer, gram64
from linxling.kernels.spmm import csr_matmat, csr_rmatmat, csr_transpose, rows_matmat
from linxling._backend import get_namespace
from linxling._validation import check_sparse_matrix
from linxling._linop import LinearOperator

__all__ = ["CrossCovariance"]


class CrossCovariance(LinearOperator):
    """``X̂^T Ŷ`` (p x K) applied matrix-free; ``Y`` is the n x K one-hot label matrix.

    Forward, for ``V`` (K, m)::

        X̂^T Ŷ V = X^T (V[labels]) - n mu (ȳ^T V)

    adjoint, for ``U`` (p, m)::

        Ŷ^T X̂ U = Y^T (X U) - n ȳ (mu^T U)

    where ``mu = X^T 1 / n`` and ``ȳ = counts / n``. Only one of ``X̂`` and ``Ŷ`` needs
    centring (``X̂^T Ŷ = X̂^T Y = X^T Ŷ``); the formulas above are that identity.

    With ``precompute=True`` (default) the sparse p x K matrix ``X^T Y`` (per-concept term
    sums; ``nnz(X^T Y) <= nnz(X)``) is built once with one sparse product, and both
    directions are a single SpMM with it, with no (n, m) intermediate. With
    ``precompute=False`` the forward direction gathers ``V[labels]`` (n, m) and multiplies
    by ``X^T``; the adjoint multiplies by ``X`` and sums rows by label with a K x n one-hot
    CSR matrix (two SpMMs).

    Parameters
    ----------
    X : sparse matrix (n_samples, n_features)
    labels : int array (n_samples,)
        Concept index of each row, in ``[0, n_classes)``.
    n_classes : int, optional
        ``K``; defaults to ``labels.max() + 1``. Classes without rows are allowed.
    mean : array (n_features,), optional
        ``mu``; defaults to the column means of ``X``.
    precompute : bool, default True
        Build ``X^T Y`` once (see above).

    Attributes
    ----------
    X : csr_matrix (n_samples, n_features)
    labels : ndarray (n_samples,) of int64
    n_samples, n_classes : int
    mean_ : ndarray (n_features,)
    class_counts_ : ndarray (n_classes,)
    class_mean_ : ndarray (n_classes,)
        ``ȳ = counts / n``.
    XtY_ : sparse (n_features, n_classes) or None
        ``X^T Y`` when ``precompute``.
    """

    def __init__(self, X: Any, labels: Any, n_classes: int | None = None, mean: Any = None, *,
                 precompute: bool = True) -> None:
        X = check_sparse_matrix(X, "X")
        xp = get_namespace(X).xp
        lab = xp.asarray(labels)
        if lab.ndim != 1:
            raise ValueError(f"labels must be 1-D (n_samples,), got shape {lab.shape}")
        if lab.shape[0] != X.shape[0]:
            raise ValueError(f"labels has {lab.shape[0]} entries but X has {X.shape[0]} rows")
        if lab.dtype.kind not in "iu":
            if lab.dtype.kind == "f" and bool(xp.all(lab == xp.round(lab))):
                lab = lab.astype(np.int64)
            else:
                raise TypeError(f"labels must be integers, got dtype {lab.dtype}")
        lab = lab.astype(np.int64, copy=False)
        lo = int(lab.min()) if lab.size else 0
        hi = int(lab.max()) if lab.size else -1
        if n_classes is None:
            n_classes = hi + 1
        n_classes = int(n_classes)
        if lo < 0 or hi >= n_classes:
            raise ValueError(f"labels must lie in [0, {n_classes}), found values in [{lo}, {hi}]")
        n, p = X.shape
        self.X = X
        self.labels = lab
        self.n_samples = n
        self.n_classes = n_classes
        if mean is None:
            mu = xp.asarray(X.sum(axis=0)).ravel() / n
        else:
            mu = xp.asarray(mean)
            if mu.shape != (p,):
                raise ValueError(f"mean must have shape ({p},), got {mu.shape}")
        self.mean_ = mu.astype(X.dtype, copy=False)
        self.class_counts_ = xp.bincount(lab, minlength=n_classes)
        self.class_mean_ = (self.class_counts_ / n).astype(X.dtype)
        ones = xp.ones(n, dtype=X.dtype)
        spmod = get_namespace(X).sparse
        # K x n one-hot transpose (CSR): Y^T Z sums the rows of Z by label in one SpMM
        self._YT = spmod.csr_matrix((ones, (lab, xp.arange(n))), shape=(n_classes, n))
        self.XtY_ = None
        self._YtX = None
        self._blocks = self._block_labels = self._block_YT = None
        self._one_doc = None
        if precompute:
            self._YtX = (self._YT @ X).tocsr()              # K x p, nnz <= nnz(X)
            self._YtX.sum_duplicates()
            self.XtY_ = csr_transpose(self._YtX)                 # p x K, explicit CSR (fast SpMM)
        super().__init__((p, n_classes), X.dtype)

    @classmethod
    def from_blocks(cls, blocks: Any, labels: Any, n_classes: int, *, precompute: bool = True,
                    dtype: Any = None, shared: Any = None) -> CrossCovariance:
        """``X̂ᵀŶ`` for the block-diagonal ``X = diag(X_1, ..., X_L)`` without stacking ``X``.

        Rows of block ``l`` use only block ``l``'s columns (one language's documents and
        vocabulary, as in Cr5). With ``precompute`` the sparse ``YᵀX`` (K × p) is assembled block
        by block and kept with its transpose (two copies of ``nnz(X)``, the fastest products);
        without it nothing is copied: ``Ŷᵀ X̂ U`` is an SpMM with each block plus a sum of rows by
        label, and ``X̂ᵀ Ŷ V`` uses :func:`linxling.kernels.spmm.csr_rmatmat` on each block.

        When every concept has at most one document per block (one article per concept and
        language, as in the paper's Wikipedia setting, or aligned verses), ``YᵀX_l`` is ``X_l`` with
        its rows moved and ``X_lᵀY_l`` is ``X_lᵀ`` with its columns renumbered, so no ``YᵀX`` is
        built: ``ŶᵀX̂U`` reads ``X_l`` itself and ``X̂ᵀŶV`` a CSR copy of ``X_lᵀ``
        (:func:`linxling.kernels.spmm.rows_matmat`), made on first use with ``precompute`` (else the
        scatter product) unless ``shared`` supplies it.

        Parameters
        ----------
        blocks : sequence of CSR matrices (n_l, p_l)
        labels : sequence of int arrays (n_l,), concept index of each row in ``[0, n_classes)``
        n_classes : int
        precompute : bool, default True
            Assemble ``YᵀX`` and keep it with its transpose (or, one document per concept, make the
            CSR copy of ``X_lᵀ`` on first use), as above.
        dtype : float dtype of the products (default: the blocks')
        shared : sequence of ``(X_l, X_lᵀ or None)`` or None, optional
            Per block, matrices already held elsewhere (e.g. by the Gram operator of the same
            block) to use instead of making copies: ``X_l`` in ``dtype`` with the block's shape
            and values, and its CSR transpose. Used only in the one-document-per-concept case.
        """
        from linxling.operators._source import RowSource
        blocks = [X if isinstance(X, RowSource) else check_sparse_matrix(X, f"blocks[{i}]", dtype=dtype)
                  for i, X in enumerate(blocks)]
        if any(isinstance(X, RowSource) for X in blocks):
            return cls._from_sources(blocks, labels, n_classes, dtype=dtype)
        labels = [np.asarray(lab, dtype=np.int64) for lab in labels]
        if len(blocks) != len(labels) or not blocks:
            raise ValueError(f"blocks and labels must be non-empty and of equal length, got {len(blocks)} "
                             f"and {len(labels)}")
        n_classes = int(n_classes)
        for i, (X, lab) in enumerate(zip(blocks, labels, strict=True)):
            if lab.shape != (X.shape[0],):
                raise ValueError(f"labels[{i}] must have shape ({X.shape[0]},), got {lab.shape}")
            if lab.size and (lab.min() < 0 or lab.max() >= n_classes):
                raise ValueError(f"labels[{i}] must lie in [0, {n_classes})")
        self = cls.__new__(cls)
        dt = blocks[0].dtype
        n = sum(X.shape[0] for X in blocks)
        p = sum(X.shape[1] for X in blocks)
        self.X = None
        self.labels = np.concatenate(labels)
        self.n_samples = n
        self.n_classes = n_classes
        self.mean_ = (np.concatenate([np.asarray(X.sum(axis=0)).ravel() for X in blocks]) / n).astype(dt)
        self.class_counts_ = np.bincount(self.labels, minlength=n_classes)
        self.class_mean_ = (self.class_counts_ / n).astype(dt)
        self._col_offsets = np.cumsum([0] + [X.shape[1] for X in blocks])
        self.XtY_ = self._YtX = self._YT = None
        self._blocks = self._block_labels = self._block_YT = None
        self._one_doc = None
        one_doc = one_document_per_concept(labels, n_classes)
        YT = [] if one_doc else [sp.csr_matrix((np.ones(X.shape[0], dtype=dt), (lab, np.arange(X.shape[0]))),
                                               shape=(n_classes, X.shape[0]))
                                 for X, lab in zip(blocks, labels, strict=True)]
        if one_doc:
            # one document per concept and language (Wikipedia, aligned verses): YᵀX_l is X_l with
            # its rows moved and X_lᵀY_l is X_lᵀ with its columns renumbered, so neither is stored
            shared = [None] * len(blocks) if shared is None else list(shared)
            if len(shared) != len(blocks):
                raise ValueError(f"shared has {len(shared)} entries for {len(blocks)} blocks")
            self._one_doc = [_OneDocBlock(X, lab, n_classes, precompute, pair)
                             for X, lab, pair in zip(blocks, labels, shared, strict=True)]
        elif precompute:
            self._YtX = sp.hstack([Y @ X for Y, X in zip(YT, blocks, strict=True)], format="csr")
            self._YtX.sum_duplicates()
            self.XtY_ = csr_transpose(self._YtX)
        else:
            self._blocks, self._block_labels, self._block_YT = blocks, labels, YT
        LinearOperator.__init__(self, (p, n_classes), dt)
        return self

    @classmethod
    def _from_sources(cls, blocks: list, labels: Any, n_classes: int, *, dtype: Any = None) -> CrossCovariance:
        """:meth:`from_blocks` when some blocks are row-partitioned (RowSource: on disk, on a dask
        cluster). Every block is then used through its chunked products: ``X̂ᵀŶV`` as ``X_lᵀ (V[labels])``
        and ``ŶᵀX̂U`` as the rows of ``X_l U`` summed by label; nothing of ``X`` is copied."""
        from linxling.operators._source import CSRSource, RowSource
        sources = [X if isinstance(X, RowSource) else CSRSource(X) for X in blocks]
        labels = [np.asarray(lab, dtype=np.int64) for lab in labels]
        if len(sources) != len(labels) or not sources:
            raise ValueError(f"blocks and labels must be non-empty and of equal length, got {len(sources)} "
                             f"and {len(labels)}")
        n_classes = int(n_classes)
        for i, (X, lab) in enumerate(zip(sources, labels, strict=True)):
            if lab.shape != (X.shape[0],):
                raise ValueError(f"labels[{i}] must have shape ({X.shape[0]},), got {lab.shape}")
            if lab.size and (lab.min() < 0 or lab.max() >= n_classes):
                raise ValueError(f"labels[{i}] must lie in [0, {n_classes})")
        self = cls.__new__(cls)
        dt = np.dtype(dtype) if dtype is not None else np.result_type(*[X.dtype for X in sources])
        n = sum(X.shape[0] for X in sources)
        p = sum(X.shape[1] for X in sources)
        self.X = None
        self.labels = np.concatenate(labels)
        self.n_samples = n
        self.n_classes = n_classes
        self.mean_ = (np.concatenate([X.column_sums() for X in sources]) / n).astype(dt)
        self.class_counts_ = np.bincount(self.labels, minlength=n_classes)
        self.class_mean_ = (self.class_counts_ / n).astype(dt)
        self._col_offsets = np.cumsum([0] + [X.shape[1] for X in sources])
        self.XtY_ = self._YtX = self._YT = None
        self._blocks = self._block_labels = self._block_YT = self._one_doc = None
        self._sources, self._source_labels = sources, labels
        self._source_YT = [sp.csr_matrix((np.ones(X.shape[0]), (lab, np.arange(X.shape[0]))),
                                         shape=(n_classes, X.shape[0])) for X, lab in zip(sources, labels, strict=True)]
        LinearOperator.__init__(self, (p, n_classes), dt)
        return self

    #: threads for the per-language products of row-partitioned blocks (languages held by
    #: different dask workers run side by side; the client's threads only wait)
    n_jobs = 1

    def _per_source(self, fn, items: list) -> list:
        if self.n_jobs > 1 and len(items) > 1:
            from concurrent.futures import ThreadPoolExecutor
            with ThreadPoolExecutor(max_workers=min(self.n_jobs, len(items))) as ex:
                return list(ex.map(fn, items))
        return [fn(it) for it in items]

    def _source_matmat(self, V):
        Y = np.empty((self.shape[0], V.shape[1]), dtype=np.result_type(self.dtype, V.dtype))
        items = list(zip(self._sources, self._source_labels, self._col_offsets[:-1], self._col_offsets[1:],
                         strict=True))
        Vd = np.ascontiguousarray(V, dtype=Y.dtype)
        outs = self._per_source(lambda it: it[0].rmatmat_rows(Vd, it[1]), items)
        for (_, _, a, b), out in zip(items, outs, strict=True):
            Y[a:b] = out
        return Y

    def _source_rmatmat(self, U):
        dt = np.result_type(self.dtype, U.dtype)
        Y = np.zeros((self.n_classes, U.shape[1]), dtype=dt)
        items = list(zip(self._sources, self._source_labels, self._source_YT, self._col_offsets[:-1],
                         self._col_offsets[1:], strict=True))
        # sources that form X_l U whole run side by side (dask workers); those that sum it chunk by
        # chunk into Y (on disk) run here, one after the other
        outs = iter(self._per_source(lambda it: it[0].matmat(np.ascontiguousarray(U[it[3]:it[4]], dtype=dt)),
                                     [it for it in items if not it[0].sums_by_chunk]))
        for src, lab, YT, a, b in items:                             # summed in language order
            if src.sums_by_chunk:
                src.add_rows_matmat(U[a:b], lab, Y)
            else:
                Y += csr_matmat(YT.astype(dt, copy=False), next(outs))
        return Y

    def order_concepts(self, keys: list) -> None:
        """Declare the blocks' rows sorted by concept: ``keys[l]`` (n_l,) ranks of the rows'
        concepts in one order of the K concepts, non-decreasing in every block (each block on
        disk, :class:`~linxling.operators._source.ChunkedSource`); enables :meth:`pencil_images`."""
        from linxling.operators._source import ChunkedSource
        sources = getattr(self, "_sources", None)
        if sources is None or not all(isinstance(X, ChunkedSource) for X in sources):
            raise ValueError("order_concepts needs every block on disk (ChunkedSource)")
        keys = [np.asarray(k, dtype=np.int64) for k in keys]
        if len(keys) != len(sources) or any(k.shape != lab.shape for k, lab in zip(keys, self._source_labels,
                                                                                      strict=True)):
            raise ValueError("keys must give one rank per row of every block")
        if any(k.size and (k.min() < 0 or k.max() >= self.n_classes) for k in keys):
            raise ValueError(f"keys must lie in [0, {self.n_classes})")
        if not sorted_by_concept(keys):
            raise ValueError("keys must be non-decreasing within every block (rows sorted by concept)")
        self._keys = keys

    def concept_ordered(self) -> bool:
        """Whether :meth:`pencil_images` applies: :meth:`order_concepts` was called."""
        return self.__dict__.get("_keys") is not None

    def _concept_ranges(self, read_bytes: int) -> tuple[list[list[tuple[int, int]]], np.ndarray]:
        """Per block, the row ranges of consecutive concept ranges (each range's rows of all blocks
        together about ``read_bytes``, at least one concept), and the ranges' concept bounds."""
        weight = np.zeros(self.n_classes)
        for X, lab in zip(self._sources, self._keys, strict=True):
            row_bytes = 8 + (4 + X.dtype.itemsize) * np.diff(X.chunked.indptr)
            weight += np.bincount(lab, weights=row_bytes, minlength=self.n_classes)
        cum = np.cumsum(weight)
        del weight
        cuts = np.searchsorted(cum, np.arange(1, int(cum[-1] // max(1, read_bytes)) + 1) * float(read_bytes),
                               side="right") if cum.size else np.zeros(0, dtype=np.int64)
        bounds = np.unique(np.concatenate([[0], np.clip(cuts, 1, self.n_classes), [self.n_classes]]))
        return [list(zip(r[:-1].tolist(), r[1:].tolist(), strict=True))
                for r in (np.searchsorted(key, bounds) for key in self._keys)], bounds

    def pencil_images(self, Z: Any, alpha: float | None = None) -> tuple[np.ndarray, np.ndarray | None]:
        """``Ĉ Ĉᵀ Z`` and, with ``alpha``, ``(X̂ᵀX̂ + alpha I) Z`` from **one read** of the corpus
        (:meth:`concept_ordered` blocks only), in this operator's dtype.

        The blocks are read side by side in ranges of concepts: for each range, every block's rows
        ``X_i`` give ``Q_i = X_i Z_l``, their concept sums ``T = Σ Y_iᵀQ_i`` (the range's rows of
        ``Ĉ``'s adjoint) and ``X_iᵀQ_i`` (the Gram's product); then ``X_iᵀ T[labels_i]`` (the
        forward product). No K × m (or n × m) block exists, where two reads with a K × m block
        in between make ``Ĉ Ĉᵀ Z`` otherwise. Centring, with ``g = Xᵀ ȳ[labels]`` (kept after the
        first call): ``Ĉ Ĉᵀ Z = Xᵀ T[labels] − n g μᵀZ − n μ (gᵀZ − n ‖ȳ‖² μᵀZ)`` and
        ``X̂ᵀX̂ Z = XᵀX Z − n μ μᵀZ``.
        """
        if not self.concept_ordered():
            raise ValueError("pencil_images needs on-disk blocks whose rows are sorted by concept "
                             "(order_concepts)")
        dt = self.dtype
        Z = np.ascontiguousarray(Z, dtype=dt)
        m = Z.shape[1]
        CZ = np.zeros((self.shape[0], m), dtype=dt)
        AZ = np.zeros((self.shape[0], m), dtype=dt) if alpha is not None else None
        g = getattr(self, "_g", None)
        g_new = np.zeros((self.shape[0], 1), dtype=np.float64) if g is None else None
        # each range's rows about one read of the sources (one stored chunk when read_bytes is 0)
        read_bytes = max(X.read_bytes or X.max_chunk_nbytes(0) for X in self._sources)
        cached = self.__dict__.get("_ranges")
        if cached is None or cached[0] != read_bytes:
            cached = self._ranges = (read_bytes, *self._concept_ranges(read_bytes))
        _, ranges, bounds = cached
        readers = [X.chunked.read_ranges(rng, dt) for X, rng in zip(self._sources, ranges, strict=True)]
        try:
            self._pencil_pass(Z, readers, bounds, CZ, AZ, g_new)
        finally:
            for reader in readers:
                reader.close()
        if g_new is not None:
            g = self._g = g_new[:, 0]
        n = float(self.n_samples)
        mu = self.mean_.astype(np.float64)
        ybar = self.class_mean_.astype(np.float64)
        muZ, gZ = gram64(np.stack([mu, g], axis=1), Z)       # row blocks: no float64 copy of Z
        add_outer(CZ, g.astype(dt), muZ.astype(dt), -n)
        add_outer(CZ, mu.astype(dt), (gZ - n * float(ybar @ ybar) * muZ).astype(dt), -n)
        if AZ is not None:
            step = 1 << 16
            for i in range(0, Z.shape[0], step):              # + αZ, a row block at a time
                AZ[i:i + step] += dt.type(alpha) * Z[i:i + step]
            add_outer(AZ, mu.astype(dt), muZ.astype(dt), -n)
        return CZ, AZ

    def _pencil_pass(self, Z: np.ndarray, readers: list, bounds: np.ndarray, CZ: np.ndarray,
                     AZ: np.ndarray | None, g_new: np.ndarray | None) -> None:
        """The read of :meth:`pencil_images`: uncentred ``Xᵀ T[labels]`` into ``CZ``, ``XᵀX Z``
        into ``AZ`` and ``Xᵀ ȳ[labels]`` into ``g_new`` (when given), range by range."""
        from linxling.kernels.spmm import add_rows
        from linxling.operators._source import _cast
        dt, m, offs = self.dtype, Z.shape[1], self._col_offsets
        for j in range(len(bounds) - 1):
            k0, k1 = int(bounds[j]), int(bounds[j + 1])
            T = np.zeros((k1 - k0, m), dtype=dt)
            parts = []
            for li, (X, lab, key, reader) in enumerate(zip(self._sources, self._source_labels, self._keys, readers,
                                                          strict=True)):
                r0, r1, Xi = next(reader)
                X.n_reads += 1
                if r1 == r0 or Xi.nnz == 0:
                    continue
                Xi = _cast(Xi, dt)
                XiT = csr_transpose(Xi)
                rows = key[r0:r1] - k0
                Q = csr_matmat(Xi, Z[offs[li]:offs[li + 1]])
                add_rows(T, rows, Q)
                if AZ is not None:
                    rows_matmat(XiT.indptr[:-1], XiT.indptr[1:], XiT.indices, XiT.data, Q,
                                AZ[offs[li]:offs[li + 1]], accumulate=True)
                if g_new is not None:
                    w = self.class_mean_[lab[r0:r1]].astype(np.float64)[:, None]
                    rows_matmat(XiT.indptr[:-1], XiT.indptr[1:], XiT.indices, XiT.data.astype(np.float64), w,
                                g_new[offs[li]:offs[li + 1]], accumulate=True)
                del Q
                parts.append((li, XiT, rows))
            for li, XiT, rows in parts:
                rows_matmat(XiT.indptr[:-1], XiT.indptr[1:], XiT.indices, XiT.data, np.ascontiguousarray(T[rows]),
                            CZ[offs[li]:offs[li + 1]], accumulate=True)
            del parts, T

    def astype(self, dtype: Any, *, shared: Any = None) -> CrossCovariance:
        """The same operator with its matrices in ``dtype`` (copies; e.g. a float32 twin for cheap
        approximate products). ``shared``: as in :meth:`from_blocks`, matrices in ``dtype`` held
        elsewhere, used instead of copies (one-document-per-concept blocks only)."""
        dt = np.dtype(dtype)
        twin = type(self).__new__(type(self))
        twin.__dict__.update(self.__dict__)
        if self._one_doc is not None:
            pairs = [None] * len(self._one_doc) if shared is None else list(shared)
            if len(pairs) != len(self._one_doc):
                raise ValueError(f"shared has {len(pairs)} entries for {len(self._one_doc)} blocks")
            twin._one_doc = [blk.astype(dt, pair) for blk, pair in zip(self._one_doc, pairs, strict=True)]
        if self._blocks is not None:
            twin._blocks = [X.astype(dt) for X in self._blocks]
            twin._block_YT = [Y.astype(dt) for Y in self._block_YT]
        for name in ("X", "_YtX", "XtY_", "_YT"):
            value = getattr(self, name, None)
            if value is not None:
                setattr(twin, name, value.astype(dt))
        twin.mean_ = self.mean_.astype(dt)
        twin.class_mean_ = self.class_mean_.astype(dt)
        LinearOperator.__init__(twin, self.shape, dt)
        return twin

    def _matmat(self, V):
        if getattr(self, "_sources", None) is not None:     # row-partitioned blocks
            Y = self._source_matmat(V)
        elif self._one_doc is not None:                     # X_lᵀ with columns renumbered
            Y = np.empty((self.shape[0], V.shape[1]), dtype=np.result_type(self.dtype, V.dtype))
            for blk, a, b in zip(self._one_doc, self._col_offsets[:-1], self._col_offsets[1:], strict=True):
                blk.forward(V, Y[a:b])
        elif self._blocks is not None:                      # per block, no copy of X
            Y = np.empty((self.shape[0], V.shape[1]), dtype=np.result_type(self.dtype, V.dtype))
            for X, lab, a, b in zip(self._blocks, self._block_labels, self._col_offsets[:-1],
                                    self._col_offsets[1:], strict=True):
                Y[a:b] = csr_rmatmat(X, np.ascontiguousarray(V[lab], dtype=Y.dtype))
        elif self.XtY_ is not None:
            Y = csr_matmat(self.XtY_, V)                    # (X^T Y) V: one SpMM
        else:
            Y = self.X.T @ V[self.labels]                   # X^T (Y V): gather + SpMM
        Y = get_namespace(Y).xp.asarray(Y)
        add_outer(Y, self.mean_, self.class_mean_ @ V, -self.n_samples)
        return Y

    def _rmatmat(self, U):
        if getattr(self, "_sources", None) is not None:     # row-partitioned blocks
            Y = self._source_rmatmat(U)
        elif self._one_doc is not None:                     # X_l with rows moved to their concepts
            Y = np.empty((self.n_classes, U.shape[1]), dtype=np.result_type(self.dtype, U.dtype))
            for i, (blk, a, b) in enumerate(zip(self._one_doc, self._col_offsets[:-1], self._col_offsets[1:],
                                                strict=True)):
                blk.adjoint(U[a:b], Y, accumulate=i > 0)
        elif self._blocks is not None:                      # per block, no copy of X
            Y = np.zeros((self.n_classes, U.shape[1]), dtype=np.result_type(self.dtype, U.dtype))
            for X, YT, a, b in zip(self._blocks, self._block_YT, self._col_offsets[:-1],
                                   self._col_offsets[1:], strict=True):
                Ul = np.ascontiguousarray(U[a:b], dtype=Y.dtype)
                Y += csr_matmat(YT.astype(Y.dtype, copy=False), csr_matmat(X.astype(Y.dtype, copy=False), Ul))
        elif self._YtX is not None:
            Y = csr_matmat(self._YtX, U)                    # (Y^T X) U: one SpMM
        else:
            Z = self.X @ U                                  # (n, m) SpMM
            Y = self._YT @ Z                                # (K, m) one-hot aggregation SpMM
        Y = get_namespace(Y).xp.asarray(Y)
        add_outer(Y, self.class_mean_, self.mean_ @ U, -self.n_samples)
        return Y

    def one_hot(self) -> sp.csr_matrix:
        """The n x K one-hot matrix ``Y`` (CSR)."""
        return csr_transpose(self._YT)


def sorted_by_concept(keys: Any) -> bool:
    """Whether every block's concept keys (a sequence of int arrays) are non-decreasing: the rows
    of each block sorted by concept, as :meth:`CrossCovariance.order_concepts` needs."""
    return all(k.size < 2 or bool(np.all(k[1:] >= k[:-1])) for k in keys)


def one_document_per_concept(labels: Any, n_classes: int) -> bool:
    """Whether every block's labels (a sequence of int arrays) name each concept at most once: the
    case in which :meth:`CrossCovariance.from_blocks` stores no ``YᵀX``."""
    return all(lab.size == 0 or int(np.bincount(lab, minlength=n_classes).max()) <= 1 for lab in labels)


class _OneDocBlock:
    """One block ``X_l`` whose rows have distinct concept labels (see
    :meth:`CrossCovariance.from_blocks`): ``YᵀX_l`` and ``X_lᵀY_l`` applied from ``X_l`` and a CSR
    ``X_lᵀ`` with the four-array product :func:`linxling.kernels.spmm.rows_matmat`."""

    def __init__(self, X, labels: np.ndarray, n_classes: int, keep_transpose: bool, pair=None) -> None:
        self.X = X
        self.XT = None
        self.keep_transpose = bool(keep_transpose)
        if pair is not None:
            self._check_pair(pair)
            self.X, self.XT = pair
        self.labels = labels
        n = X.shape[0]
        self.identity = n == n_classes and bool(np.array_equal(labels, np.arange(n)))
        ip = self.X.indptr
        if self.identity:
            self.starts, self.ends = ip[:-1], ip[1:]
        else:       # concept k's row of YᵀX_l is X_l's row of its document (empty without one)
            self.starts = np.zeros(n_classes, dtype=ip.dtype)
            self.ends = np.zeros(n_classes, dtype=ip.dtype)
            self.starts[labels], self.ends[labels] = ip[:-1], ip[1:]

    def _check_pair(self, pair) -> None:
        X, XT = pair
        if (X.shape != self.X.shape or not sp.isspmatrix_csr(X) or X.nnz != self.X.nnz
                or not np.array_equal(X.indptr, self.X.indptr)):
            raise ValueError(f"shared matrix of shape {X.shape} (nnz {X.nnz}) does not match the block "
                             f"{self.X.shape} (nnz {self.X.nnz})")
        if XT is not None and (XT.shape != X.shape[::-1] or XT.nnz != X.nnz or XT.dtype != X.dtype):
            raise ValueError(f"shared transpose of shape {XT.shape} does not match the block {X.shape}")

    def astype(self, dtype, pair=None) -> _OneDocBlock:
        twin = _OneDocBlock.__new__(_OneDocBlock)
        twin.__dict__.update(self.__dict__)
        if pair is not None:
            self._check_pair(pair)
            twin.X, twin.XT = pair
        else:
            twin.X = self.X.astype(dtype)
            twin.XT = None if self.XT is None else self.XT.astype(dtype)
        return twin

    def _transpose(self):
        if self.XT is None and self.keep_transpose:
            self.XT = csr_transpose(self.X)             # built on first use
        return self.XT

    def forward(self, V: np.ndarray, out: np.ndarray) -> None:
        """``out = X_lᵀ Y_l V`` (p_l, m) (uncentred)."""
        dt = out.dtype
        XT = self._transpose()
        if XT is None:                                  # no transposed copy: scatter from X_l
            W = V if self.identity else V[self.labels]
            out[...] = csr_rmatmat(self.X.astype(dt, copy=False), np.ascontiguousarray(W, dtype=dt))
            return
        rows_matmat(XT.indptr[:-1], XT.indptr[1:], XT.indices, XT.data.astype(dt, copy=False),
                    np.ascontiguousarray(V, dtype=dt), out, colmap=None if self.identity else self.labels)

    def adjoint(self, U: np.ndarray, out: np.ndarray, accumulate: bool) -> None:
        """``out (+)= Y_lᵀ X_l U`` (K, m) (uncentred)."""
        dt = out.dtype
        rows_matmat(self.starts, self.ends, self.X.indices, self.X.data.astype(dt, copy=False),
                    np.ascontiguousarray(U, dtype=dt), out, accumulate=accumulate)
