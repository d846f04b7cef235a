"""Crosslingual latent semantic indexing (CL-LSI), the classical baseline for Cr5.

Dumais et al. (1997) / Littman et al. (1998): concatenate the translations of each concept
into one "bilingual document" and run LSI on the result. With ``L`` languages, language
``l`` having features ``p_l`` and documents ``X_l`` (``n_l x p_l``) tagged with concept ids,
the concept x stacked-vocabulary matrix is

    M = [C_1 X_1, C_2 X_2, ..., C_L X_L]        (K x sum_l p_l)

where ``C_l`` (``K x n_l``) is the 0/1 matrix sending each document to its concept row, so
row ``c`` of ``M`` is the sum of the documents of concept ``c``, each language in its own
column block. The truncated SVD ``M ~ U S V^T`` (rank ``r``) gives a word/feature
projection ``V_l`` (``p_l x r``, the rows of ``V`` for language ``l``). A document ``x`` of
language ``l`` is embedded by ``V_l^T x`` (``scale="none"``, the default: the coordinates
LSI compares documents by, ``U S`` for the training concepts) or by LSI folding-in,
``x -> S^-1 V_l^T x`` (``scale="fold_in"``, the papers' and the default before 0.1).
"""
from __future__ import annotations

import warnings
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from sklearn.utils._param_validation import StrOptions

from linxling._progress import progress
from linxling._validation import check_language_keys, check_random_state, check_same_length, check_sparse_matrix
from linxling._warnings import find_stack_level
from linxling.io import register_model
from linxling.models._base import (
    ConceptEmbeddingMixin,
    check_shared_concepts,
    check_small_concept_data,
    concept_groups,
    encode_concepts,
    rows_times_map,
)
from linxling.models._estimator import NONNEG_INT, POSITIVE_INT, RANDOM_STATE
from linxling.solvers import orthonormalize

__all__ = ["CLLSI"]


def _randomized_svd(M: sp.csr_matrix, k: int, rng: np.random.Generator, n_oversamples: int = 10,
                    n_iter: int = 7, bar: Any = None):
    """Halko-Martinsson-Tropp randomized SVD with orthonormalised power iterations.

    ``bar`` (a progress bar, optional) counts the columns of the products with M and Mᵀ:
    ``(2 n_iter + 2) * ell`` of them (:func:`_randomized_products`)."""
    m, n = M.shape
    ell = min(k + n_oversamples, min(m, n))

    def done() -> None:
        if bar is not None:
            bar.update(ell)
    Q = rng.standard_normal((n, ell))
    Q = orthonormalize(np.asarray(M @ Q))
    done()
    MT = M.T.tocsr()
    for _ in range(n_iter):
        Z = orthonormalize(np.asarray(MT @ Q))
        done()
        Q = orthonormalize(np.asarray(M @ Z))
        done()
    B = np.asarray((MT @ Q).T)  # (ell, n) = Q^T M
    done()
    Ub, s, Vt = np.linalg.svd(B, full_matrices=False)
    return Q @ Ub[:, :k], s[:k], Vt[:k]


def _randomized_products(M: Any, k: int, n_oversamples: int = 10, n_iter: int = 7) -> int:
    """The columns :func:`_randomized_svd` multiplies by M or Mᵀ: the range finder's block of
    ``ell`` columns once, twice per power iteration, and the projection ``QᵀM`` once."""
    return (2 * int(n_iter) + 2) * min(k + n_oversamples, min(M.shape))


class _CountedMatrix(spla.LinearOperator):
    """M as ``scipy.sparse.linalg.svds`` sees it, counting on ``bar`` the columns of every
    product with M or Mᵀ. The products are those of ``aslinearoperator(M)`` (``M.dot(X)``, the
    adjoint that of ``M.T.conj()``), in the same order, so the singular triplets are the same,
    bit for bit (tests/test_cllsi.py); built on SciPy's public ``LinearOperator`` only."""

    def __init__(self, M: Any, bar: Any) -> None:
        super().__init__(M.dtype, M.shape)
        self.A = M
        self._bar = bar
        self._adj: _CountedMatrix | None = None

    def _matmat(self, X: Any) -> Any:
        self._bar.update(X.shape[1] if np.ndim(X) == 2 else 1)
        return self.A.dot(X)

    def _adjoint(self) -> "_CountedMatrix":
        if self._adj is None:
            self._adj = _CountedMatrix(self.A.T.conj(), self._bar)
        return self._adj


