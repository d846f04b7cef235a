"""Cr5: crosslingual reduced-rank ridge regression (Josifoski et al., WSDM 2019).

The estimator solves eq. (8) of the paper,

    minimize_{W, b}  1/2 ||Y - X Wᵀ - 1 bᵀ||²_F + λ/2 ||W||²_F   subject to rank(W) = r,

exactly (up to solver tolerances) with a matrix-free engine:

1. ``M = ŶᵀX̂ (X̂ᵀX̂ + λI)⁻¹ X̂ᵀŶ`` (K × K, eq. 12) is applied to a *block* of vectors at a time.
   The inverse is never formed: with documents of each language using only that language's
   features, X̂ᵀX̂ + λI = B − nμμᵀ with B = XᵀX + λI block-diagonal, so
   (X̂ᵀX̂ + λI)⁻¹ = B⁻¹ + c·g gᵀ with g = B⁻¹μ, c = n / (1 − nμᵀg)  (Woodbury; the paper's
   "B⁻¹ − ζζᵀ" with ζ real-valued written out). Each block B_l⁻¹ is applied with a dense
   Cholesky factor, a CHOLMOD factor or preconditioned block CG, chosen per language.
2. The top-r eigenvectors P_r of M (ARPACK for small r, block subspace iteration otherwise).
3. Φ* = P_rᵀ ŶᵀX̂ (X̂ᵀX̂ + λI)⁻¹ (eq. 14) with one block solve of r right-hand sides.
4. Φ with orthonormal rows from the r × r eigendecomposition Φ*Φ*ᵀ = QΛQᵀ (eq. 15):
   Φ = Λ^{-1/2} Qᵀ Φ*, the right singular vectors of W; the singular values of W are Λ^{1/2}.
"""
from __future__ import annotations

import inspect
import os
import time
import warnings
from collections.abc import Hashable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from numbers import Real
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, StrOptions

from linxling._dask import check_not_other_dask
from linxling._memory import current_rss, parse_budget
from linxling._progress import progress
from linxling._threads import blas_single_thread
from linxling._validation import (
    check_float_dtype,
    check_language_keys,
    check_random_state,
    check_sparse_matrix_max,
    check_value_range,
)
from linxling._warnings import find_stack_level
from linxling.io import register_model
from linxling.kernels.dense import add_outer, gemm_acc, gram64, gram_tn
from linxling.kernels.spmm import csr_column_sums, csr_column_sumsq, padded_width
from linxling.models._base import (
    ConceptEmbeddingMixin,
    check_small_concept_data,
    concept_groups,
    encode_concepts,
    rows_times_map,
    stored_float,
)
from linxling.models._estimator import (
    DEVICE,
    FLOAT_DTYPE,
    NONNEG_INT,
    NONNEG_REAL,
    POSITIVE_INT,
    POSITIVE_REAL,
    RANDOM_STATE,
)
from linxling.models._estimator import jsonable as _jsonable
from linxling.operators import (
    BlockDiagonal,
    CallableOperator,
    CrossCovariance,
    GramBlockInverse,
    WoodburyInverse,
    woodbury_from_blocks,
)
from linxling.operators._source import ChunkedSource, RowSource, as_row_source, is_row_partitioned
from linxling.operators.crosscov import one_document_per_concept, sorted_by_concept
from linxling.solvers import eigsh
from linxling.solvers._orth import _cholesky_qr
from linxling.solvers._results import EigResult
from linxling.solvers.eigen import resolve_method

__all__ = ["Cr5", "encode_concepts"]


def _flip_signs(components: dict) -> None:
    """Make each component's largest-magnitude weight over all languages positive, in place
    (scikit-learn's ``svd_flip`` convention): an eigenvector's sign is arbitrary, so without it
    two fits that differ only by round-off (another summation order, a worker that died) could
    return mirrored components."""
    best = None
    for W in components.values():
        if W.shape[1] == 0:
            continue
        j = np.argmax(np.abs(W), axis=1)
        v = W[np.arange(W.shape[0]), j]
        best = v if best is None else np.where(np.abs(v) > np.abs(best), v, best)
    if best is None:
        return
    flip = best < 0
    if np.any(flip):
        for W in components.values():
            W[flip] *= -1


def _old_style_callback(callback: Any) -> bool:
    """True for Cr5's earlier ``callback(stage, info)``: exactly two positional parameters."""
    try:
        params = list(inspect.signature(callback).parameters.values())
    except (TypeError, ValueError):
        return False
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) == 2


@register_model("Cr5")
class Cr5(ConceptEmbeddingMixin):
    """Crosslingual reduced-rank ridge regression (Cr5).

    Parameters
    ----------
    n_components : int, default 300
        Rank r of the coefficient matrix = dimension of the embedding space. The paper's r. On
        a validation split of the leaderboard's training verses (six languages, 3,933 verses,
        CSLS P@1; benchmarks/README.md "The linear models' defaults on validation verses"): r = 100 / 200 / 300 / 400:
        0.913 / 0.931 / 0.934 / 0.936, 400 within the standard error (~0.003) at 4/3 the cost.
    alpha : float, default 1.0
        Ridge parameter λ > 0. On the same validation verses λ = 0.1 / 0.3 / 0.6 / 1 / 2 / 3 / 10:
        0.887 / 0.916 / 0.927 / 0.934 / 0.935 / 0.931 / 0.903 (1 and 2 within the standard
        error), and 1 was better than 0.1 and 10 for the gloss space on the Wikt3l validation
        split (docs/bildrl.md, "The word space"). The parameter to tune on one's own data.
    cg_rtol : float, default 1e-2
        Relative residual tolerance of the iterative equation solves (paper Sec. 4.1: ε = 0.01).
        Only used by blocks solved with CG (dense/CHOLMOD factors are exact). Kept at the
        paper's value by measurement (``python -m benchmarks.bench_cr5 tolerance``: 5 x 20,000
        Bible verses, validation chapters of the training split, 3 seeds, start_steps=4): at
        r = 300 a looser 3e-2 saves a third of the CG iterations but loses 0.0025 validation
        CSLS P@1 at every seed, a tighter 3e-3 needs 26 % more iterations for +0.0005 (within
        the seeds' spread); at r = 100, 1e-1 loses 0.007. See benchmarks/README.md, "Cr5: the
        tolerances and the start".
    cg_maxiter : int, default 500
        Maximum CG iterations (paper: T = 500).
    cg_krylov : {"auto", "columns", "block"}, default "auto"
        How a CG solve's columns share work: one CG per column, or block CG with one Krylov space
        for all (fewer iterations, more dense work per iteration). "auto" runs block CG on blocks
        with many nonzeros per feature, where the sparse products dominate (Wikipedia-sized
        data); see :class:`linxling.operators.GramBlockInverse`. Either meets ``cg_rtol``.
    eig_tol : float, default 1e-1
        Tolerance of the eigen-solve (paper: ε = 0.1). Kept at the paper's value by measurement
        (``python -m benchmarks.bench_cr5 tolerance --param eig_tol``, the validation split of
        ``cg_rtol``): the best of 0.03, 0.1 and 0.3 at r = 100 and 300. A tighter
        solve *lowers* held-out P@1 (0.8762 against 0.8813 at r = 300 with 0.03): the top
        eigenvalues cluster near 1 for sentence-level concepts, and resolving those directions
        exactly picks among them by training noise.
    eig_maxiter : int, default 250
        Maximum eigen-solver iterations (paper: T = 250).
    eig_method : {"auto", "arpack", "lobpcg", "subspace"}, default "auto"
        The eigen-solver. In concept space (:func:`linxling.solvers.eigsh` on M = ĈᵀA⁻¹Ĉ, every
        application a block solve): "arpack", "lobpcg" (SciPy's), "subspace" (block Krylov with
        restarts); "auto" picks ARPACK for small r, else "subspace". With ``eig_space="features"``:
        "subspace" is a block subspace iteration on A⁻¹ĈĈᵀ, and "lobpcg" is LOBPCG on the pencil
        ĈĈᵀu = θAu, which applies A = X̂ᵀX̂ + λI itself and never inverts it (no block solve, no
        factor, Φ from the eigenvectors); "auto" there takes LOBPCG when the corpus has at least
        p b nonzeros (b = r + max(10, 20 %) columns: long documents, as Wikipedia's, where the
        sparse work outweighs the pencil's dense blocks; 22 min against about 4.5 h at 5.58M
        concepts) and the subspace iteration otherwise (short documents such as Bible verses:
        held-out P@1 0.856 against 0.840), and the other when its plan does not fit
        ``memory_budget``. See docs/cr5.md, "Millions of concepts".
    block_method : {"auto", "dense", "cholmod", "cg"} or dict language -> method
        How each per-language block (X_lᵀX_l + λI)⁻¹ is applied; "auto" decides from the block's
        size and density (see :class:`linxling.operators.GramBlockInverse`).
    scale : {"orthonormal", "singular"}, default "orthonormal"
        "orthonormal": Φ has orthonormal rows (eq. 15, the paper's choice);
        "singular": rows scaled by the singular values of W (Φ = Σ Tᵀ). On the validation verses
        above 0.934 against 0.921.
    dtype : float32 or float64, default float64
        Precision of the operators, solves and fitted maps (float32 halves the memory of the
        products at K = 485,000; ``memory_budget`` plans with it).
    doc_filter : None, "wikipedia" or (min_unique_words, max_unique_words), default None
        Training-document filter of :meth:`fit`. ``None`` keeps every document. ``"wikipedia"``
        is the paper's filter for Wikipedia articles (Sec. 4.1: 50 to 1000 unique words); it
        would discard almost every sentence or verse, so it is never a default. A pair gives
        the bounds (``None`` for an open end). A filter that drops more than half of a
        language's documents raises ``ValueError``.
    min_df, max_features, norm : int, int or None, "l2" or None; default 1, 200,000, "l2"
        Settings of each language's :class:`linxling.text.TfidfVectorizer` made by :meth:`fit`:
        every word (the paper's ``min_df=3`` lost on validation), the 200,000 most frequent
        per language, rows L2-normalised (the paper's). On the validation verses above (CSLS
        P@1), min_df 1 / 2 / 3: 0.742 / 0.704 / 0.661 trained on 1,000 verses, 0.867 / 0.856 /
        0.837 on 3,000, 0.941 / 0.939 / 0.934 on all 23,329 (5: 0.924): a rare word still names
        its concept, most of all in a small corpus. The larger vocabulary costs time: 23.4
        against 12.7 s for that fit (212,763 features against 73,163), as
        ``python -m benchmarks.concept_defaults --model Cr5 --grid min_df_sizes [--sizes ...]``
        measured it (benchmarks/README.md, "The linear models' defaults on validation verses").
        At Wikipedia size ``max_features`` decides the vocabulary whatever ``min_df``.
    sublinear_tf : bool, default True
        Term frequencies of those vectorisers: ``1 + ln(count)`` (True, the default since
        2026-12-01) or the paper's raw counts (False), before the idf and the L2 norm. On the
        validation verses above (CSLS P@1) 0.946 against 0.942 for raw counts on all 23,329
        (seeds 0 / 1: 0.9469 / 0.9456 against 0.9414 / 0.9419; up in 9 of the 10 directions,
        level in one, at both), 0.770 / 0.886 against 0.742 / 0.867 trained on 1,000 / 3,000
        verses (up in all 10), in the same time (``python -m benchmarks.concept_defaults
        --model Cr5 --grid sublinear_tf [--sizes ...]``; benchmarks/README.md "Sublinear term
        frequency"). Fitted on long documents (the training chapters, about 700 words each) it
        gains more: 0.853 against 0.819 on the same validation verses (``--unit chapter``;
        benchmarks/README.md "Sublinear term frequency", "Long documents").
    start_steps : int, default 3
        Power steps on the cheap surrogate ĈᵀD⁻¹Ĉ (D the diagonal of X̂ᵀX̂ + λI; no inner solves)
        that build the eigen-solver's starting block. 0 starts from a random block. Only the
        start changes: convergence is always judged on the exact operator. Each step costs about
        a tenth of one application of the operator to the same block. Chosen by held-out
        quality (``python -m benchmarks.bench_cr5 tolerance --param start_steps``: 5 x 20,000
        Bible verses, validation chapters of the training split, 3 seeds): at r = 300, 2 / 3 /
        4 / 6 steps gave CSLS P@1 0.8824 / 0.8823 / 0.8813 / 0.8793 (3 above 4 at every seed,
        in about the same time; more steps, fewer eigen-solver iterations, lower P@1); at
        r = 100, 3 steps 0.8509 against 0.8472 for 4 at every seed, for 13 % more fit time (245
        against 202 operator columns). On Wikipedia-shaped data (r = 300, K = 60,000 and
        485,000) 3 steps give a block that converges in one iteration (2 did not at 60,000), one
        step less than 4 (about 5 % of the fit there).
    reuse_solves : bool, default True
        Keep the block solves A⁻¹ĈV made during the eigen-solve and combine Φ*ᵀ = A⁻¹ĈP_r from
        them instead of solving again: with the subspace eigen-solver (the default for
        n_components > 20) from the exact coefficients of P_r in the applied blocks, which it
        tracks, so only the solves are kept; with the others by least squares in the span of
        copies of the applied blocks (checked to 1e-8). Falls back to a fresh solve when the
        record is incomplete or P_r is not in that span.
    reuse_budget : int, default 2 GiB
        Memory allowed for the kept solves (beyond it they are not kept).
    memory_budget : None, int or str, default None
        Peak resident memory of the process the fit may reach, in bytes or as a size such as
        ``"12G"``. ``None`` keeps everything that saves time. With a budget the fit estimates its
        peak and sheds, in order: a float32 eigen-solver basis (when ``eig_tol >= 1e-4``), the
        operator applied to fewer columns at a time (down to 128, in equal parts of the block), a
        smaller basis (2 blocks instead of 3; the parts widened again where that frees room), down
        to 64 columns, the recorded solves of the first two eigen-solver blocks (then Φ is solved
        for once more), the sparse copies (YᵀX, transposed blocks: products are then computed from
        the blocks themselves), the float32 block copies, and down to 8 columns at a time; more
        recorded solves get half of what is left. A language given as a ChunkedCSR (on disk) counts
        two chunks instead of any copy; one given as a dask array counts nothing on this process.
        The choice is in ``fit_info_["memory_plan"]``; when even the leanest plan does not fit,
        ``eig_space="auto"`` tries the eigen-solve in feature space (blocks of p rows instead of K),
        and a budget below that too raises ``MemoryError`` before any work. :meth:`plan_memory`
        shows the plan (or the error) without fitting. See docs/scale.md.
    eig_space : {"auto", "concepts", "features"}, default "auto"
        Where the eigen-solve keeps its blocks. "concepts": the paper's K × K problem (eq. 12),
        blocks of K rows. "features": the same top eigenpairs from blocks of p rows (p the
        features over all languages): a block subspace iteration on Z ↦ A⁻¹ĈĈᵀZ
        (A = X̂ᵀX̂ + λI), whose Rayleigh-Ritz step works on ĈᵀZ without forming it, and which
        gives Φ*ᵀ = A⁻¹ĈP_r from its last solves (no Φ stage). Worth it when K ≫ p (a
        corpus with millions of concepts and a vocabulary of some 10⁵ words per language),
        where the K-row blocks do not fit in memory; only the operator's products hold a
        K × (columns applied) block at a time. CPU only; ``eig_method="lobpcg"`` runs LOBPCG on
        the pencil ĈĈᵀu = θAu there instead (no inverse; nine p-row blocks instead of four), and
        ``eig_method="auto"`` chooses between the two (see ``eig_method``).
        When every language is a file on disk whose rows are sorted by concept id, both
        solvers form ĈĈᵀZ (and the pencil's AZ) from one read of the corpus with no K-row block
        (measured: K = 5.58M concepts, 2.22 billion nonzeros, r = 300, ``memory_budget="12G"``,
        LOBPCG on the pencil: 22.0–22.5 min within 10.46 GiB on 2 cores).
        "auto" keeps "concepts" (the measured default) and takes "features" only when
        ``memory_budget`` is too small for the concept-space plan, p < K, eig_method is not
        "arpack", and a feature-space plan fits; ``fit_info_["memory_plan"]`` records the
        choice (``eig_space``, ``eig_solver``).
    limit_blas_threads : bool, default True
        Limit BLAS to one thread during the fit (the numba kernels use all cores).
    random_state : None, int or numpy Generator
        Seeds the random blocks of the eigen-solve (its starting block, before the power
        steps); with a fixed value a fit is reproducible.
    show_progress : bool or None
        Progress bars of the fit (``None``: the global setting, :func:`linxling.set_show_progress`;
        False: none): the vectorisers' passes over the training texts (shown after 2 s), the
        factorisation of the language blocks (one unit per block) and the eigen-solve, whose
        unit is a converged Ritz pair out of ``n_components`` (the subspace and feature-space
        solvers; ARPACK and LOBPCG report no progress, so they show none). The Φ stage has no
        bar: it is combined from the eigen-solve's recorded solves, or one block solve.
    device : {None, "cpu", "cuda"}, default None
        "cuda" fits on a GPU with CuPy (:mod:`linxling.xp.cr5`: dense Cholesky or CG per block, the
        Woodbury correction, a block subspace eigen-solver, all on the device; blocks in memory);
        the fitted arrays come back as NumPy. "cpu" runs the numba kernels. None: "cuda" when
        the blocks are CuPy (``cupyx.scipy.sparse``) matrices, else "cpu"; ``device_`` is the one used.
        On "cuda" the eigen-solver's random start is drawn on the device (seeded from
        ``random_state``, so two GPU fits with one seed are equal), not from the CPU fit's normals:
        the two fits converge to the same subspace (singular values equal to the solver's
        tolerance), not to bit-equal components.
    callback : callable or None
        ``callback(model, iteration, loss)``, as every linxling model's: called after each
        iteration of the eigen-solver (``iteration`` counted from 0, as every model counts its
        iterations or epochs; the ARPACK and LOBPCG solvers call it once, at their last) with
        ``loss`` = the largest relative residual ``||A v - θ v|| / |θ|`` of the wanted Ritz
        pairs (what the fit drives below ``eig_tol``). The details are in
        ``model.fit_progress_`` (updated before each call and at the Φ stage): ``{"stage":
        "eig" | "phi", "iteration", "n_iter" (iterations done), "eigenvalues", "residuals",
        "loss", ...}``. A callback of the earlier two-parameter form ``callback(stage, info)`` still
        works, with a FutureWarning, until the next release.

    Attributes
    ----------
    languages_ : list of str
        In the order given: a mapping's, or first seen in the flat form (the order of the blocks
        in the fit; the neural models sort theirs).
    components_ : dict language -> ndarray (n_components, p_l)
        Φ_l, the embedding map of each language (columns are word vectors). Each component's
        sign is fixed: its largest-magnitude weight over all languages is positive.
    singular_values_ : ndarray (n_components,)
        Singular values of W (descending).
    eigenvalues_ : ndarray (n_components,)
        Top eigenvalues of ŶᵀX̂(X̂ᵀX̂+λI)⁻¹X̂ᵀŶ.
    classes_ : list
        The K distinct concept ids seen in training.
    n_features_ : dict language -> int
    vectorizers_ : dict language -> TfidfVectorizer (after :meth:`fit` from texts)
    convergence_ : dict
        Eigen-solver and block-solver convergence records (non-convergence also warns).
    fit_info_ : dict
        The record of the fit (saved with the model; the WMF family keeps one too): sizes
        (``n_documents``, ``n_concepts``, ``n_features``, ``nnz``), ``block_methods``, ``device``,
        the stage timings (``time_*``), ``memory_plan``, ``sources`` (per language: ``"memory"``,
        ``"hdf5"`` or ``"dask"``), ``n_dropped`` (``doc_filter``) and, after a Dask fit, ``dask``.
    """

    def __init__(self, n_components: int = 300, alpha: float = 1.0, *, cg_rtol: float = 1e-2,
                 cg_maxiter: int = 500, cg_krylov: str = "auto", eig_tol: float = 1e-1, eig_maxiter: int = 250,
                 eig_method: str = "auto", block_method: str | Mapping[str, str] = "auto",
                 scale: str = "orthonormal", dtype: Any = np.float64,
                 doc_filter: Any = None,
                 min_df: int = 1, max_features: int = 200_000, norm: str | None = "l2",
                 sublinear_tf: bool = True,
                 start_steps: int = 3, reuse_solves: bool = True, reuse_budget: int = 2 * 1024 ** 3,
                 limit_blas_threads: bool = True, memory_budget: Any = None, eig_space: str = "auto",
                 random_state: Any = None, show_progress: bool | None = None,
                 callback: Callable[..., Any] | None = None, device: Any = None):
        self.n_components = n_components
        self.alpha = alpha
        self.cg_rtol = cg_rtol
        self.cg_maxiter = cg_maxiter
        self.cg_krylov = cg_krylov
        self.eig_tol = eig_tol
        self.eig_maxiter = eig_maxiter
        self.eig_method = eig_method
        self.block_method = block_method
        self.scale = scale
        self.dtype = dtype
        self.doc_filter = doc_filter
        self.min_df = min_df
        self.max_features = max_features
        self.norm = norm
        self.sublinear_tf = sublinear_tf
        self.start_steps = start_steps
        self.reuse_solves = reuse_solves
        self.reuse_budget = reuse_budget
        self.limit_blas_threads = limit_blas_threads
        self.memory_budget = memory_budget
        self.eig_space = eig_space
        self.random_state = random_state
        self.show_progress = show_progress
        self.callback = callback
        self.device = device

    #: ``doc_filter`` presets: unique-word bounds of the training documents kept by :meth:`fit`.
    DOC_FILTERS = {"wikipedia": (50, 1000)}   # paper Sec. 4.1

    #: checked at the start of every fit (:meth:`LinxlingEstimator._validate_declared_params`);
    #: the bounds of a ``doc_filter`` pair are checked by :meth:`fit`, the only place that uses them
    #: added 2026-12-01: models saved or pickled before were fitted on raw counts
    _added_params: dict[str, Any] = {"sublinear_tf": False}

    _parameter_constraints: dict[str, list[Any]] = {
        "n_components": [POSITIVE_INT],
        "alpha": [POSITIVE_REAL],
        "cg_rtol": [NONNEG_REAL],
        "cg_maxiter": [POSITIVE_INT],
        "cg_krylov": [StrOptions(set(GramBlockInverse.KRYLOV))],
        "eig_tol": [NONNEG_REAL],
        "eig_maxiter": [POSITIVE_INT],
        "eig_method": [StrOptions({"auto", "arpack", "lobpcg", "subspace"})],
        "block_method": [StrOptions(set(GramBlockInverse.METHODS)), Mapping],
        "scale": [StrOptions({"orthonormal", "singular"})],
        "dtype": [FLOAT_DTYPE],
        "doc_filter": [StrOptions(set(DOC_FILTERS)), tuple, list, None],
        "min_df": [POSITIVE_INT],
        "max_features": [POSITIVE_INT, None],
        "norm": [StrOptions({"l2"}), None],
        "sublinear_tf": ["boolean"],
        "start_steps": [NONNEG_INT],
        "reuse_solves": ["boolean"],
        "reuse_budget": [NONNEG_INT],
        "limit_blas_threads": ["boolean"],
        "memory_budget": [Interval(Real, 0, np.inf, closed="neither"), str, None],
        "eig_space": [StrOptions({"auto", "concepts", "features"})],
        "random_state": RANDOM_STATE,
        "show_progress": ["boolean", None],
        "callback": [callable, None],
        "device": DEVICE,
    }

    def _check_params(self) -> None:
        # a memory_budget that is not a size is refused before any work: it was read only when
        # the fit planned, after a pass over every block (of every streamed file: minutes on a
        # large corpus) or the vectorising of every text
        parse_budget(self.memory_budget, "memory_budget")

    # ------------------------------------------------------------------ fitting
    def fit(self, texts: Mapping[str, Sequence[str]] | Sequence[str], languages: Sequence[str] | None = None,
            concepts: Mapping[str, Sequence[Hashable]] | Sequence[Hashable] | None = None) -> "Cr5":
        """Fit from raw documents: texts per language, or three parallel sequences.

        ``fit({"en": en_texts, "de": de_texts})`` fits on row-aligned texts (row i of every
        language is concept i); ``fit({"en": en_texts, "de": de_texts}, concepts={"en": en_ids,
        "de": de_ids})`` on partially aligned ones (e.g. Wikipedia articles, a concept missing in
        some languages); ``fit(texts, languages, concepts)`` on three parallel sequences. A
        mapping is the same fit as the sequences of its languages concatenated in the mapping's
        order (the flat form takes languages in the order first seen): the same model, bit for bit.

        Parameters
        ----------
        texts : mapping language -> sequence of str, or sequence of str
            Training documents. A mapping ``{language: texts}``: each language's documents
            (keys are language codes such as ``"en"``); without ``concepts`` every language has
            the same number n of documents and row i of each is concept i (``classes_`` is
            ``[0, ..., n - 1]``). A flat sequence: the documents of every language, with
            ``languages`` and ``concepts`` (required then).
        languages : sequence of str, optional
            With a flat ``texts``: the language code of each document (same length). Not given
            with a mapping, whose keys are the languages.
        concepts : mapping language -> sequence of hashable, or sequence of hashable, optional
            Concept ids: documents of different languages with the same concept id are about the
            same thing (e.g. aligned Wikipedia articles or Bible chapters). With a mapping
            ``texts``: a mapping with the same languages, one id per document of each; left out,
            the languages are row-aligned. With a flat ``texts``: one id per document.

        Returns
        -------
        self : Cr5

        Raises
        ------
        TypeError
            For ``languages`` given with a mapping, ``languages`` or ``concepts`` missing with a
            flat ``texts``, a language key that is not a str, or a document that is not a str
            (named as ``texts['de'][3]`` or ``texts[3]``).
        ValueError
            For row-aligned languages of different lengths, ``concepts`` whose languages or
            lengths differ from those of ``texts``, or an empty language.

        Every document is used unless ``doc_filter`` says otherwise; documents it drops are
        counted in ``fit_info_["n_dropped"]`` and reported with a warning, and a filter that
        drops more than half of a language's documents is an error. One TF-IDF vectoriser is
        fitted per language (IDF from the training documents); each document is tokenized once.
        """
        from linxling.text import TfidfVectorizer

        lo, hi = self._doc_filter_bounds()
        texts, concepts, by_lang = concept_groups(texts, languages, concepts, "Cr5")
        blocks, block_concepts, vectorizers, dropped = {}, {}, {}, {}
        for lang, idx in by_lang.items():
            vec = TfidfVectorizer(min_df=self.min_df, max_features=self.max_features, norm=self.norm,
                                  sublinear_tf=bool(self.sublinear_tf), dtype=self.dtype,
                                  min_unique_words=lo, max_unique_words=hi, show_progress=self.show_progress)
            try:
                with warnings.catch_warnings():      # dropped documents are reported below, per language
                    warnings.filterwarnings("ignore", message=".*documents were dropped from fitting")
                    blocks[lang] = vec.fit_transform(texts[i] for i in idx)
            except ValueError as exc:
                if lo is not None or hi is not None:
                    raise ValueError(f"language {lang!r}: {exc} (doc_filter={self.doc_filter!r} keeps "
                                     f"documents with {lo}..{hi} unique words)") from None
                raise ValueError(f"language {lang!r} ({len(idx)} documents): {exc}") from None
            dropped[lang] = int(vec.n_dropped_)
            if 2 * dropped[lang] > len(idx):
                raise ValueError(
                    f"doc_filter={self.doc_filter!r} (documents with {lo}..{hi} unique words) drops "
                    f"{dropped[lang]} of the {len(idx)} documents of language {lang!r}: it is meant for "
                    "long documents such as Wikipedia articles; use doc_filter=None for sentences or "
                    "verses, or bounds that fit the corpus")
            block_concepts[lang] = [concepts[idx[j]] for j in np.flatnonzero(vec.kept_mask_)]
            vectorizers[lang] = vec
        total_dropped = sum(dropped.values())
        if total_dropped:
            warnings.warn(f"Cr5.fit: {total_dropped} of {len(texts)} training documents were dropped by "
                          f"doc_filter={self.doc_filter!r} ({lo}..{hi} unique words; per language: {dropped})",
                          UserWarning, stacklevel=find_stack_level())
        self.fit_matrices(blocks, block_concepts)
        self.vectorizers_ = vectorizers
        self.fit_info_["n_dropped"] = dropped
        return self

    def _doc_filter_bounds(self) -> tuple[int | None, int | None]:
        f = self.doc_filter
        if f is None:
            return None, None
        if isinstance(f, str):                     # one of DOC_FILTERS (the table checked it)
            return self.DOC_FILTERS[f]
        if isinstance(f, (tuple, list)) and len(f) == 2:
            lo, hi = f
            for name, v in (("doc_filter[0]", lo), ("doc_filter[1]", hi)):
                if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0):
                    raise ValueError(f"{name} must be None or a non-negative int, got {v!r}")
            if lo is not None and hi is not None and lo > hi:
                raise ValueError(f"doc_filter=({lo}, {hi}): the lower bound exceeds the upper one")
            return (None if lo is None else int(lo)), (None if hi is None else int(hi))
        raise ValueError(f"doc_filter must be None, one of {sorted(self.DOC_FILTERS)} or a pair "
                         f"(min_unique_words, max_unique_words), got {f!r}")

    @staticmethod
    def _validate_source(X, lang, concepts, dtype, client):
        """A row-partitioned block (ChunkedCSR on disk, dask array on a cluster), checked with one
        pass over its chunks (the column statistics are kept for the fit)."""
        name = f"blocks[{lang!r}]"
        src = as_row_source(X, name, dtype=dtype, client=client)
        _check_block_shape(src.shape, lang, concepts)
        stats = src.column_stats()
        if stats.n_nonfinite:
            raise ValueError(f"{name} contains {stats.n_nonfinite} non-finite value(s) (NaN or inf)")
        probe = sp.csr_matrix((np.array([stats.max_abs], dtype=dtype), ([0], [0])), shape=src.shape)
        check_value_range(probe, name, "the Gram matrix XᵀX")
        return src

    def _validate_blocks(self, blocks, concepts, client=None):
        if not isinstance(blocks, Mapping) or not isinstance(concepts, Mapping):
            raise TypeError("blocks and concepts must be mappings language -> matrix / concept ids")
        if len(blocks) == 0:
            raise ValueError("blocks is empty: give at least one language")
        check_language_keys(blocks, "blocks")
        missing = [lang for lang in blocks if lang not in concepts]
        extra = [lang for lang in concepts if lang not in blocks]
        if missing or extra:
            raise ValueError(f"blocks and concepts must have the same languages; only in blocks: {missing}, "
                             f"only in concepts: {extra}")
        dtype = check_float_dtype(self.dtype, "dtype")
        out: dict[str, Any] = {}
        try:
            return self._validated_blocks(blocks, concepts, client, dtype, out)
        except BaseException:
            _close_dask_sources(out.values())     # those made before the language that failed
            raise

    def _validated_blocks(self, blocks, concepts, client, dtype, out: dict) -> dict:
        """The loop of :meth:`_validate_blocks`, filling ``out`` language by language."""
        for lang, X in blocks.items():
            check_not_other_dask(X, f"blocks[{lang!r}]")
            if isinstance(X, (str, bytes, os.PathLike)):
                # np.asarray made a 0-D array of it: "must be 2-D ... got 0-D ... X[None, :]"
                raise TypeError(f"blocks[{lang!r}] is a {type(X).__name__} ({X!r}), not a matrix: give a "
                                "corpus file written by linxling.io.write_chunks as "
                                "linxling.io.ChunkedCSR(path)")
            if is_row_partitioned(X):
                out[lang] = self._validate_source(X, lang, concepts, dtype, client)
                continue
            Xl, big = check_sparse_matrix_max(X, f"blocks[{lang!r}]", dtype=dtype, allow_empty=True,
                                              canonical=True)
            _check_block_shape(Xl.shape, lang, concepts)
            check_value_range(Xl, f"blocks[{lang!r}]", "the Gram matrix XᵀX", max_abs=big)
            out[lang] = Xl
        if client is not None and not any(isinstance(v, RowSource) for v in out.values()):
            # as the WMF family: a client with nothing to run on it is a mistake, not a no-op
            raise ValueError("client is for row-partitioned blocks (dask arrays with scipy.sparse chunks, or "
                             "ChunkedCSR corpora); every block is in memory: wrap a block, e.g. "
                             "dask.array.from_array(X_l, chunks=(10_000, -1), asarray=False), to fit it on "
                             "the cluster, or leave client out")
        return out

    def fit_matrices(self, blocks: Mapping[str, Any], concepts: Mapping[str, Any], *,
                     client: Any = None, placement: str = "auto") -> "Cr5":
        """Fit from per-language feature matrices.

        Parameters
        ----------
        blocks : mapping language -> sparse (n_l, p_l), ChunkedCSR or dask array
            Document-feature matrix of each language (e.g. L2-normalised TF-IDF). Besides an
            in-memory matrix, a language may be given row-partitioned (docs/scale.md):

            * a :class:`linxling.io.ChunkedCSR` (a corpus on disk, :func:`linxling.io.write_chunks`):
              every product streams its chunks, one at a time; nothing of the block is kept in
              memory. With ``client=`` the products run on the cluster's workers instead, each
              task reading its rows from the file (a filesystem every worker reads): no worker
              keeps any of the corpus, so the workers' memory limits may be far below its size
              (:class:`linxling.operators._dask.DaskDiskSource`);
            * a dask array whose chunks are scipy.sparse matrices, chunked along rows only: the
              chunks are persisted once on the workers of a ``dask.distributed`` cluster and only
              dense blocks of vectors travel per product (``fit_info_["dask"]`` counts the bytes).
        concepts : mapping language -> array-like (n_l,) of hashable
            Concept id of each row. A concept present in one language only still counts.
        client : dask.distributed.Client, optional
            The cluster for dask-array blocks (default: dask's current default client; a dask
            block without any client is an error), and, when given, for ChunkedCSR blocks (read
            by the workers). An error when no block is row-partitioned (as in the WMF family).
        placement : {"auto", "spread"}, default "auto"
            Where the chunks of dask-array languages live. ``"auto"``: with two or more such
            languages and two or more workers, each language is moved whole onto one worker
            (the largest first onto the least loaded) when every language fits half its
            worker's memory limit; its products and block-CG solves then run there as one task
            each, different languages side by side (``fit_info_["dask"]["placed_on"]``).
            Otherwise, and with ``"spread"``, each language's chunks are spread over the
            workers, consecutive chunks on one worker (chunk i of c on worker ⌊i W / c⌋), and
            a language spread over workers costs one round trip per CG iteration. ChunkedCSR
            languages read by the workers are never moved: with ``"auto"`` each is given a
            worker where its block-CG solves run whole, one task per solve reading the file at
            every iteration; with ``"spread"`` the CG runs here, each product over all workers. Measured at
            K = 60,000 on 2 workers of one thread (docs/scale.md): see benchmarks/README.md,
            "Dask at real sizes".

        Returns
        -------
        self

        Notes
        -----
        While fitting, BLAS is limited to one thread (:func:`linxling._threads.blas_single_thread`;
        shared safely by concurrent fits): the sparse kernels run on all cores through numba, and
        BLAS threads on top of them oversubscribe the cores (measured on 2 cores: 4.05 s with BLAS
        threads vs 3.3 s without).
        """
        from linxling.solvers._results import ConvergenceWarning
        if placement not in ("auto", "spread"):
            raise ValueError(f"placement must be 'auto' or 'spread', got {placement!r}")
        with blas_single_thread(self.limit_blas_threads), warnings.catch_warnings():
            # the inner solvers' own warnings (one per block-CG application, one from the
            # eigen-solver) are summed up once by the fit itself (see _set_fitted)
            warnings.simplefilter("ignore", ConvergenceWarning)
            return self._fit_matrices(blocks, concepts, client, placement)

    def _fit_matrices(self, blocks: Mapping[str, Any], concepts: Mapping[str, Any], client: Any = None,
                      placement: str = "auto") -> "Cr5":
        """Body of :meth:`fit_matrices` (BLAS threads already limited): the paper's Sec. 3.2 and 5,
        one stage per method below."""
        # the callback's form, read once per fit (not at every eigen-solver iteration)
        self._callback_is_old = self.callback is not None and _old_style_callback(self.callback)
        # nothing of an earlier fit stays: its vectorisers (fit sets this fit's after this call),
        # its progress record (this fit's starts empty and is set only with a callback)
        self.__dict__.pop("vectorizers_", None)
        self.__dict__.pop("fit_progress_", None)
        from linxling.xp import choose_device
        self.device_ = choose_device(self.device, blocks.values() if isinstance(blocks, Mapping) else ())
        blocks, concepts = _on_host(blocks, concepts)
        t_start = time.perf_counter()
        timings: dict[str, Any] = {}
        problem = self._set_up_problem(blocks, concepts, client)
        try:
            return self._fit_problem(problem, t_start, timings, placement)
        finally:
            # also after an error or a KeyboardInterrupt: the persisted chunks and the workers'
            # copies of them (module state of the worker processes, kept until closed) go
            _close_dask_sources(problem.blocks.values())

    def _fit_problem(self, problem: "_Problem", t_start: float, timings: dict, placement: str) -> "Cr5":
        """The fit of :meth:`_fit_matrices` on the set-up problem."""
        if self.device_ != "cpu":
            if self.eig_space == "features":
                raise ValueError(f"eig_space='features' runs on the CPU only; got device={self.device_!r} "
                                 "(the GPU path keeps concept-space blocks)")
            return self._fit_on_device(problem, t_start, time.perf_counter() - t_start)
        plan = self._plan_memory(problem)
        for X in problem.blocks.values():
            if isinstance(X, ChunkedSource) and X.kind == "hdf5":
                X.set_read_bytes(plan.read_bytes)
        dask_sources = [X for X in problem.blocks.values() if _source_kind(X) == "dask"]
        placed = 0
        if placement == "spread":        # corpus files: the CG on the client, one product per iteration
            for X in dask_sources:
                if hasattr(X, "whole_solves"):
                    X.whole_solves = False
        if dask_sources and placement == "auto" and len(dask_sources) == len(problem.blocks):
            from linxling.operators._dask import place_sources
            with _timed(timings, "time_placement"):
                placed = place_sources(dask_sources)
        inverted = plan.eig_solver != "lobpcg"
        if not inverted:
            # the pencil needs X̂ᵀX̂ + λI itself, never its inverse: no factor, no block solve
            with _timed(timings, "time_factor"):
                inverses = self._pencil_grams(problem, plan)
            eig, Phi_star_T = self._top_eigenvectors_pencil(problem, inverses, max(1, placed), plan, timings)
            phi_source = "feature-space eigenvectors"
            timings["time_phi"] = 0.0
        else:
            with _timed(timings, "time_factor"):
                A_inv = self._factor_gram(problem, plan)
            if placed > 1:                 # languages on different workers: their solves side by side
                A_inv.block_inverse.n_jobs = placed
            inverses = A_inv.block_inverse.blocks
            if plan.eig_space == "features":
                eig, Phi_star_T = self._top_eigenvectors_features(problem, A_inv, plan, timings)
                phi_source = "feature-space solves"
                timings["time_phi"] = 0.0
            else:
                eig, record = self._top_eigenvectors(problem, A_inv, plan, timings)
                with _timed(timings, "time_phi"):
                    Phi_star_T, phi_source = self._phi_star(problem, A_inv, record, eig, plan)
                del record
        components, sv = self._orthonormal_map(Phi_star_T, problem)
        del Phi_star_T
        self._set_fitted(problem, inverses, eig, components, sv, inverted=inverted)
        dask_eig = timings.pop("_dask_eig", None)        # the eigen-solve's dask counters: not a timing
        self.fit_info_.update(timings, phi_source=phi_source, memory_plan=plan.as_dict(),
                              time_total=time.perf_counter() - t_start,
                              sources={lang: _source_kind(problem.blocks[lang]) for lang in problem.languages})
        if dask_sources:
            record = _dask_record(dask_sources, dask_eig, self.convergence_["eig"]["n_iter"])
            record["placed_on"] = {lang: getattr(X, "home", None) for lang, X in problem.blocks.items()}
            self.fit_info_["dask"] = record
        return self

    def plan_memory(self, blocks: Mapping[str, Any], concepts: Mapping[str, Any], *,
                    client: Any = None) -> dict:
        """What :meth:`fit_matrices` would keep in memory for these blocks under this model's
        ``memory_budget``, without fitting: a dry run for corpora that may not fit.

        The blocks are validated and their column sums taken (one pass over each; a ChunkedCSR
        is streamed once), then the planner chooses as a fit would. Nothing is fitted: the
        model's parameters and fitted attributes are left as they are.

        Parameters
        ----------
        blocks, concepts, client : as in :meth:`fit_matrices`

        Returns
        -------
        dict
            The plan a fit records in ``fit_info_["memory_plan"]`` (``estimate``: the most bytes
            the fit may add to ``in_use``, the resident memory now, counting the whole allowance
            ``record_bytes`` for recorded solves, which a short fit does not fill; ``apply_columns``, ``basis_dtype``,
            ``basis_factor``, ``record_bytes``, ``copies``, ``mixed_precision``, ``read_bytes``,
            ``budget``) and the problem's ``n_documents``, ``n_concepts``, ``n_features``, ``nnz``.

        Raises
        ------
        MemoryError
            When even the leanest plan needs more than ``memory_budget``; the message says how
            much it needs, the smallest budget that fits (also the error's ``min_budget``, in
            bytes) and the other ways out (float32, fewer components, out-of-core or Dask
            blocks), as the fit would, before any work.
        """
        self._validate_declared_params()
        blocks, concepts = _on_host(blocks, concepts)
        problem = self._set_up_problem(blocks, concepts, client)
        try:
            plan = self._plan_memory(problem)
        finally:
            _close_dask_sources(problem.blocks.values())
        return {**plan.as_dict(), "n_documents": int(problem.n), "n_concepts": len(problem.classes),
                "n_features": int(problem.p), "nnz": int(problem.nnz)}

    # ---- stage 1: the problem (X̂, Ŷ) of eq. (8)
    def _set_up_problem(self, blocks: Mapping[str, Any], concepts: Mapping[str, Any],
                        client: Any = None) -> "_Problem":
        """Validate the blocks X_1..X_L, encode the concepts, and the column means μ of
        X = diag(X_1, ..., X_L) (X itself is never stacked: every operator works per block)."""
        blocks = self._validate_blocks(blocks, concepts, client)
        try:
            return self._problem_of(blocks, concepts)
        except BaseException:
            _close_dask_sources(blocks.values())
            raise

    def _problem_of(self, blocks: Mapping[str, Any], concepts: Mapping[str, Any]) -> "_Problem":
        """The rest of :meth:`_set_up_problem` on the validated blocks."""
        languages = list(blocks)
        labels, classes = encode_concepts(concepts, languages)
        r = int(self.n_components)
        p_total = sum(X.shape[1] for X in blocks.values())
        if r >= len(classes):
            raise ValueError(f"n_components={r} must be smaller than the number of concepts ({len(classes)})")
        if r > p_total:
            raise ValueError(f"n_components={r} exceeds the number of features over all languages "
                             f"(n_features={p_total})")
        dtype = np.dtype(self.dtype)
        n = sum(X.shape[0] for X in blocks.values())
        mean = np.concatenate([_column_sums(blocks[lang]) for lang in languages]) / n
        labs = [labels[lang] for lang in languages]
        check_small_concept_data("Cr5", r, {lang: blocks[lang] for lang in languages}, labs, len(classes))
        one_doc = one_document_per_concept(labs, len(classes))
        return _Problem(blocks=blocks, languages=languages, classes=classes, labels=labs,
                        mean=mean.astype(dtype), n=n, r=r, dtype=dtype,
                        nnz=sum(int(X.nnz) for X in blocks.values()), p=p_total, one_doc=one_doc,
                        eig_method=resolve_method(self.eig_method, len(classes), r),
                        concept_keys=_concept_keys(blocks, languages, classes, labs))

    # ---- the array-namespace path (a GPU with device="cuda")
    def _fit_on_device(self, problem: "_Problem", t_start: float, t_setup: float = 0.0) -> "Cr5":
        """The fit of :mod:`linxling.xp.cr5` on the device; the fitted arrays come back as NumPy.
        ``t_setup``: the seconds of the host's set-up (validation, concept ids, column sums),
        recorded as ``fit_info_["time_setup"]`` beside the device stages."""
        from linxling.xp import device as make_device
        from linxling.xp.cr5 import fit_cr5
        if any(not sp.issparse(problem.blocks[lang]) for lang in problem.languages):
            raise ValueError(f"device={self.device_!r} fits blocks held in memory; ChunkedCSR and dask "
                             "blocks run on the CPU (device='cpu')")
        out = fit_cr5(make_device(self.device_), [problem.blocks[lang] for lang in problem.languages],
                      problem.labels, len(problem.classes), problem.r, float(self.alpha), problem.dtype,
                      cg_rtol=float(self.cg_rtol), cg_maxiter=int(self.cg_maxiter), eig_tol=float(self.eig_tol),
                      eig_maxiter=int(self.eig_maxiter), random_state=self.random_state,
                      start_steps=int(self.start_steps),
                      means=np.split(problem.mean, np.cumsum([problem.blocks[lang].shape[1]
                                                              for lang in problem.languages])[:-1]))
        info = out["info"]
        sv = np.asarray(out["singular_values"])
        comps = out["components"]
        if self.scale == "singular":
            comps = [C * sv[:, None] for C in comps]
        self.languages_ = problem.languages
        self.classes_ = problem.classes
        self.n_features_ = {lang: problem.blocks[lang].shape[1] for lang in problem.languages}
        self.components_ = {lang: np.ascontiguousarray(C, dtype=problem.dtype)
                            for lang, C in zip(problem.languages, comps, strict=True)}
        self.singular_values_ = sv.astype(problem.dtype)
        self.eigenvalues_ = np.asarray(out["eigenvalues"])
        self.convergence_: dict[str, Any] = {
            "eig": {"converged": bool(info["eig_converged"]), "n_iter": int(info["eig_n_iter"]),
                    "n_matvec": int(info["eig_n_applied"]), "method": "subspace"},
            "blocks": {lang: {"method": m, "cg_iterations": its, "nonconverged": nc}
                       for lang, m, its, nc in zip(problem.languages, info["methods"], info["cg_iterations"],
                                                   info["cg_nonconverged"], strict=True)}}
        if not info["eig_converged"]:
            warnings.warn("Cr5: the eigen-solve did not converge to eig_tol="
                          f"{self.eig_tol} in {self.eig_maxiter} iterations; the result is recorded in "
                          "convergence_ (raise eig_maxiter or eig_tol)", UserWarning, stacklevel=find_stack_level())
        self.fit_info_ = {"n_documents": problem.n, "n_concepts": len(problem.classes),
                          "n_features": int(problem.p), "nnz": int(problem.nnz),
                          "block_methods": dict(zip(problem.languages, info["methods"], strict=True)),
                          "device": str(self.device_), "time_setup": t_setup, **info["timings"],
                          "time_total": time.perf_counter() - t_start}
        return self

    # ---- memory: what to keep and what to recompute
    def _plan_memory(self, problem: "_Problem") -> "_MemoryPlan":
        """Choose the fit's memory layout. Without ``memory_budget`` everything that saves time is
        kept; with one, the cheapest savings are taken in order until the estimated peak fits."""
        kw: dict[str, Any] = dict(budget=parse_budget(self.memory_budget, "memory_budget"),
                                  reuse_budget=self.reuse_budget if self.reuse_solves else 0, eig_tol=self.eig_tol,
                                  cg_rtol=self.cg_rtol, record_inputs=problem.eig_method != "subspace")
        # feature space runs its own solvers: subspace iteration with inner solves, or LOBPCG on
        # the pencil (ĈĈᵀ, A) without any; ARPACK has no feature-space form
        solver = "lobpcg" if self.eig_method == "lobpcg" else "subspace"
        if self.eig_space == "features":
            if self.eig_method not in ("auto", "subspace", "lobpcg"):
                raise ValueError(f"eig_space='features' runs its own eigen-solvers (eig_method 'subspace' or "
                                 f"'lobpcg'); eig_method={self.eig_method!r} needs eig_space='concepts' (or 'auto')")
            if self.eig_method == "auto":
                solver = _feature_solver(problem)
            return _MemoryPlan.choose(problem, eig_space="features", eig_solver=solver, **kw)
        try:
            return _MemoryPlan.choose(problem, eig_space="concepts", **kw)
        except MemoryError as exc:
            if self.eig_space == "concepts" or self.eig_method == "arpack" or problem.p >= len(problem.classes):
                raise
            # blocks of p rows instead of K: the same eigenpairs (eig_space's docstring), by the
            # solver asked for, else by the one _feature_solver expects to be faster, else the other
            if self.eig_method == "auto":
                first = _feature_solver(problem)
                candidates = [first, "subspace" if first == "lobpcg" else "lobpcg"]
            else:
                candidates = [solver]
            errors = [exc]
            for candidate in candidates:
                try:
                    return _MemoryPlan.choose(problem, eig_space="features", eig_solver=candidate, **kw)
                except MemoryError as other:
                    errors.append(other)
            # the error of the leanest plan tried (its budget the smallest that would do)
            raise min(errors, key=lambda e: getattr(e, "min_budget", np.inf)) from None

    # ---- stage 2: (X̂ᵀX̂ + λI)⁻¹ = B⁻¹ + c g gᵀ (Sec. 5, Woodbury), one factor or CG per language
    def _factor_gram(self, problem: "_Problem", plan: "_MemoryPlan") -> WoodburyInverse:
        r = problem.r
        # right-hand sides the block inverses will see: ~2 eigen-solver blocks (_block_size) after the
        # start, plus Φ (measured: 217 columns for r = 100); the cost model chooses dense or CG
        expected_rhs = 3 * _block_size(r)
        bm = self.block_method
        return woodbury_from_blocks([problem.blocks[lang] for lang in problem.languages], self.alpha,
                                    methods=[bm.get(lang, "auto") if isinstance(bm, Mapping) else bm
                                             for lang in problem.languages],
                                    cg_rtol=self.cg_rtol, cg_maxiter=self.cg_maxiter, cg_krylov=self.cg_krylov,
                                    expected_rhs=expected_rhs,
                                    show_progress=self.show_progress, transpose_copy=plan.copies,
                                    mixed_precision="auto" if plan.mixed_precision else False)

    # ---- stage 3: top-r eigenvectors P_r of M = ŶᵀX̂ (X̂ᵀX̂ + λI)⁻¹ X̂ᵀŶ (eqs. 12-13)
    def _top_eigenvectors(self, problem: "_Problem", A_inv: WoodburyInverse, plan: "_MemoryPlan",
                          timings: dict):
        K = len(problem.classes)
        C, C32, Cm = self._cross_covariances(problem, A_inv.block_inverse.blocks, A_inv.block_inverse.n_jobs,
                                             plan)
        # every block solve Z = A⁻¹ĈV of the eigen-solve is kept (within plan.record_bytes) so that
        # Φ*ᵀ = A⁻¹ĈP can be recombined from them afterwards (stage 4)
        subspace = problem.eig_method == "subspace"
        record = _SolveRecord(plan.record_bytes, C, keep_inputs=not subspace)
        chunk = plan.apply_columns

        def apply_m(V):
            V = np.asarray(V, dtype=problem.dtype)
            out = np.empty((K, V.shape[1]), dtype=problem.dtype)
            for a in range(0, V.shape[1], chunk):       # columns are independent: exact in chunks
                Vc = V[:, a:a + chunk]
                Z = A_inv.matmat(Cm.matmat(Vc.astype(Cm.dtype, copy=False)))
                record.add(Vc, Z)
                out[:, a:a + chunk] = Cm.rmatmat(Z.astype(Cm.dtype, copy=False))
                del Z
            return out

        M = CallableOperator(apply_m, (K, K), problem.dtype, symmetric=True)
        rng = check_random_state(self.random_state)
        # starting block: power steps on the cheap surrogate ĈᵀD⁻¹Ĉ, D = diag(X̂ᵀX̂ + λI) (no inner
        # solves). Measured on 5 x 20k Bible verses, r = 100: 6 steps (0.9 s) cut the eigen-solve
        # from 676 to 217 matvecs; 4 steps gave 205, 3 gave 246, but 3 (the default) gave the
        # best held-out P@1 (see the start_steps docstring). At K = 485,000 (r = 300) 3, 4 and 6 steps
        # all converged in one iteration
        with _timed(timings, "time_start"):
            v0 = None
            if self.start_steps > 0:
                v0 = _jacobi_start(problem, C if C32 is None else C32, self.alpha, self.start_steps, rng)
        cb = None
        if self.callback is not None:
            def cb(iteration, eigenvalues, residuals):
                self._progress("eig", {"iteration": int(iteration), "eigenvalues": eigenvalues,
                                       "residuals": residuals}, problem.r)
        counters0 = _dask_counters(problem)
        tracked: dict[str, Any] = ({"track_applied": plan.record_bytes // max(1, problem.p * problem.dtype.itemsize),
                                    "block_size": _block_size(problem.r, K)}
                                   if subspace else {})
        with _timed(timings, "time_eig"):
            try:
                res = eigsh(M, problem.r, tol=self.eig_tol, maxiter=self.eig_maxiter, method=problem.eig_method,
                            v0=v0, random_state=rng, callback=cb, show_progress=self.show_progress,
                            **plan.eig_kwargs(problem), **tracked)
            except np.linalg.LinAlgError as exc:     # ARPACK's Krylov space ran out (identical documents)
                raise np.linalg.LinAlgError(f"Cr5: the data support fewer than n_components={problem.r} "
                                            "directions (the eigen-solve ran out of them, e.g. on identical "
                                            "documents); lower n_components or give more varied documents") from exc
        if counters0 is not None:
            after = _dask_counters(problem)
            assert after is not None
            timings["_dask_eig"] = {k: after[k] - counters0[k] for k in after}
        return res, record

    def _cross_covariances(self, problem: "_Problem", inverses: Sequence[Any], n_jobs: int, plan: "_MemoryPlan"):
        """Ĉ = X̂ᵀŶ (p, K), its float32 twin or None, and the one the operator's products use
        (``inverses``: the languages' :class:`GramBlockInverse`, whose matrices Ĉ shares)."""
        # with one document per concept and language Ĉ needs no copy of its own: it reads the
        # blocks (and CSR transposes) the block inverses hold in each dtype
        C = CrossCovariance.from_blocks([problem.blocks[lang] for lang in problem.languages], problem.labels,
                                        len(problem.classes), precompute=plan.copies, dtype=problem.dtype,
                                        shared=[inv.csr_pair(problem.dtype) for inv in inverses])
        C.n_jobs = n_jobs                   # languages on different dask workers side by side
        if problem.concept_keys is not None:
            C.order_concepts(problem.concept_keys)
        # a float32 twin of Ĉ (two float32 copies of nnz(X), or none with one document per concept:
        # it shares the float32 blocks of the mixed-precision CG) for the starting block and, at
        # loose tolerances, for the operator's two products: the block solves between them are
        # float32 CG to cg_rtol anyway (measured on 5 x 20k Bible verses, r = 100: 4 products
        # 0.2 -> 0.1 s)
        # (row-partitioned blocks need no copy for it: their chunks are cast where they are read,
        # on a dask cluster in the workers' own float32 copies)
        loose = _loose_products(problem, plan, self.eig_tol, self.cg_rtol)
        C32 = (C.astype(np.float32, shared=[inv.csr_pair(np.float32) for inv in inverses])
               if _twin_ok(problem, plan) and (loose or self.start_steps > 0) else None)
        return C, C32, (C32 if loose else C)

    def _top_eigenvectors_features(self, problem: "_Problem", A_inv: WoodburyInverse, plan: "_MemoryPlan",
                                   timings: dict):
        """The top-r eigenpairs of M = ĈᵀA⁻¹Ĉ from blocks of p rows (``eig_space="features"``),
        and Φ*ᵀ = A⁻¹ĈP_r.

        A block Z (p, b) stands for the concept block V = ĈᵀZ, which is never stored: with
        G = ĈĈᵀZ and Z' = A⁻¹G, the Rayleigh-Ritz matrices of M on span(V) are VᵀV = ZᵀG and
        VᵀMV = GᵀZ', the Ritz vectors are V y (yᵀZᵀGy = 1), MVy = ĈᵀZ'y, so the residual's norm
        is ‖Ĉᵀu‖ with u = Z'y − θZy, ‖Ĉᵀu‖² = uᵀ(G'y − θGy) with G' = ĈĈᵀZ' (needed for the next
        iteration anyway), and Φ*ᵀ = A⁻¹ĈVy = Z'y. Each iteration applies the operator once
        (b columns: one block solve) and Ĉ twice; the next block is Z'Y (subspace iteration).
        The start: ``start_steps`` power steps Z ← D⁻¹ĈĈᵀZ, the p-space twin of the concept-space
        start (ĈᵀZ then went through the steps of ĈᵀD⁻¹Ĉ). Holds Z, G, Z', G' (p × b each) and,
        inside a product, one K × ``apply_columns`` block."""
        K, p, r = len(problem.classes), problem.p, problem.r
        b = _block_size(r, K, "features")
        dt = problem.dtype
        bt = np.dtype(plan.basis_dtype or dt)
        C, C32, Cm = self._cross_covariances(problem, A_inv.block_inverse.blocks, A_inv.block_inverse.n_jobs,
                                             plan)
        chunk = plan.apply_columns
        rng = check_random_state(self.random_state)

        def cct(Z, Cx):                    # Ĉ Ĉᵀ Z, a K × chunk block at a time
            return _c_ct(Cx, Z, chunk, bt)

        def solve(G):                      # A⁻¹ G, chunk columns at a time
            out = np.empty((p, G.shape[1]), dtype=bt)
            for a in range(0, G.shape[1], chunk):
                out[:, a:a + chunk] = A_inv.matmat(np.asarray(G[:, a:a + chunk], dtype=dt))
            return out

        with _timed(timings, "time_start"):
            Z = rng.standard_normal((p, b), dtype=bt)         # drawn in the basis dtype: no float64 block
            if self.start_steps > 0:
                d_inv = (1.0 / _jacobi_diagonal(problem, self.alpha)).astype(bt)
                for _ in range(int(self.start_steps)):
                    Z = cct(Z, C if C32 is None else C32)
                    Z *= d_inv[:, None]
                    Z = _cholesky_qr(Z, passes=1, overwrite=True)
            G = cct(Z, Cm)
        n_matvec, converged = 0, False
        theta = rel = np.zeros(r)
        step = max(1, (64 << 20) // max(1, b * 8))          # rows per block of the p × b passes
        # true progress: the wanted Ritz pairs that meet the tolerance, out of r
        bar = progress(total=r, show=self.show_progress, desc="eigen-solve (feature space) converged pairs",
                       unit="pair")
        with _timed(timings, "time_eig"), bar:
            for it in range(1, int(self.eig_maxiter) + 1):
                Zn = solve(G)
                n_matvec += b
                Gn = cct(Zn, Cm)
                S, T = gram64(Z, G, step), gram64(G, Zn, step)        # ZᵀG, GᵀZ' in float64
                theta_all, Y = _ritz(T, S)
                if theta_all.shape[0] < r:
                    raise np.linalg.LinAlgError(
                        f"the feature-space eigen-solve's block spans only {theta_all.shape[0]} concept-space "
                        f"directions, fewer than n_components={r}: the data support fewer directions; "
                        "lower n_components")
                theta, Yr = theta_all[:r], Y[:, :r]
                res2 = np.empty(r)
                for a in range(0, r, 64):           # p × 64 temporaries
                    ya, ta = Yr[:, a:a + 64].astype(bt), theta[a:a + 64].astype(bt)
                    u = Zn @ ya - (Z @ ya) * ta
                    res2[a:a + 64] = np.einsum("ij,ij->j", u, Gn @ ya - (G @ ya) * ta, dtype=np.float64)
                rel = np.sqrt(np.maximum(res2, 0.0)) / np.where(theta > 0, theta, 1.0)
                if self.callback is not None:
                    self._progress("eig", {"iteration": it, "eigenvalues": theta, "residuals": rel * np.abs(theta)},
                                   r)
                converged = bool(np.all(rel <= self.eig_tol))
                bar.n = int(np.count_nonzero(rel <= self.eig_tol))
                bar.set_postfix(it=it, rel_res=f"{float(rel.max()):.2e}")
                if converged or it == int(self.eig_maxiter):
                    break
                # the next block Z'Y and its G'Y (scaled by 1/θ: columns of about unit size),
                # written over Z and G row block by row block
                Mrot = (Y / np.where(theta_all > 0, theta_all, 1.0)).astype(bt)
                k = Mrot.shape[1]
                for i in range(0, p, step):
                    Z[i:i + step, :k] = Zn[i:i + step] @ Mrot
                    G[i:i + step, :k] = Gn[i:i + step] @ Mrot
                if k < b:                           # directions lost: fresh random columns
                    Z[:, k:] = rng.standard_normal((p, b - k))
                    G[:, k:] = cct(Z[:, k:], Cm)
            del Z, G, Gn
            Phi_star_T = np.asarray(Zn @ Yr.astype(bt), dtype=dt)       # A⁻¹ĈP_r = Z'y
        res = EigResult(eigenvalues=theta, eigenvectors=np.empty((0, r)), converged=converged, n_iter=it,
                        n_matvec=n_matvec, residual_norms=rel * np.abs(theta),
                        info={"method": "feature-subspace", "block_size": b, "space": "features",
                              "one_read_products": bool(Cm.concept_ordered())})
        return res, Phi_star_T

    def _pencil_grams(self, problem: "_Problem", plan: "_MemoryPlan") -> list:
        """The languages' X_lᵀX_l + λI for the pencil eigen-solver: :class:`GramBlockInverse` in
        "cg" mode, which costs their diagonals and, at loose tolerances on float64 blocks held in
        memory, float32 copies (the products then run in float32, as the CG's would); they are
        applied forwards only."""
        loose = _loose_products(problem, plan, self.eig_tol, self.cg_rtol)
        return [GramBlockInverse(problem.blocks[lang], self.alpha, method="cg", mixed_precision=loose,
                                 transpose_copy=plan.copies)
                for lang in problem.languages]

    def _top_eigenvectors_pencil(self, problem: "_Problem", inverses: list, n_jobs: int, plan: "_MemoryPlan",
                                 timings: dict):
        """The top-r eigenpairs of M = ĈᵀA⁻¹Ĉ by LOBPCG on the pencil ĈĈᵀu = θAu
        (``eig_space="features"``, ``eig_method="lobpcg"``), and Φ*ᵀ = A⁻¹ĈP_r.

        A = X̂ᵀX̂ + λI is applied, never inverted: each iteration applies ĈĈᵀ and A once to the
        preconditioned residuals W = D⁻¹(ĈĈᵀX − AXΘ) (D = diag A) and takes the top Ritz pairs of
        the pencil on span[X, W, P] (P: the previous step), so an iteration costs four sparse
        products per column where an iteration with inner CG solves costs two per CG iteration.
        With uᵀAu = 1 the concept-space eigenvector is v = Ĉᵀu/√θ and A⁻¹Ĉv = √θ u: Φ*ᵀ needs no
        solve. Convergence: ‖ĈĈᵀu − θAu‖_{D⁻¹} ≤ ``eig_tol`` θ for the r wanted pairs (the D⁻¹
        norm stands in for the A⁻¹ norm, where this is the concept-space criterion
        ‖Mv − θv‖ ≤ ``eig_tol`` θ; measured at about twice it, so the stop is conservative).
        Holds X, W, P and their images under ĈĈᵀ and A (nine p × b blocks; b from the memory
        plan) and, inside a product, one K × ``apply_columns`` block (none for a corpus on disk
        sorted by concept: :meth:`CrossCovariance.pencil_images`)."""
        p, r = problem.p, problem.r
        b = plan.block_size(problem)
        dt = problem.dtype
        bt = _pencil_basis_dtype(problem, plan)
        C, C32, Cm = self._cross_covariances(problem, inverses, n_jobs, plan)
        grams = BlockDiagonal([inv.cg_gram for inv in inverses], n_jobs=n_jobs)
        n, mu = problem.n, problem.mean.astype(bt)
        chunk = plan.apply_columns
        rng = check_random_state(self.random_state)
        d = _jacobi_diagonal(problem, self.alpha)
        d_inv = (1.0 / d).astype(bt)[:, None]

        # a corpus on disk sorted by concept: both images from one read, no K × chunk block
        fused = Cm.concept_ordered()

        def cct(Z, Cx):                    # Ĉ Ĉᵀ Z, a K × chunk block at a time
            return _c_ct(Cx, Z, chunk, bt)

        def images(Z):                     # Ĉ Ĉᵀ Z and A Z
            if fused:
                CZ, AZ = Cm.pencil_images(Z, alpha=self.alpha)
                return CZ.astype(bt, copy=False), AZ.astype(bt, copy=False)
            return cct(Z, Cm), apply_a(Z)

        def apply_a(Z):                    # (X̂ᵀX̂ + λI) Z = blocks' (X_lᵀX_l + λI) Z_l − n μ μᵀZ
            out = np.empty((p, Z.shape[1]), dtype=bt)
            for a in range(0, Z.shape[1], chunk):
                Zc = np.ascontiguousarray(Z[:, a:a + chunk], dtype=grams.dtype)
                part = grams.matmat(Zc).astype(bt, copy=False)
                out[:, a:a + chunk] = add_outer(part, mu, mu @ Z[:, a:a + chunk], -float(n))
            return out

        step = max(1, (64 << 20) // max(1, 3 * b * 8))      # rows per block of the p × 3b passes

        def rayleigh_ritz_matrices(S, SC, SA):
            """SᵀĈĈᵀS and SᵀAS (float64), S = [X, W, (P)]: the upper blocks only (both are
            symmetric), each a GEMM in the basis dtype per row block summed in float64 (at p =
            400,000, b = 360 the float64 products of the whole 3b × 3b matrices took about 30 s
            per iteration on one BLAS thread)."""
            offs = np.cumsum([0] + [B.shape[1] for B in S])
            GC, GA = np.zeros((offs[-1], offs[-1])), np.zeros((offs[-1], offs[-1]))
            for i in range(0, p, step):
                for a, Sa in enumerate(S):
                    Sai = Sa[i:i + step]
                    for c in range(a, len(S)):
                        sl = (slice(offs[a], offs[a + 1]), slice(offs[c], offs[c + 1]))
                        GC[sl] += Sai.T @ SC[c][i:i + step]
                        GA[sl] += Sai.T @ SA[c][i:i + step]
            for G in (GC, GA):
                upper = np.triu(G, 1)
                G[:] = np.diag(np.diag(G)) + upper + upper.T
            return GC, GA

        # directions of [X, W, P] closer than the products' rounding are noise (their Ritz values
        # are spurious, above the largest eigenvalue): dropped at 100 eps of the products' dtype
        drop = max(1e-12, 100 * float(np.finfo(np.result_type(Cm.dtype, grams.dtype)).eps))

        def rayleigh_ritz_x(X):            # X's images made afresh, X A-orthonormal with its Ritz values
            CX, AX = images(X)
            GC, GA = rayleigh_ritz_matrices([X], [CX], [AX])
            theta_all, Y = _ritz(GC, GA, drop=drop)
            if theta_all.shape[0] < b:
                raise np.linalg.LinAlgError("the block of the feature-space eigen-solve lost rank")
            Yb = Y[:, :b].astype(bt)
            return X @ Yb, CX @ Yb, AX @ Yb, theta_all[:b]

        with _timed(timings, "time_start"):
            X = rng.standard_normal((p, b), dtype=bt)
            for _ in range(int(self.start_steps)):
                X = cct(X, C if C32 is None else C32)
                X *= d_inv
                X = _cholesky_qr(X, passes=1, overwrite=True)
            X, CX, AX, theta = rayleigh_ritz_x(X)
        # the images CX, AX (and P's) are carried by the same combinations as X, so their rounding
        # errors add up: in a float32 basis they drift from the true products after some tens of
        # iterations (measured on a 4-language corpus, r = 100: Ritz values above the largest
        # eigenvalue from iteration ~45). A float32 basis makes them afresh every 10 iterations
        # (one more application of the pencil, P dropped: a restart)
        refresh = 10 if bt == np.float32 else 0
        P = CP = AP = None
        n_matvec, converged = b, False
        bar = progress(total=r, show=self.show_progress, desc="eigen-solve (feature space, LOBPCG) converged pairs",
                       unit="pair")
        with _timed(timings, "time_eig"), bar:
            for it in range(1, int(self.eig_maxiter) + 1):
                W = CX - AX * theta.astype(bt)                 # residuals of the b Ritz pairs
                res = np.sqrt(np.einsum("ij,ij->j", W, W * d_inv, dtype=np.float64))
                rel = res[:r] / np.where(theta[:r] > 0, theta[:r], 1.0)
                if self.callback is not None:
                    self._progress("eig", {"iteration": it, "eigenvalues": theta[:r], "residuals": rel * np.abs(theta[:r])},
                                   r)
                converged = bool(np.all(rel <= self.eig_tol))
                bar.n = int(np.count_nonzero(rel <= self.eig_tol))
                bar.set_postfix(it=it, rel_res=f"{float(rel.max()):.2e}")
                if converged or it == int(self.eig_maxiter):
                    break
                if refresh and it % refresh == 0:
                    del W
                    P = CP = AP = None
                    X, CX, AX, theta = rayleigh_ritz_x(X)
                    n_matvec += b
                    W = CX - AX * theta.astype(bt)
                W *= d_inv                                      # the preconditioned residuals
                # A-orthogonal to X (XᵀAX = I: the coefficients are (AX)ᵀW), columns of unit
                # size: keeps the pencil's Gram matrices of [X, W, P] well conditioned as the
                # residuals shrink
                W -= X @ (AX.T @ W)
                if P is not None and AP is not None:           # and to P (A-orthonormal, below)
                    W -= P @ (AP.T @ W)
                W /= np.maximum(np.sqrt(np.einsum("ij,ij->j", W, W, dtype=np.float64)), np.finfo(bt).tiny).astype(bt)
                CW, AW = images(W)
                n_matvec += b
                S, SC, SA = ([X, W], [CX, CW], [AX, AW]) if P is None else ([X, W, P], [CX, CW, CP], [AX, AW, AP])
                GC, GA = rayleigh_ritz_matrices(S, SC, SA)
                theta_all, Y = _ritz(GC, GA, drop=drop)
                if theta_all.shape[0] < b:
                    raise np.linalg.LinAlgError(
                        f"the feature-space eigen-solve's search space spans only {theta_all.shape[0]} directions "
                        f"of A, fewer than its block of {b}")
                theta = theta_all[:b]
                # the next X is S y for the top b Ritz vectors; the next P spans W's and P's parts
                # of them (LOBPCG), taken A-orthogonal to the next X and A-orthonormal (the basis
                # selection of Hetmaniuk & Lehoucq 2006): span[X, P] is LOBPCG's, and the next
                # Rayleigh-Ritz matrices stay well conditioned as the residuals shrink, where a
                # P nearly inside span(X) had its directions dropped (steepest descent, slow)
                Y1 = Y[:, :b]
                Zp = np.zeros_like(Y1)
                Zp[b:] = Y1[b:]
                Zp -= Y1 @ (Y1.T @ (GA @ Zp))
                R = _range_basis(Zp.T @ GA @ Zp, drop)
                Zp_n = np.zeros_like(Zp)                       # lost directions: zero columns
                Zp_n[:, :R.shape[1]] = Zp @ R
                Yx, Yp = Y1.astype(bt), Zp_n.astype(bt)
                if P is None:
                    P, CP, AP = (np.empty((p, b), dtype=bt) for _ in range(3))
                assert CP is not None and AP is not None
                targets: list[tuple[np.ndarray, list]] = [(P, S), (CP, SC), (AP, SA)]
                for new_p, blocks3 in targets:
                    B0 = blocks3[0]
                    for i in range(0, p, step):
                        Si = np.hstack([B[i:i + step] for B in blocks3])
                        B0[i:i + step] = Si @ Yx
                        new_p[i:i + step] = Si @ Yp
                # no reference to W and its images may outlive the iteration: the next one makes
                # its own before these would be freed (three p × b blocks too many)
                del W, CW, AW, S, SC, SA, targets, blocks3, B0, new_p
            del CX, AX, P, CP, AP
            Phi_star_T = np.empty((p, r), dtype=dt)                  # A⁻¹ĈP_r = √θ u
            np.multiply(X[:, :r], np.sqrt(np.maximum(theta[:r], 0.0)).astype(bt), out=Phi_star_T)
        del X
        res_ = EigResult(eigenvalues=theta[:r], eigenvectors=np.empty((0, r)), converged=converged, n_iter=it,
                         n_matvec=n_matvec, residual_norms=rel * np.abs(theta[:r]),
                         info={"method": "feature-lobpcg", "block_size": b, "space": "features",
                              "one_read_products": fused})
        return res_, Phi_star_T

    def _progress(self, stage: str, info: dict, r: int) -> None:
        """Record the fit's progress in ``fit_progress_`` and call the callback: the common
        ``callback(model, iteration, loss)`` once per eigen-solver iteration, or an old-style
        ``callback(stage, info)`` at every event (with a FutureWarning, once per model)."""
        callback = self.callback
        if callback is None:
            return
        if self._callback_is_old:
            if not self.__dict__.get("_warned_callback"):
                self._warned_callback = True
                warnings.warn("Cr5's callback(stage, info) is now callback(model, iteration, loss), as "
                              "every linxling model's; the details are in model.fit_progress_. The "
                              "two-parameter form goes in the next release", FutureWarning,
                              stacklevel=find_stack_level())
            callback(stage, info)
            return
        if stage == "eig":
            theta = np.abs(np.asarray(info["eigenvalues"], dtype=np.float64))[:r]
            res = np.asarray(info["residuals"], dtype=np.float64)[:r]
            rel = res / np.where(theta > 0, theta, 1.0)
            loss = float(rel.max()) if rel.size else 0.0
            # from 0, as every model's callback counts; ARPACK and the dense solver report no
            # iteration count (-1) and call once, at their end: that call is iteration 0
            it = max(int(info["iteration"]) - 1, 0)
            self.fit_progress_ = {"stage": "eig", **info, "iteration": it, "n_iter": int(info["iteration"]),
                                  "loss": loss}
            callback(self, it, loss)
        else:
            last = dict(getattr(self, "fit_progress_", {}) or {})
            self.fit_progress_ = {**last, **info, "stage": "phi", "phi": info["stage"]}

    # ---- stage 4: Φ*ᵀ = (X̂ᵀX̂ + λI)⁻¹ X̂ᵀŶ P_r (eq. 14)
    def _phi_star(self, problem: "_Problem", A_inv: WoodburyInverse, record: "_SolveRecord", eig,
                  plan: "_MemoryPlan"):
        """Combined from the recorded solves: with the subspace eigen-solver's exact coefficients
        of P_r in the applied blocks, or, for the other eigen-solvers, by least squares when P_r
        lies in the span of the recorded blocks; else block solves with r right-hand sides (in
        chunks of the plan's width)."""
        P = np.asarray(eig.eigenvectors[:, :problem.r], dtype=problem.dtype)
        if self.callback is not None:
            self._progress("phi", {"stage": "start", "n_rhs": problem.r}, problem.r)
        if not record.keep_inputs:
            coef = eig.info.get("applied_coefficients")
            Phi_star_T, source = record.combine(None if coef is None else coef[:, :problem.r])
        else:
            # P is in the span of the recorded blocks to the basis' precision
            span_rtol = 1e-8 if plan.basis_dtype is None or np.dtype(plan.basis_dtype) == np.float64 else 1e-5
            Phi_star_T, source = record.recombine(P, rtol=span_rtol)
        if Phi_star_T is None:
            Phi_star_T = np.empty((problem.p, problem.r), dtype=problem.dtype)    # (p, r)
            for a in range(0, problem.r, plan.apply_columns):
                Phi_star_T[:, a:a + plan.apply_columns] = A_inv.matmat(record.C.matmat(P[:, a:a + plan.apply_columns]))
        if self.callback is not None:
            self._progress("phi", {"stage": "done", "n_rhs": problem.r, "source": source}, problem.r)
        return np.asarray(Phi_star_T, dtype=problem.dtype), source

    # ---- stage 5: orthonormal rows (eq. 15)
    def _orthonormal_map(self, Phi_star_T, problem: "_Problem"):
        """Φ*Φ*ᵀ = QΛQᵀ, Φ = Λ^{-1/2} QᵀΦ* (orthonormal rows); singular values of W are Λ^{1/2}.

        Returns Φ per language (each (r, p_l), C-contiguous), built one language at a time."""
        G = gram_tn(Phi_star_T, Phi_star_T)
        lam, Q = np.linalg.eigh((G + G.T) / 2)
        order = np.argsort(lam)[::-1]
        lam, Q = lam[order], Q[:, order]
        if lam[-1] <= 0:
            raise np.linalg.LinAlgError(
                f"Φ*Φ*ᵀ is singular (smallest eigenvalue {lam[-1]:.3g}): the data support fewer than "
                f"n_components={len(lam)} directions; lower n_components")
        sv = np.sqrt(lam)
        T = Q / sv                                   # Φᵀ = Φ*ᵀ T: orthonormal columns
        if self.scale == "singular":
            T = T * sv
        T = T.astype(Phi_star_T.dtype, copy=False)
        offsets = np.cumsum([0] + [problem.blocks[lang].shape[1] for lang in problem.languages])
        TT = np.ascontiguousarray(T.T)
        components = {lang: TT @ Phi_star_T[offsets[i]:offsets[i + 1]].T      # (r, p_l), one allocation
                      for i, lang in enumerate(problem.languages)}
        _flip_signs(components)
        return components, sv

    # ---- fitted attributes and convergence records
    def _set_fitted(self, problem: "_Problem", inverses: Sequence[Any], res, components, sv,
                    inverted: bool = True) -> None:
        languages, dtype = problem.languages, problem.dtype
        self.languages_ = languages
        self.classes_ = problem.classes
        self.n_features_ = {lang: problem.blocks[lang].shape[1] for lang in languages}
        self.components_ = components
        self.singular_values_ = sv.astype(dtype)
        self.eigenvalues_ = np.asarray(res.eigenvalues[:problem.r])
        # the pencil eigen-solver (inverted=False) only applies X̂ᵀX̂ + λI: no block is inverted
        block_info: list[dict[str, Any]] = [{"method": inv.method_ if inverted else "none",
                       "reason": inv.reason_ if inverted else "eig_method='lobpcg' in feature space applies "
                                                              "X_lᵀX_l + λI, never its inverse",
                       "mixed_precision": bool(getattr(inv, "mixed_precision_", False)),
                       "nonconverged": list(inv.nonconverged_),
                       "cg_iterations": list(inv.cg_iterations_),
                       "cg_krylov": list(getattr(inv, "cg_krylov_used_", []))} for inv in inverses]
        n_block_failures = sum(len(b["nonconverged"]) for b in block_info)
        self.convergence_ = {
            "eig": {"converged": bool(np.all(res.converged)), "n_iter": int(res.n_iter),
                    "n_matvec": int(res.n_matvec), "method": res.info.get("method", self.eig_method),
                    "block_size": int(res.info.get("block_size", 0)),
                    "one_read_products": bool(res.info.get("one_read_products", False))},
            "blocks": dict(zip(languages, block_info)),
        }
        if n_block_failures:
            warnings.warn(f"Cr5: {n_block_failures} block CG application(s) missed cg_rtol={self.cg_rtol} "
                          f"within cg_maxiter={self.cg_maxiter}; details per language in "
                          "convergence_['blocks']", UserWarning, stacklevel=find_stack_level())
        if not np.all(res.converged):
            warnings.warn("Cr5: the eigen-solve did not converge to eig_tol="
                          f"{self.eig_tol} in {self.eig_maxiter} iterations; the result is recorded in "
                          "convergence_ (raise eig_maxiter or eig_tol)", UserWarning, stacklevel=find_stack_level())
        self.fit_info_ = {
            "n_documents": problem.n, "n_concepts": len(problem.classes),
            "n_features": int(problem.p), "nnz": int(problem.nnz),
            "block_methods": {lang: b["method"] for lang, b in zip(languages, block_info)},
        }

    # ------------------------------------------------------------------ inference
    def _embed_matrix(self, X: Any, language: str) -> np.ndarray:
        """``X Φ_lᵀ`` (no centring) of checked feature rows: public as :meth:`transform_matrix`."""
        return rows_times_map(X, self.components_[language])

    # ------------------------------------------------------------------ store
    def _get_state(self):
        self._check_fitted()
        params = self._params_state()
        params["convergence"] = _jsonable(self.convergence_)
        params["fit_info"] = _jsonable(self.fit_info_)
        arrays = self._shared_state(params)
        arrays["eigenvalues"] = self.eigenvalues_
        return params, arrays

    @classmethod
    def _from_state(cls, params, arrays):
        model = cls._from_params_state(params)
        model._restore_shared(params, arrays)
        # a record of the fit, not used by transform: a 1-D float array (NaN allowed)
        model.eigenvalues_ = stored_float(arrays["eigenvalues"], "eigenvalues", 1, finite=False)
        model.convergence_ = params.get("convergence", {})
        model.fit_info_ = params.get("fit_info", {})
        return model


class _SolveRecord:
    """The solves Z = A⁻¹ĈV made by the eigen-solver, in order, to give A⁻¹ĈP without another
    solve: from the eigen-solver's coefficients of P in the applied blocks (the subspace method
    tracks them exactly, so only the Zs are kept), or, with ``keep_inputs``, by least squares
    against copies of the applied blocks V (for eigen-solvers that give no coefficients)."""

    def __init__(self, budget_bytes: int, C=None, keep_inputs: bool = True):
        self.C = C                         # the cross-covariance X̂ᵀŶ the solves were made with
        self.budget = int(budget_bytes)
        self.keep_inputs = bool(keep_inputs)
        self.V: list[np.ndarray] = []
        self.Z: list[np.ndarray] = []
        self.nbytes = 0
        self.complete = True

    def add(self, V, Z) -> None:
        """Keep ``Z`` itself (the caller never writes to a solve's result) and, with
        ``keep_inputs``, a copy of ``V``."""
        if not self.complete:
            return
        size = Z.nbytes + (V.nbytes if self.keep_inputs else 0)
        if self.nbytes + size > self.budget:
            self.complete = False          # an incomplete record cannot be trusted: drop it
            self.V, self.Z = [], []
            return
        if self.keep_inputs:
            self.V.append(np.array(V, copy=True))
        self.Z.append(Z)
        self.nbytes += size

    def combine(self, coef):
        """Return (Σ_i Z_i coef_i, "recorded") for the coefficients of P in the applied columns
        (rows of ``coef``, in the order applied), else (None, why)."""
        n_cols = sum(Z.shape[1] for Z in self.Z)
        if not self.complete or not self.Z:
            return None, "solve (no usable record)"
        if coef is None or coef.shape[0] != n_cols:
            return None, "solve (the eigen-solver gave no coefficients for the recorded solves)"
        out = np.zeros((self.Z[0].shape[0], coef.shape[1]), dtype=self.Z[0].dtype)
        a = 0
        for Zi in self.Z:
            b = a + Zi.shape[1]
            gemm_acc(out, Zi, np.ascontiguousarray(coef[a:b], dtype=Zi.dtype), 1.0)
            a = b
        return out, "recorded"

    def recombine(self, P, rtol: float = 1e-8):
        """Return (A⁻¹ĈP, "recorded") when P is in the span of the recorded blocks, else (None, why).

        Works block by block (Gram matrix VᵀV and VᵀP from the recorded blocks, then Σ_i Z_i c_i),
        never stacking the record: it needs no memory beyond the (p, r) result.
        """
        if not self.complete or not self.V or not self.keep_inputs:
            return None, "solve (no usable record)"
        import scipy.linalg as sla
        widths = [V.shape[1] for V in self.V]
        offsets = np.cumsum([0] + widths)
        G = np.empty((offsets[-1], offsets[-1]))
        for i, Vi in enumerate(self.V):
            for j in range(i, len(self.V)):
                G[offsets[i]:offsets[i + 1], offsets[j]:offsets[j + 1]] = Vi.T @ self.V[j]
                G[offsets[j]:offsets[j + 1], offsets[i]:offsets[i + 1]] = G[offsets[i]:offsets[i + 1],
                                                                            offsets[j]:offsets[j + 1]].T
        VtP = np.vstack([Vi.T @ P for Vi in self.V])
        pnorm = max(float(np.linalg.norm(P)), np.finfo(float).tiny)

        def residual(coef):
            R = P.astype(np.float64, copy=True)
            for Vi, a, b in zip(self.V, offsets[:-1], offsets[1:], strict=True):
                R -= Vi @ coef[a:b]
            return float(np.linalg.norm(R)) / pnorm

        # normal equations first; a pseudo-inverse of the (small) Gram matrix when they are unreliable
        try:
            coef = sla.cho_solve(sla.cho_factor(G, check_finite=False), VtP, check_finite=False)
            err = residual(coef)
        except np.linalg.LinAlgError:
            err = np.inf
        if not err <= rtol:
            w, U = np.linalg.eigh(G)
            keep = w > w[-1] * 1e-14
            coef = (U[:, keep] / w[keep]) @ (U[:, keep].T @ VtP)
            err = residual(coef)
        if not err <= rtol:
            return None, f"solve (P outside the recorded span, rel. error {err:.1e})"
        out = np.zeros((self.Z[0].shape[0], P.shape[1]), dtype=np.result_type(self.Z[0].dtype, P.dtype))
        for Zi, a, b in zip(self.Z, offsets[:-1], offsets[1:], strict=True):
            out += Zi @ coef[a:b]
        return out, "recorded"


def _jacobi_start(problem: "_Problem", C, alpha, steps, rng):
    """Starting block for the eigen-solve: ``steps`` power steps of ĈᵀD⁻¹Ĉ on a random block.

    Only a starting guess, so it runs in the dtype of ``C`` (the fit passes a float32 twin of Ĉ
    whatever the data dtype: half the memory traffic; under a tight memory budget Ĉ itself), and
    between steps one Cholesky-QR pass suffices (the next step and the eigen-solver
    re-orthonormalise). The eigen-solver judges convergence on the exact operator.
    """
    r, K = problem.r, len(problem.classes)
    b = _block_size(r, K)
    dt = C.dtype
    d_inv = (1.0 / _jacobi_diagonal(problem, alpha)).astype(dt)[:, None]
    Y = rng.standard_normal((K, b), dtype=dt)   # drawn in C's dtype: no float64 block (1.4 GB at K = 485,000)
    for _ in range(int(steps)):
        U = C.matmat(Y)
        U *= d_inv                  # in place: no second (p, b) array
        Y = _cholesky_qr(C.rmatmat(U), passes=1, overwrite=True)     # rmatmat's result is ours
        del U
    return Y.astype(problem.dtype)


def _c_ct(C, Z: np.ndarray, chunk: int, dtype: Any) -> np.ndarray:
    """``Ĉ Ĉᵀ Z`` (p, m) in ``dtype``, ``chunk`` columns at a time (one K × chunk block held), or,
    for a corpus on disk sorted by concept, all columns from one read and no K-row block
    (:meth:`CrossCovariance.pencil_images`)."""
    if C.concept_ordered():
        return C.pencil_images(Z)[0].astype(dtype, copy=False)
    out = np.empty((Z.shape[0], Z.shape[1]), dtype=dtype)
    for a in range(0, Z.shape[1], chunk):
        out[:, a:a + chunk] = C.matmat(C.rmatmat(np.ascontiguousarray(Z[:, a:a + chunk], dtype=C.dtype)))
    return out


def _pencil_basis_dtype(problem: "_Problem", plan: "_MemoryPlan") -> np.dtype:
    """The basis dtype of LOBPCG on the pencil: float32 (the plan's basis or float32 data) only at
    ``eig_tol >= 1e-2``, where it converges in a few iterations; below, float64 (measured on two
    small float32 problems, K = 400, r = 8, before P was kept A-orthonormal: at eig_tol=1e-3
    65–79 iterations against 81–93 in float32, at 1e-4 143–173 against 161–184)."""
    bt = np.dtype(plan.basis_dtype or problem.dtype)
    return bt if plan.eig_tol >= 1e-2 else np.dtype(np.float64)


def _range_basis(S: np.ndarray, drop: float) -> np.ndarray:
    """``U_k / sqrt(s_k)`` for the eigenpairs of the symmetric positive semi-definite ``S`` above
    ``drop`` times its largest eigenvalue: a basis W of S's range with ``Wᵀ S W = I``."""
    s, U = np.linalg.eigh((S + S.T) / 2)
    keep = s > drop * max(float(s[-1]), np.finfo(np.float64).tiny)
    return U[:, keep] / np.sqrt(s[keep])


def _ritz(T: np.ndarray, S: np.ndarray, drop: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
    """Eigenpairs of the pencil (T, S), S symmetric positive semi-definite: ``T y = θ S y``,
    θ descending, ``yᵀ S y = 1``. Directions of S below ``drop`` times its largest eigenvalue (a
    block whose concept-space image lost rank, or directions of a search space that its products'
    rounding cannot tell apart) are dropped: fewer pairs come back."""
    T = (T + T.T) / 2
    W = _range_basis(S, drop)                        # S^{-1/2} on S's range
    theta, Q = np.linalg.eigh(W.T @ T @ W)
    order = np.argsort(theta)[::-1]
    return theta[order], W @ Q[:, order]


def _jacobi_diagonal(problem: "_Problem", alpha) -> np.ndarray:
    """D = diag(X̂ᵀX̂ + λI) (float64): the column sums of squares, centred, plus λ."""
    sumsq = np.concatenate([_column_sumsq64(problem.blocks[lang]) for lang in problem.languages])
    return sumsq - problem.n * problem.mean.astype(np.float64) ** 2 + alpha


def _loose_products(problem: "_Problem", plan: "_MemoryPlan", eig_tol: float, cg_rtol: float) -> bool:
    """Whether the operator's Ĉ products run on the float32 twin (loose tolerances, float64 data)."""
    return (_twin_ok(problem, plan) and plan.mixed_precision and eig_tol >= 1e-4 and cg_rtol >= 1e-4)


def _concept_keys(blocks: Mapping[str, Any], languages: list, classes: list, labels: list) -> list | None:
    """When every block is a corpus on disk whose rows are sorted by concept id (the ids' own
    order: numbers, strings), each block's rows' ranks of their ids in that order; else None.
    With them the feature-space products ``Ĉ Ĉᵀ Z`` (and ``A Z``) come from one read with no
    K-row block (:meth:`CrossCovariance.pencil_images`)."""
    if not all(isinstance(blocks[lang], ChunkedSource) and blocks[lang].kind == "hdf5" for lang in languages):
        return None
    try:
        ids = np.asarray(classes)
        if ids.ndim != 1 or ids.dtype == object:
            return None
        rank = np.empty(len(classes), dtype=np.int64)
        rank[np.argsort(ids, kind="stable")] = np.arange(len(classes))
    except (TypeError, ValueError):
        return None
    keys = [rank[lab] for lab in labels]
    return keys if sorted_by_concept(keys) else None


def _concept_ordered(problem: "_Problem") -> bool:
    """Whether the feature-space products come from one concept-ordered read (see _concept_keys)."""
    return problem.concept_keys is not None


def _twin_ok(problem: "_Problem", plan: "_MemoryPlan") -> bool:
    """Whether a float32 twin of Ĉ may be used: float64 data, and copies allowed or every block
    row-partitioned (cast per chunk, no copy on this process). Measured on a dask cluster at
    K = 60,000 (r = 300, 1 worker): the twenty 360-column Ĉ products took 38.4 s in float64."""
    rows = all(isinstance(X, RowSource) for X in problem.blocks.values())
    return problem.dtype != np.float32 and (plan.copies or rows)


def _column_sums(X) -> np.ndarray:
    """Column sums (float64) of an in-memory CSR block or a row source (cached statistics)."""
    if isinstance(X, RowSource):
        return X.column_sums()
    return csr_column_sums(X)


def _column_sumsq64(X) -> np.ndarray:
    """``diag(XᵀX)`` in float64: summed in float64 whatever X's dtype (a float32 block's sums are
    not rounded to float32 on the way)."""
    if isinstance(X, RowSource):
        return X.column_sumsq()
    if sp.issparse(X):
        return csr_column_sumsq(X)
    from linxling.operators.gram import _column_sumsq
    return np.asarray(_column_sumsq(X), dtype=np.float64)


def _on_host(blocks: Any, concepts: Any) -> tuple[Any, Any]:
    """The blocks and concept ids as host (NumPy / SciPy) arrays: they are validated there, and a
    device fit moves them back (anything that is not a mapping is left for the validation)."""
    from linxling.xp import to_host
    if isinstance(blocks, Mapping):
        blocks = {lang: to_host(X) for lang, X in blocks.items()}
    if isinstance(concepts, Mapping):
        concepts = {lang: to_host(c) for lang, c in concepts.items()}
    return blocks, concepts


def _source_kind(X) -> str:
    return X.kind if isinstance(X, RowSource) else "memory"


def _close_dask_sources(blocks) -> None:
    """Close the Dask sources among ``blocks`` (:meth:`DaskSource.close`: their persisted
    chunks and each worker's copies of them; nothing for a corpus read by the workers)."""
    for X in blocks:
        if _source_kind(X) == "dask":
            X.close()


def _dask_counters(problem: "_Problem") -> dict | None:
    """Bytes sent / received so far by the dask blocks of the problem (None without any)."""
    srcs = [X for X in problem.blocks.values() if _source_kind(X) == "dask"]
    if not srcs:
        return None
    out: dict = {}
    for X in srcs:
        for k, v in X.counters().items():
            out[k] = out.get(k, 0) + v
    return out


def _dask_record(sources, eig: dict | None, n_iter: int) -> dict:
    """``fit_info_["dask"]``: what travelled between this client and the workers."""
    total: dict = {}
    for X in sources:
        for k, v in X.counters().items():
            total[k] = total.get(k, 0) + v
    from linxling._dask import n_workers
    rec = {"n_workers": n_workers(sources[0].client),
           "n_chunks": {X.name: X.n_chunks for X in sources}, **total,
           "counted": ("NumPy nbytes of the dense blocks this client sent to the workers (the "
                       "scattered V, per-chunk row blocks, a whole solve's right-hand sides) and "
                       "received (partial results, solutions) in the fit's products; not counted: "
                       "copies between workers, message headers, the one-time persist and the "
                       "column statistics"),
           "n_local_note": ("n_local: products and whole block-CG solves run as one task on the "
                            "worker that holds every chunk of a language")}
    rec["product_log"] = [list(e) for X in sources for e in X.product_log]
    rec["product_log_fields"] = ["kind", "where", "columns", "cg_iterations", "seconds", "bytes_sent",
                                 "bytes_received"]
    if eig is not None:
        rec["eig_stage"] = dict(eig)
        rec["eig_iterations"] = int(n_iter)
        per = (eig["bytes_sent"] + eig["bytes_received"]) / max(int(n_iter), 1)
        rec["bytes_per_eig_iteration"] = int(per)
    return rec


def _check_block_shape(shape, lang, concepts) -> None:
    """blocks[lang] has rows and columns, and one concept id per row."""
    name = f"blocks[{lang!r}]"
    if shape[0] == 0:
        raise ValueError(f"language {lang!r} has no documents ({name} has 0 rows)")
    if shape[1] == 0:
        raise ValueError(f"language {lang!r} has no features ({name} has 0 columns)")
    ids = concepts[lang]
    if isinstance(ids, (str, bytes)) or not hasattr(ids, "__len__") or not hasattr(ids, "__getitem__"):
        raise TypeError(f"concepts[{lang!r}] must be a sequence or array of concept ids, one per row of "
                        f"{name}, got {type(ids).__name__}")
    if len(ids) != shape[0]:
        raise ValueError(f"concepts[{lang!r}] has {len(ids)} entries but {name} has {shape[0]} rows")


# guard columns of the pencil LOBPCG's block (a fraction of r) when its nine p × b blocks do not
# fit the memory budget with the usual 20 %
_PENCIL_LEAN_GUARD = 0.1


# guard columns of the eigen-solver's block beyond r (a fraction of r, at least 10), by where the
# eigen-solve keeps its blocks. In concept space 10 %: measured with the default start (4 steps),
# interleaved, on the 485,000-concept Wikipedia-shaped pair (r = 300, float32, memory_budget="12G",
# 2-core AMD EPYC, 2026-11-26): one iteration either way, 208.0 / 212.3 s at 10 % against 227.0 /
# 222.3 s at 20 %; K = 60,000 (float64): one iteration either way, 31.5 / 28.2 s against 32.0 /
# 29.8 s; 5 x 20,000 Bible verses, r = 100 and 300: the same iterations (3), operator columns
# (204 / 205, 667 / 654) and validation CSLS P@1 (0.848 / 0.846, 0.881 / 0.882). Fewer guard
# columns leave more error within eig_tol: at K = 20,000 against a tight fit, singular values
# 0.64 % off on average against 0.40 % (subspace mean principal cosine 0.908 against 0.942).
# The feature-space solvers keep 20 % (not measured at 10 % beyond the pencil's lean plan,
# _PENCIL_LEAN_GUARD)
_GUARD = {"concepts": 0.1, "features": 0.2}


def _block_size(r: int, K: int | None = None, space: str = "concepts") -> int:
    """Columns of the eigen-solver's block: r + max(10, ``_GUARD[space]`` r), at most K when
    given."""
    b = r + max(10, int(np.ceil(_GUARD[space] * r)))
    return b if K is None else min(K, b)


def _feature_solver(problem: "_Problem") -> str:
    """The feature-space eigen-solver ``eig_method="auto"`` takes (with ``eig_space="features"``,
    or ``"auto"`` when only feature space fits the memory budget): LOBPCG on the pencil when the
    corpus has at least p b nonzeros (b the feature space's block), else the subspace iteration
    with inner solves.

    Per operator column the subspace iteration pays two sparse products per inner CG iteration
    (12-20 at ``cg_rtol=1e-2``) and little dense work; LOBPCG pays four sparse products an
    iteration and dense work on nine p x b blocks. So LOBPCG wins where the sparse work
    (nonzeros) outweighs the dense work (p b). Measured (benchmarks/README.md, "LOBPCG on the
    pencil"; AMD EPYC, 2 cores): Wikipedia-shaped, K = 99,451, p = 40,000, 39.0M nonzeros, r = 100
    (nnz / p b = 8.1): 8.7-10.8 s against 16.9 s for the subspace iteration, singular values within
    3.3 % of a tight solve against 14.9 %; K = 5.58M, p = 800,000, 2.22 billion nonzeros, r = 300
    (7.7), streamed under ``memory_budget="12G"``: 22.0-22.5 min against about 4.5 h projected;
    on Bible verses (5 languages, 20,000 verses, r = 100; 1.77M nonzeros, p = 40,256: 0.37) the
    subspace iteration: validation CSLS P@1 0.856 against 0.840, in about the same time."""
    b = _block_size(problem.r, len(problem.classes), "features")
    return "lobpcg" if problem.nnz >= problem.p * b else "subspace"


@dataclass
class _Problem:
    """The problem of eq. (8) per block: X = diag(X_1..X_L) is never stacked."""
    blocks: Mapping[str, Any]
    languages: list
    classes: list
    labels: list
    mean: np.ndarray
    n: int
    r: int
    dtype: np.dtype
    nnz: int
    p: int
    one_doc: bool = False          # at most one document per concept in every language
    eig_method: str = "subspace"   # the eigen-solver linxling.solvers.eigsh runs (never "auto")
    concept_keys: list | None = None   # per block, its rows' concept ranks when every block is on
                                       # disk sorted by concept (see _concept_keys), else None


@dataclass
class _MemoryPlan:
    """What a Cr5 fit keeps in memory (see :meth:`choose`); recorded in ``fit_info_["memory_plan"]``."""
    copies: bool = True            # YᵀX and transposed copies of the blocks (fastest products)
    mixed_precision: bool = True   # float32 copies of the blocks for loose block CG
    basis_dtype: Any = None        # eigen-solver basis dtype (None: the data's)
    basis_factor: int = 3          # eigen-solver basis = basis_factor × block size
    apply_columns: int = 1 << 30   # columns of the operator applied at a time
    record_bytes: int = 0          # memory for the solves kept to recombine Φ
    read_bytes: int = 64 * 2 ** 20  # streamed blocks: stored chunks read together up to this size
    budget: int | None = None
    estimate: int = 0              # estimated peak of the fit on top of the memory in use at its start
    in_use: int = 0                # resident memory when the fit started
    eig_tol: float = 1e-1          # the fit's tolerances (whether Ĉ's products run in float32)
    cg_rtol: float = 1e-2
    eig_space: str = "concepts"    # the eigen-solve's blocks: K rows ("concepts") or p rows ("features")
    eig_solver: str = "subspace"   # in feature space: "subspace" (inner solves) or "lobpcg" (the pencil)
    pencil_block: int = 0          # LOBPCG on the pencil: columns of its block (0: _block_size)

    def block_size(self, problem: "_Problem") -> int:
        """Columns of the eigen-solver's block: ``_block_size``, or the pencil LOBPCG's own."""
        b = _block_size(problem.r, len(problem.classes), self.eig_space)
        return min(b, self.pencil_block) if self.eig_solver == "lobpcg" and self.pencil_block else b

    def eig_kwargs(self, problem: "_Problem") -> dict[str, Any]:
        """Keyword arguments for :func:`linxling.solvers.eigsh` (its subspace method)."""
        if self.basis_dtype is None and self.basis_factor == 3:
            return {}
        K, r = len(problem.classes), problem.r
        b = _block_size(r, K)
        return {"basis_dtype": self.basis_dtype, "max_basis": min(K, self.basis_factor * b)}

    def as_dict(self) -> dict:
        return {"copies": self.copies, "mixed_precision": self.mixed_precision,
                "basis_dtype": None if self.basis_dtype is None else np.dtype(self.basis_dtype).name,
                "basis_factor": self.basis_factor, "apply_columns": min(self.apply_columns, 1 << 30),
                "record_bytes": self.record_bytes, "read_bytes": self.read_bytes, "budget": self.budget,
                "estimate": self.estimate,
                "in_use": self.in_use, "eig_space": self.eig_space,
                "eig_solver": self.eig_solver if self.eig_space == "features" else None,
                "pencil_block": self.pencil_block or None}

    @staticmethod
    def sizes(problem: "_Problem", plan: "_MemoryPlan") -> int:
        """Estimated peak bytes of the fit (sparse copies + the eigen stage, or the Φ stage)."""
        f = problem.dtype.itemsize
        p, K, r = problem.p, len(problem.classes), problem.r
        # only in-memory blocks have copies; a row source holds one chunk at a time (on disk) or
        # nothing at all on this process (on a dask cluster)
        N = sum(int(X.nnz) for X in problem.blocks.values() if not isinstance(X, RowSource))
        # one chunk read (X's or Xᵀ's), its float32 cast and its transpose at a time
        streamed = [X for X in problem.blocks.values() if isinstance(X, ChunkedSource) and X.kind == "hdf5"]
        chunk = max([3 * X.max_chunk_nbytes(plan.read_bytes) for X in streamed] + [0])
        p_max = max(X.shape[1] for X in problem.blocks.values())
        # the row block of a product per column: n_l rows for a block multiplied whole, the rows of
        # one read twice (X_i V and the gathered V[rows]) for a streamed one (summed chunk by chunk)
        n_max = max([X.shape[0] for X in problem.blocks.values() if not any(X is S for S in streamed)]
                    + [2 * X.max_read_rows(plan.read_bytes) for X in streamed])
        b = _block_size(r, K, plan.eig_space)
        idx = 4                                                     # int32 indices
        sparse = problem.n * 16 + K * 8                            # one-hot label matrices
        mixed = plan.mixed_precision and f > 4                      # float32 copies of float64 blocks
        if problem.one_doc:
            # Ĉ shares the blocks' matrices (CrossCovariance.from_blocks): the CG's float32 copy and
            # its transpose (mixed) or the transpose of the block, and, when Ĉ's own products are
            # exact (not the float32 twin), a transpose in the data dtype
            if plan.copies:
                sparse += 2 * N * (4 + idx) if mixed else N * (f + idx)
                if mixed and not _loose_products(problem, plan, plan.eig_tol, plan.cg_rtol):
                    sparse += N * (f + idx)
            elif mixed:
                sparse += N * (4 + idx)
        else:
            if plan.copies:
                sparse += 2 * N * (f + idx)                         # YᵀX and its transpose
                sparse += N * (4 + idx) if mixed else N * (f + idx)     # transposed blocks
            if mixed:
                sparse += N * (4 + idx)                             # float32 copies of the blocks
            if plan.copies and f > 4:
                sparse += 2 * N * (4 + idx)     # float32 YᵀX and its transpose (start, loose products)
        if not plan.copies and N and any(isinstance(X, RowSource) for X in problem.blocks.values()):
            sparse += N * (f + idx)     # in-memory blocks beside row sources: a transposed copy
        fb = np.dtype(plan.basis_dtype or problem.dtype).itemsize
        cols = min(plan.apply_columns, b)
        cg_vec = 4 if plan.mixed_precision else f
        per_col = f * (2 * p + K + (0 if plan.copies and chunk == 0 else n_max)) + (6 * cg_vec + 2 * f) * p_max
        ordered = plan.eig_space == "features" and _concept_ordered(problem)
        pf = 4 if _loose_products(problem, plan, plan.eig_tol, plan.cg_rtol) else f

        def cg_padding(c: int) -> int:
            # the fused inner CG's two direction blocks and its product (p_max rows) and the
            # intermediate (n_max rows) take rows of whole cache lines: a few more columns each
            # (linxling.solvers.cg._fused_gram_product)
            extra = padded_width(c, np.float32 if cg_vec == 4 else problem.dtype) - c
            return extra * cg_vec * (3 * p_max + n_max)

        def fused(basis_bytes: int) -> int:
            # Ĉ Ĉᵀ Z from one read of a concept-ordered corpus, all b columns at once: a concept
            # range's rows X_i Z, its concept sums and their gather (no K-row block); the input
            # and the images in the products' dtype when the basis has another
            return 3 * n_max * b * pf + (3 * p * b * pf if pf != basis_bytes else 0)

        if plan.eig_space == "features" and plan.eig_solver == "lobpcg":
            # X, W, P and their images under ĈĈᵀ and A (p × b each), a product's K × cols and row
            # blocks (no CG vectors: nothing is solved); Φ*ᵀ = √θ u
            fb = _pencil_basis_dtype(problem, plan).itemsize
            b = plan.block_size(problem)
            products = (fused(fb) if ordered
                        else cols * f * (2 * p + K + (0 if plan.copies and chunk == 0 else n_max)))
            eig_stage = 9 * p * b * fb + products
            map_stage = 2 * p * r * f + p_max * r * f
            return sparse + chunk + max(eig_stage, map_stage)
        if plan.eig_space == "features":
            # Z, G, Z', G' (p × b each) and a p × b row block or p × 64 temporaries; Φ*ᵀ = Z'y
            eig_stage = (5 * p * b * fb + cols * (per_col - (f * K if ordered else 0)) + cg_padding(cols)
                         + (fused(fb) if ordered else 0))
            phi_stage = p * b * fb + 2 * p * r * f
            map_stage = 2 * p * r * f + p_max * r * f
            return sparse + chunk + max(eig_stage, phi_stage, map_stage)
        basis = 2 * K * plan.basis_factor * b * fb + 2 * K * b * fb + 2 * K * b * f
        eig_stage = basis + cols * per_col + cg_padding(cols) + plan.record_bytes
        phi_cols = min(plan.apply_columns, r)
        phi_stage = plan.record_bytes + 2 * p * r * f + K * r * f + phi_cols * per_col + cg_padding(phi_cols)
        map_stage = 2 * p * r * f + p_max * r * f + K * r * f
        return sparse + chunk + max(eig_stage, phi_stage, map_stage)

    @classmethod
    def choose(cls, problem: "_Problem", *, budget: int | None, reuse_budget: int, eig_tol: float,
               cg_rtol: float, record_inputs: bool = False, eig_space: str = "concepts",
               eig_solver: str = "subspace") -> "_MemoryPlan":
        in_use = current_rss()
        if eig_space == "features":
            reuse_budget = 0           # Φ*ᵀ comes from the last solves: nothing is recorded
        if budget is None:
            # a float32 eigen-solver basis at loose eig_tol: Rayleigh-Ritz stays float64 and the
            # Ritz residuals are good to ~1e-6, far below the tolerance; its products are twice as
            # fast (measured on 5 x 20k Bible verses, r = 100: eigen stage 2.6 -> 1.9 s)
            plan = cls(record_bytes=int(reuse_budget), in_use=in_use, eig_tol=eig_tol, cg_rtol=cg_rtol,
                       copies=not any(isinstance(X, RowSource) for X in problem.blocks.values()),
                       basis_dtype=np.float32 if eig_tol >= 1e-4 else None, eig_space=eig_space,
                       eig_solver=eig_solver)
            plan.estimate = cls.sizes(problem, plan)
            return plan
        # 10% of headroom for what the estimate does not see (allocator, BLAS and numba buffers)
        avail = int(0.9 * (budget - in_use))
        plan = cls(record_bytes=0, budget=budget, in_use=in_use, eig_tol=eig_tol, cg_rtol=cg_rtol,
                   eig_space=eig_space, eig_solver=eig_solver)
        if any(isinstance(X, RowSource) for X in problem.blocks.values()):
            plan.copies = False        # row-partitioned blocks are never copied
        b = _block_size(problem.r, len(problem.classes), eig_space)

        f = problem.dtype.itemsize
        # one recorded block: its solves Z (p x b), and its inputs V (K x b) unless the subspace
        # eigen-solver gives the coefficients of P_r in the applied blocks
        block = b * f * (problem.p + (len(problem.classes) if record_inputs else 0))

        def fits() -> bool:
            return cls.sizes(problem, plan) <= avail

        # the block's columns go through the operator in equal applications of ceil(b / n)
        # columns (no narrow remainder), as few as fit, or the floor where that part would be
        # narrower than it: at K = 485,000 (r = 300, b = 330, one language's block solve of
        # Wikipedia-shaped right-hand sides, 2-core AMD EPYC) two of 165 took 90-98 s, three of
        # 110 104-110 s, 128 + 128 + 74 108-118 s, one of 330 84-88 s
        def part(n: int) -> int:
            return -(-b // n)       # ceil(b / n): the block in n equal applications

        def fewer_columns(floor: int) -> None:
            n = 1
            while not fits() and plan.apply_columns > floor:
                while part(n) >= min(plan.apply_columns, b):     # the next narrower equal part
                    n += 1
                plan.apply_columns = max(floor, part(n))

        def wider_columns() -> None:
            # after a saving that frees memory: the widest equal part that fits now
            narrow, n = plan.apply_columns, 1
            while part(n) > narrow:
                plan.apply_columns = part(n)
                if fits():
                    return
                n += 1
            plan.apply_columns = narrow

        def record_blocks(n: int) -> None:
            plan.record_bytes = int(min(reuse_budget, n * block))

        # savings in order of what they cost in time: a float32 basis (free at loose eig_tol),
        # fewer columns per application down to 128, a smaller basis (more restarts, but only
        # when the eigen-solve needs more than two blocks), then down to 64 columns (measured
        # at K = 485,000, one block CG iteration per column: 48.8 ms at 360 columns, 47.8 ms at
        # 128, 52.1 ms at 64), the recorded solves of the first two, then one eigen-solver
        # blocks (without them Φ costs r more columns of the operator: 655 of 1,948 s at
        # K = 485,000, where the solver converged in one block), the sparse copies (slower
        # products), the float32 block copies (slower CG), then down to 8 columns
        record_blocks(2)
        if not fits() and eig_tol >= 1e-4:
            plan.basis_dtype = np.float32
        if not fits():
            plan.read_bytes = 0          # streamed blocks: one stored chunk per read
        fewer_columns(128)
        if not fits() and eig_solver == "lobpcg":
            # the pencil LOBPCG's nine p × b blocks: guard columns r + max(10, 10 %) instead of
            # 20 % (measured: see _PENCIL_LEAN_GUARD)
            plan.pencil_block = problem.r + max(10, int(np.ceil(_PENCIL_LEAN_GUARD * problem.r)))
        if not fits():
            plan.basis_factor = 2
            wider_columns()
        fewer_columns(64)
        if not fits():
            record_blocks(1)
        if not fits():
            record_blocks(0)
        # float32 block copies only exist for in-memory blocks (a streamed chunk is cast as read,
        # and a float32 CG needs less workspace): nothing to shed without them
        in_memory = any(not isinstance(X, RowSource) for X in problem.blocks.values())
        for attr, value in (("copies", False), ("mixed_precision", False)):
            if not fits() and (attr != "mixed_precision" or in_memory):
                setattr(plan, attr, value)
        fewer_columns(8)
        estimate = cls.sizes(problem, plan)
        if estimate > avail:
            raise _budget_error(problem, budget, in_use, estimate, eig_space)
        # half of what is left keeps more recorded solves, in whole blocks of b columns
        if block:
            record_blocks(plan.record_bytes // block + (avail - estimate) // 2 // block)
        plan.estimate = cls.sizes(problem, plan)
        return plan


def _budget_error(problem: "_Problem", budget: int, in_use: int, estimate: int, eig_space: str) -> MemoryError:
    """The MemoryError of a ``memory_budget`` below the leanest plan: the budget given, what the
    leanest plan needs, and what the user can change. ``min_budget`` (an attribute of the error)
    is the smallest budget that plan fits (the planner keeps 10% of headroom), by which
    :meth:`Cr5._plan_memory` reports the leanest of the plans it tried."""
    need = in_use + int(np.ceil(estimate / 0.9)) + 1
    remedies = [f"raise memory_budget to at least {_gib(need)}"]
    if problem.dtype == np.float64:
        remedies.append("fit with dtype=np.float32 (4-byte blocks and solves)")
    remedies.append(f"fewer n_components (now {problem.r})")
    if any(_source_kind(X) == "memory" for X in problem.blocks.values()):
        remedies.append("give the blocks out of core: a ChunkedCSR (linxling.io.write_chunks; two chunks "
                        "resident) or dask arrays with a Dask client (docs/scale.md)")
    exc = MemoryError(
        f"memory_budget={_gib(budget)} is too small for this Cr5 fit: its leanest plan (the eigen-solve in "
        f"{eig_space} space) needs about {_gib(estimate)} on top of the {_gib(in_use)} this process already "
        f"holds, {_gib(in_use + estimate)} in all (n_concepts={len(problem.classes)}, n_features={problem.p}, nnz={problem.nnz}, "
        f"n_components={problem.r}, dtype={problem.dtype.name}). To fit: " + "; or ".join(remedies) + ".")
    exc.min_budget = need      # type: ignore[attr-defined]
    return exc


def _gib(nbytes: float) -> str:
    """A size for a message: GiB to two decimals, or MiB / bytes where that would read 0.00 GiB."""
    if nbytes >= 2 ** 27:
        return f"{nbytes / 2 ** 30:.2f} GiB"
    return f"{nbytes / 2 ** 20:.1f} MiB" if nbytes >= 2 ** 17 else f"{int(nbytes):,} bytes"


@contextmanager
def _timed(timings: dict, key: str):
    t0 = time.perf_counter()
    try:
        yield
    finally:
        timings[key] = time.perf_counter() - t0