def _svds(M: sp.csr_matrix, k: int, rng: np.random.Generator, solver: str, bar: Any = None) -> tuple:
    """``scipy.sparse.linalg.svds`` with PROPACK (``"propack"``, or ``"auto"`` where SciPy offers
    it) or ARPACK (``"arpack"``, or ``"auto"`` where SciPy keeps PROPACK opt-in, where PROPACK
    stops on a matrix of rank < ``k`` or where it does not converge). ``bar`` (a progress bar,
    optional) counts the products with M and Mᵀ (one per vector; neither solver knows ahead
    how many it will take)."""
    A = M if bar is None else _CountedMatrix(M, bar)
    if solver in ("auto", "propack"):
        try:
            U, s, Vt = spla.svds(A, k=k, solver="propack", random_state=rng)
            # on a matrix of rank < k PROPACK may also return, without an error, a repeated
            # singular vector with a made-up nonzero singular value (SciPy 1.17: a rank-1 matrix,
            # k = 2 gives s = [4.24, 2.25] and two equal rows of Vt): not orthonormal, so refused.
            # The vectors of (numerically) zero singular values are arbitrary and zeroed by fit.
            live = s > max(M.shape) * np.finfo(np.float64).eps * (s.max() if s.size else 0.0)
            V = Vt[live]
            gap = float(np.abs(V @ V.T - np.eye(V.shape[0])).max()) if V.shape[0] else 0.0
            if gap <= 1e-6:
                return U, s, Vt
            if solver == "propack":
                raise ValueError(f"solver='propack' returned singular vectors that are not orthonormal "
                                 f"(|VVᵀ - I| = {gap:.2g}): the concept x word matrix has rank < "
                                 f"n_components={k}; lower n_components or use solver='auto' or 'arpack' "
                                 "(which warn and zero the null components)")
        except np.linalg.LinAlgError as exc:
            # (caught before ValueError, its base class) PROPACK's Lanczos stops on a matrix of
            # rank < k ("An invariant subspace of dimension d was found"); ARPACK returns the
            # zero singular values, which fit warns of
            if "invariant subspace" in str(exc):
                if solver == "propack":
                    raise ValueError(f"solver='propack' cannot compute n_components={k} singular triplets: "
                                     f"the concept x word matrix has rank < {k} ({exc}); lower n_components "
                                     "or use solver='auto' or 'arpack' (which warn and zero the null "
                                     "components)") from exc
            elif "did not converge" in str(exc):
                # PROPACK's Lanczos gives up after 10 k steps where the leading singular values lie
                # close together (a flat spectrum: 400 random sentences over 150 words, k = 5);
                # ARPACK's restarts converge there
                if solver == "propack":
                    raise ValueError(f"solver='propack' did not converge to n_components={k} singular "
                                     f"triplets ({exc}); use solver='auto' or 'arpack'") from exc
            else:
                raise
        except ValueError as exc:
            if solver == "propack" or "PROPACK" not in str(exc):
                raise
    v0 = rng.uniform(-1.0, 1.0, size=min(M.shape))
    if bar is not None:
        bar.set_postfix(solver="arpack", refresh=False)
    return spla.svds(A, k=k, v0=v0, random_state=rng)


@register_model("CLLSI")
class CLLSI(ConceptEmbeddingMixin):
    """Crosslingual LSI: truncated SVD of the concept x stacked-vocabulary matrix.

    Parameters
    ----------
    n_components : int, default 300
        Rank ``r`` of the SVD (embedding dimension). Must be < min(K, sum_l p_l). Cr5's default
        rank, so that the two compare at one r as in the Cr5 paper. On a validation split of the
        leaderboard's training verses (3,933 verses, CSLS P@1, the mean of en->X and X->en;
        benchmarks/README.md "The linear models' defaults on validation verses") r = 100 / 200 /
        300 / 400: 0.563 / 0.691 / 0.739 / 0.766 (``scale="fold_in"`` at 300: 0.608): CL-LSI
        gains with r longer than Cr5 does (0.934 at 300); raise it when using CL-LSI for itself.
    random_state : None, int or numpy Generator
        Seeds the PROPACK or ARPACK start vector, or the randomized range finder.
    scale : {"none", "fold_in"}, default "none"
        ``"none"`` embeds ``x`` as ``V_l^T x``: a training concept row maps to its row of
        ``U S``, the coordinates in which LSI compares documents. ``"fold_in"`` embeds it as
        ``S^-1 V_l^T x`` (LSI folding-in, Dumais et al.: a concept row maps to its row of
        ``U``), which gives the weak trailing directions as much weight as the leading ones.
        Chosen on a validation split of the *training* data (the leaderboard's Bible split,
        en/es/ru/ar/zh/vi, 60 training chapters held out again with ``random_state=1``,
        r = 300, 1,000 verses per language, CSLS): en→X verse P@1 0.823 with ``"none"`` against
        0.740 with ``"fold_in"`` (better for every X: es 0.901 / 0.849, ru 0.787 / 0.710, ar
        0.738 / 0.649, zh 0.824 / 0.785, vi 0.865 / 0.709). ``scale="fold_in"`` keeps the
        papers' embedding.
    solver : {"auto", "propack", "arpack", "randomized"}, default "auto"
        ``"propack"`` and ``"arpack"``: ``scipy.sparse.linalg.svds`` with that solver, both to
        machine precision. ``"auto"`` is PROPACK, or ARPACK where SciPy keeps PROPACK opt-in
        (older releases without ``SCIPY_USE_PROPACK`` set), where the matrix has rank below
        ``n_components`` or where PROPACK does not converge (leading singular values close
        together, e.g. a small random corpus at a small ``n_components``). On the leaderboard's Bible matrix
        (27,262 concepts x 81,436 words of 6 languages, 3.1M nonzeros, r = 300; Intel Xeon, 2
        cores, six runs alternating) PROPACK took 15.3-16.4 s against ARPACK's 25.6-26.7 s, with
        the singular values equal to 1e-14 and the singular vectors to 5e-10. ``"randomized"``: a randomized SVD
        (``n_iter`` power iterations), approximate: with 7 its smallest singular values were 3 %
        off there, and it was no faster than PROPACK.
    n_iter : int, default 7
        Power iterations of the randomized solver.
    show_progress : bool or None, default None
        A progress bar over the SVD (None follows :func:`linxling.set_show_progress`; False: no
        bar, the vectorisers' passes over the training texts included). Its unit is the
        honest one the solvers allow: a product of the concept x word matrix M (or Mᵀ) with
        one vector (a block of b vectors counts b), the operation whose count is their cost.
        ``"randomized"`` knows its total ahead (``(2 n_iter + 2)(n_components + 10)``, fewer on
        a matrix smaller than ``n_components + 10``), so its bar fills to 100 %; PROPACK and
        ARPACK iterate until they converge, so their bar counts the products with no total
        (and no percentage) rather than a made-up one. The counting runs SciPy's own products:
        the SVD is the same bit for bit with or without a bar. The vectorisers of :meth:`fit`
        take the same setting.
    min_df, max_features, norm : default 1, 200,000, "l2"
        Settings of each language's :class:`linxling.text.TfidfVectorizer` made by :meth:`fit`,
        as Cr5's. ``min_df`` 1 against 3 (the Cr5 paper's) on the validation verses of
        :class:`linxling.Cr5` (CSLS P@1): 0.637 / 0.559 trained on 1,000 verses, 0.712 / 0.682
        on 3,000, 0.744 / 0.739 on all 23,329 (``python -m benchmarks.concept_defaults --model
        CLLSI --grid min_df [--sizes ...]``). A word is kept if it occurs in at least
        ``min_df`` documents, at most ``max_features`` words per language (most frequent
        first), rows L2-normalised (None: raw tf-idf). Other vectoriser options go to
        ``fit(..., vectorizer_params=)``.
    sublinear_tf : bool, default True
        Term frequencies ``1 + ln(count)`` (True, the default since 2026-12-01, as Cr5's) or raw
        counts (False, the papers'). On the validation verses above (CSLS P@1, the mean of ten
        directions): 0.799 against 0.744 for raw counts trained on all 23,329 verses, 0.768
        against 0.712 on 3,000, up in every direction at both, in the same time (a scratch run
        of ``benchmarks.concept_defaults``' split and score, ``random_state=0``; benchmarks/
        README.md "Sublinear term frequency"); fitted on the training chapters (long documents)
        0.841 against 0.692 (``--unit chapter``). The baseline takes the same input weighting as
        Cr5, so that the comparison of the two is of the methods, not of their inputs.

    Attributes (after fitting)
    --------------------------
    languages_ : list of str
        In the order of ``blocks`` (the order of the stacked vocabulary).
    components_ : dict str -> ndarray (r, p_l)
        ``V_l^T``: row ``k`` is the ``k``-th right singular vector restricted to language ``l``.
    singular_values_ : ndarray (r,), descending
    classes_ : list
        The concept ids, in the row order of ``M``.
    n_features_ : dict str -> int
    vectorizers_ : dict str -> TfidfVectorizer (only after :meth:`fit` on texts)
    """

    def __init__(self, n_components: int = 300, random_state: Any = None, scale: str = "none",
                 solver: str = "auto", n_iter: int = 7, min_df: int = 1,
                 max_features: int | None = 200_000, norm: str | None = "l2",
                 sublinear_tf: bool = True, show_progress: bool | None = None) -> None:
        self.n_components = n_components
        self.random_state = random_state
        self.scale = scale
        self.solver = solver
        self.n_iter = n_iter
        self.min_df = min_df
        self.max_features = max_features
        self.norm = norm
        self.sublinear_tf = sublinear_tf
        self.show_progress = show_progress

    #: checked at the start of every fit (:meth:`LinxlingEstimator._validate_declared_params`)
    #: added 2026-12-01: models saved or pickled before were fitted on raw counts
    _added_params: dict[str, Any] = {"sublinear_tf": False}

    _parameter_constraints: dict[str, list[Any]] = {
        "n_components": [POSITIVE_INT],
        "random_state": RANDOM_STATE,
        "scale": [StrOptions({"fold_in", "none"})],
        "solver": [StrOptions({"auto", "propack", "arpack", "randomized"})],
        "n_iter": [NONNEG_INT],
        "min_df": [POSITIVE_INT],
        "max_features": [POSITIVE_INT, None],
        "norm": [StrOptions({"l2"}), None],
        "sublinear_tf": ["boolean"],
        "show_progress": ["boolean", None],
    }

    # ------------------------------------------------------------------ fitting
    def fit_matrices(self, blocks: Mapping[str, Any], concepts: Mapping[str, Any]) -> "CLLSI":
        """Fit from feature matrices.

        Parameters
        ----------
        blocks : mapping language -> sparse or dense matrix (n_l, p_l)
            Document features of each language (e.g. TF-IDF rows).
        concepts : mapping language -> sequence of n_l hashable concept ids
            Documents with the same id (in any language) describe the same concept.
        """
        if not isinstance(blocks, Mapping) or not isinstance(concepts, Mapping):
            raise TypeError("blocks and concepts must be mappings language -> matrix / concept ids")
        if not blocks:
            raise ValueError("blocks is empty: give at least one language")
        langs = check_language_keys(blocks, "blocks")
        if set(concepts) != set(langs):
            raise ValueError(f"blocks and concepts must have the same languages, got "
                             f"{sorted(map(str, blocks))} and {sorted(map(str, concepts))}")
        mats = {}
        for lang in langs:
            mats[lang] = check_sparse_matrix(blocks[lang], f"blocks[{lang!r}]")
            if not np.any(mats[lang].data):
                # as Cr5.fit_matrices: every document of the language would embed as zero
                raise ValueError(f"blocks[{lang!r}] is all zero: there is nothing to fit")
            check_same_length(concepts[lang], range(mats[lang].shape[0]), f"concepts[{lang!r}]",
                              f"the rows of blocks[{lang!r}]")
        labels, classes = encode_concepts(concepts, langs)
        K = len(classes)
        check_shared_concepts([labels[lang] for lang in langs], K)
        P = sum(m.shape[1] for m in mats.values())
        r = self.n_components
        if r >= min(K, P):
            raise ValueError(f"n_components={r} must be < min(n_concepts, n_features) with "
                             f"n_concepts={K}, n_features={P} (over all languages)")
        check_small_concept_data("CLLSI", r, mats, [labels[lang] for lang in langs], K)
        parts = []
        for lang in langs:
            X = mats[lang]
            rows = labels[lang]
            C = sp.csr_matrix((np.ones(len(rows)), (rows, np.arange(len(rows)))), shape=(K, X.shape[0]))
            parts.append(C @ X.astype(np.float64))
        M = sp.hstack(parts, format="csr")
        rng = check_random_state(self.random_state)
        randomized = self.solver == "randomized"
        # the bar counts products with M or Mᵀ (see show_progress); it closes however the SVD ends
        with progress(total=_randomized_products(M, r, n_iter=self.n_iter) if randomized else None,
                      show=self.show_progress, unit=" matvec",
                      desc=f"CL-LSI SVD ({self.solver}): products with M, Mᵀ") as bar:
            count = None if bar.disable else bar       # no bar: SciPy's own operator, as before
            if randomized:
                U, s, Vt = _randomized_svd(M, r, rng, n_iter=self.n_iter, bar=count)
            else:
                U, s, Vt = _svds(M, r, rng, self.solver, bar=count)
        order = np.argsort(s)[::-1]
        U, s, Vt = U[:, order], s[order], Vt[order]
        # sign convention: the largest-magnitude entry of each right singular vector is positive
        big = np.argmax(np.abs(Vt), axis=1)
        signs = np.sign(Vt[np.arange(r), big])
        signs[signs == 0] = 1.0
        Vt *= signs[:, None]
        tol = max(M.shape) * np.finfo(np.float64).eps * (s[0] if s.size else 0.0)
        null = s <= tol
        n_null = int(np.sum(null))
        if n_null:
            # the solvers return arbitrary unit vectors there (ARPACK and PROPACK different ones):
            # zero them, so that those coordinates are 0 with either scale, as the warning says
            Vt[null] = 0.0
            warnings.warn(f"CLLSI: {n_null} of {r} singular values are (numerically) zero; the matrix "
                          f"has rank < n_components. Those components are set to zero on transform.",
                          RuntimeWarning, stacklevel=find_stack_level())
        self.__dict__.pop("vectorizers_", None)     # an earlier text fit's (fit sets this fit's after this call)
        self.languages_ = langs
        self.n_features_ = {lang: mats[lang].shape[1] for lang in langs}
        offsets = np.cumsum([0] + [self.n_features_[lang] for lang in langs])
        self.components_ = {lang: np.ascontiguousarray(Vt[:, offsets[i]:offsets[i + 1]])
                            for i, lang in enumerate(langs)}
        self.singular_values_ = np.ascontiguousarray(s)
        self.classes_ = classes
        self.n_concepts_ = K
        return self

    def fit(self, texts: Mapping[str, Sequence[str]] | Sequence[str], languages: Sequence[str] | None = None,
            concepts: Mapping[str, Sequence[Hashable]] | Sequence[Hashable] | None = None,
            vectorizer_params: Mapping[str, Any] | None = None) -> "CLLSI":
        """Fit from raw documents: one :class:`linxling.text.TfidfVectorizer` per language.

        ``fit({"en": en_texts, "de": de_texts})`` fits on row-aligned texts (row i of every
        language is concept i); ``fit({"en": en_texts, "de": de_texts}, concepts={"en": en_ids,
        "de": de_ids})`` on partially aligned ones; ``fit(texts, languages, concepts)`` on three
        parallel flat sequences (e.g. from
        :meth:`linxling.datasets.BibleCorpus.concept_documents`). A mapping is the same fit as
        the sequences of its languages concatenated in the mapping's order (the flat form takes
        languages in the order first seen): the same model, bit for bit, as in :meth:`linxling.Cr5.fit`.

        Parameters
        ----------
        texts : mapping language -> sequence of str, or sequence of str
            Training documents. A mapping ``{language: texts}``: each language's documents;
            without ``concepts`` every language has the same number n of documents and row i of
            each is concept i (``classes_`` is ``[0, ..., n - 1]``). A flat sequence: the
            documents of every language, with ``languages`` and ``concepts`` (required then).
        languages : sequence of str, optional
            With a flat ``texts``: the language code of each document. Not given with a mapping,
            whose keys are the languages.
        concepts : mapping language -> sequence of hashable, or sequence of hashable, optional
            Concept ids (documents with the same id, in any language, describe the same
            concept). With a mapping ``texts``: a mapping with the same languages, one id per
            document of each; left out, the languages are row-aligned. With a flat ``texts``:
            one id per document.
        vectorizer_params : mapping or None, default None
            Every language's vectoriser takes the model's ``min_df``, ``max_features``, ``norm``
            and ``sublinear_tf``; this adds its other options (``tokenizer``, ``smooth_idf``,
            ...). Giving one of those four here, as before they were parameters, still works (it
            wins) with a FutureWarning.

        Returns
        -------
        self : CLLSI

        Raises
        ------
        TypeError
            For ``languages`` given with a mapping, ``languages`` or ``concepts`` missing with a
            flat ``texts``, a language key that is not a str, or a document that is not a str.
        ValueError
            For row-aligned languages of different lengths, ``concepts`` whose languages or
            lengths differ from those of ``texts``, or an empty language.
        """
        from linxling.text import TfidfVectorizer

        texts, concepts, by_lang = concept_groups(texts, languages, concepts, "CLLSI")
        given = dict(vectorizer_params or {})
        moved = sorted(set(given) & {"min_df", "max_features", "norm", "sublinear_tf"})
        if moved:
            warnings.warn(f"vectorizer_params={{{', '.join(repr(k) + ': ...' for k in moved)}}}: give "
                          f"{', '.join(moved)} to CLLSI(...) instead (a model parameter since 0.2, kept by "
                          "get_params and save); vectorizer_params for them goes in the next release",
                          FutureWarning, stacklevel=find_stack_level())
        params = {"min_df": self.min_df, "max_features": self.max_features, "norm": self.norm,
                  "sublinear_tf": bool(self.sublinear_tf), "show_progress": self.show_progress, **given}
        vectorizers, blocks, ids = {}, {}, {}
        for lang, idx in by_lang.items():
            vec = TfidfVectorizer(**params)
            try:
                blocks[lang] = vec.fit_transform([texts[i] for i in idx])
            except ValueError as exc:          # as Cr5: say which language
                raise ValueError(f"language {lang!r} ({len(idx)} documents): {exc}") from None
            ids[lang] = [concepts[i] for i in idx]
            vectorizers[lang] = vec
        self.fit_matrices(blocks, ids)
        self.vectorizers_ = vectorizers
        return self

    # ------------------------------------------------------------------ embedding
    def _inverse_scale(self) -> np.ndarray:
        s = self.singular_values_
        if self.scale == "none":
            return np.ones_like(s)
        tol = max(1, s.size) * np.finfo(np.float64).eps * (s[0] if s.size else 0.0)
        inv = np.zeros_like(s)
        np.divide(1.0, s, out=inv, where=s > tol)
        return inv

    def projection(self, language: str) -> np.ndarray:
        """The feature projection of ``language``, shape (p_l, r): ``V_l S^-1`` or ``V_l``."""
        self._check_language(language)
        return self.components_[language].T * self._inverse_scale()[None, :]

    def _embed_matrix(self, X: Any, language: str) -> np.ndarray:
        """``S⁻¹ V_lᵀ x`` (``scale="fold_in"``) or ``V_lᵀ x`` of checked feature rows."""
        Z = np.asarray(rows_times_map(X, self.components_[language]), dtype=np.float64)
        return Z * self._inverse_scale()[None, :]

    # ------------------------------------------------------------------ store
    def _get_state(self):
        self._check_fitted()
        params = self._params_state()
        params["n_concepts"] = int(self.n_concepts_)
        arrays = self._shared_state(params)
        return params, arrays

    @classmethod
    def _from_state(cls, params, arrays):
        model = cls._from_params_state(params)
        model._restore_shared(params, arrays)
        model.n_concepts_ = int(params.get("n_concepts", len(model.classes_)))
        return model
