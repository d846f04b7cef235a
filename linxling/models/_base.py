"""What the concept-aligned estimators (Cr5, CL-LSI) share: checks, text input, the store."""
from __future__ import annotations

import json
import warnings
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import scipy.sparse as sp

from linxling._sparse import renumbered, used_columns
from linxling._validation import (
    check_language,
    check_language_keys,
    check_same_length,
    check_sparse_matrix,
    check_texts,
    is_text_column,
    refuse_non_texts,
    unknown_language,
)
from linxling._warnings import find_stack_level
from linxling.models._estimator import LinxlingEstimator, as_output, warn_no_known_words, warn_repeated_texts
from linxling.text._vectorize import check_unicode

__all__ = ["ConceptEmbeddingMixin", "as_concept_list", "check_shared_concepts", "check_small_concept_data",
           "classes_from_state",
           "classes_state", "concept_groups", "concept_inputs", "encode_concepts", "group_by_language",
           "nested_state", "rows_times_map",
           "stored_float", "stored_languages", "stored_word_table", "stored_words", "check_vectorizer_width",
           "vectorizers_state",
           "vectorizers_from_state", "vectorizer_from_state", "vectorizer_state"]


def as_concept_list(ids: Any, name: str) -> list:
    """Concept ids as a list of hashables (rows of a 2-D array become tuples)."""
    if isinstance(ids, str):
        raise TypeError(f"{name} must be a sequence of concept ids, not a single str")
    if isinstance(ids, np.ndarray):
        if ids.ndim == 2:
            return [tuple(row) for row in ids.tolist()]
        if ids.ndim != 1:
            raise ValueError(f"{name} must be 1-D (one concept id per document), got shape {ids.shape}")
        return ids.tolist()
    module = type(ids).__module__ or ""
    if module == "dask" or module.startswith(("dask.", "dask_expr")):
        # list() made one dask scalar per id (slow for many), then "... is not hashable"
        raise TypeError(f"{name} is a dask collection ({module}.{type(ids).__qualname__}); the concept ids "
                        f"are read on this machine even for a fit on a Dask cluster: give them in memory, "
                        f"e.g. {name}.compute()")
    out = list(ids)
    for i, c in enumerate(out):
        if not isinstance(c, Hashable):
            raise TypeError(f"{name}[{i}] = {c!r} is not hashable; concept ids must be hashable")
    return out


def _id_kind(c: Any) -> Any:
    """The type of a concept id as far as equality goes (``1``, ``np.int64(1)`` alike; not ``"1"``)."""
    if isinstance(c, (bool, np.bool_)):
        return "bool"
    if isinstance(c, (int, np.integer)):
        return "int"
    if isinstance(c, (str, np.str_)):
        return "str"
    if isinstance(c, (float, np.floating)):
        return "float"
    if isinstance(c, tuple):
        return ("tuple", tuple(_id_kind(x) for x in c))
    return type(c).__qualname__


def _kind_name(kind: Any) -> str:
    if isinstance(kind, tuple):
        return "tuple of (" + ", ".join(_kind_name(k) for k in kind[1]) + ")"
    return kind


def _plain(c: Any) -> Any:
    """NumPy scalars as Python values (tuples element-wise), so ``classes_`` holds Python objects."""
    if isinstance(c, np.generic):
        return c.item()
    if isinstance(c, tuple):
        return tuple(_plain(x) for x in c)
    return c


def _encode_integer_arrays(concepts: Mapping[str, Any], languages: Sequence[str]):
    """:func:`encode_concepts` when every language's ids are a non-empty 1-D integer array of one
    common integer type (the usual case), without a Python loop over the ids; ``None`` otherwise.

    The labels are those of the general path: a language's new ids numbered in increasing order
    after the ids of the languages before it."""
    arrays = [concepts[lang] for lang in languages]
    if not arrays or not all(isinstance(a, np.ndarray) and a.ndim == 1 and a.dtype.kind in "iu" and a.size
                             for a in arrays):
        return None
    common = np.result_type(*arrays)
    if common.kind not in "iu":              # int64 with uint64 would promote to float64
        return None
    arrays = [a.astype(common, copy=False) for a in arrays]
    lo = min(a.min() for a in arrays)
    span = int(max(a.max() for a in arrays)) - int(lo) + 1
    if span <= 4 * sum(a.size for a in arrays) + 1024:
        return _encode_dense_ids(arrays, languages, lo, span)
    uniqs, invs = zip(*(np.unique(a, return_inverse=True) for a in arrays), strict=True)
    cat = np.concatenate(uniqs)
    lang_of = np.repeat(np.arange(len(arrays)), [len(u) for u in uniqs])
    distinct, first_at = np.unique(cat, return_index=True)     # first_at: in the first language holding it
    order = np.lexsort((distinct, lang_of[first_at]))          # by first language, then by value
    label_of = np.empty(len(distinct), dtype=np.int64)
    label_of[order] = np.arange(len(distinct), dtype=np.int64)
    labels = {lang: label_of[np.searchsorted(distinct, u)][inv.ravel()]
              for lang, u, inv in zip(languages, uniqs, invs, strict=True)}
    return labels, distinct[order].tolist()


def _encode_dense_ids(arrays: Sequence[np.ndarray], languages: Sequence[str], lo, span: int):
    """:func:`_encode_integer_arrays` for ids within a range of ``span`` values from ``lo`` (at
    most a few per document): a table from id to label replaces the sorts, and only a language's
    ids not seen before are sorted (none after the first language when the languages share their
    concepts, as verse-aligned corpora do). The same labels and classes."""
    wide = np.uint64 if arrays[0].dtype.kind == "u" else np.int64     # no overflow in ``a - lo``
    lo = wide(lo)
    table = np.full(span, -1, dtype=np.int64)
    labels = {}
    found = []
    n_classes = 0
    for lang, a in zip(languages, arrays, strict=True):
        pos = (a.astype(wide, copy=False) - lo).astype(np.intp, copy=False)
        lab = table[pos]
        new_at = lab < 0
        if new_at.any():
            new = np.unique(pos[new_at])
            table[new] = np.arange(n_classes, n_classes + new.size)
            n_classes += new.size
            found.append(new)
            lab = table[pos]
        labels[lang] = lab
    return labels, (np.concatenate(found).astype(wide) + lo).tolist()


def encode_concepts(concepts: Mapping[str, Any], languages: Sequence[str]):
    """Map hashable concept ids to integer labels 0..K-1, refusing ids that would merge or split.

    All ids must have one type (``int``, ``str``, ``float``, ``bool``, a tuple of these with the
    same element types, ...): with mixed types ``1`` and ``"1"`` would silently become two
    concepts. ``None`` is not an id.

    Parameters
    ----------
    concepts : mapping language -> sequence of length n_l of hashable concept ids
    languages : order of the languages

    Returns
    -------
    labels : dict language -> int64 array (n_l,)
    classes : list of the K distinct concept ids (Python values), in first-seen order (for
        integer arrays, each language's new ids in increasing order)

    Raises
    ------
    TypeError
        For ``None``, an unhashable id, or ids of more than one type.
    """
    fast = _encode_integer_arrays(concepts, languages)
    if fast is not None:
        return fast
    index: dict[Hashable, int] = {}
    labels = {}
    first: tuple | None = None              # (kind, example, where) of the first id seen
    for lang in languages:
        ids = concepts[lang]
        if isinstance(ids, np.ndarray) and ids.ndim == 1 and ids.dtype.kind in "iu" and ids.size:
            # fast path for integer arrays: one kind, no None possible
            if first is None:
                first = ("int", ids[0].item(), f"concepts[{lang!r}][0]")
            elif first[0] != "int":
                raise _mixed_error(first, "int", ids[0].item(), f"concepts[{lang!r}][0]")
            uniq, inv = np.unique(ids, return_inverse=True)
            remap = np.empty(len(uniq), dtype=np.int64)
            for j, u in enumerate(uniq.tolist()):
                remap[j] = index.setdefault(u, len(index))
            labels[lang] = remap[inv.ravel()]
            continue
        ids = as_concept_list(ids, f"concepts[{lang!r}]")
        out = np.empty(len(ids), dtype=np.int64)
        for i, c in enumerate(ids):
            if c is None:
                raise TypeError(f"concepts[{lang!r}][{i}] is None: every document needs a concept id")
            if isinstance(c, (float, np.floating)) and c != c:
                raise ValueError(f"concepts[{lang!r}][{i}] is NaN: NaN is not equal to itself, so every NaN "
                                 "would be a concept of its own; give a real id (or drop the document)")
            kind = _id_kind(c)
            if first is None:
                first = (kind, c, f"concepts[{lang!r}][{i}]")
            elif kind != first[0]:
                raise _mixed_error(first, kind, c, f"concepts[{lang!r}][{i}]")
            out[i] = index.setdefault(_plain(c), len(index))
        labels[lang] = out
    return labels, list(index)


def check_shared_concepts(labels: Sequence[Any], n_classes: int) -> int:
    """The number of concepts with documents in two or more languages; a ValueError when there
    are several languages and none is shared (nothing would tie the languages together).

    ``labels`` holds one integer label array per language (:func:`encode_concepts`), ``n_classes``
    the number of distinct concepts. One language alone is a legitimate (monolingual) fit."""
    seen = np.zeros(n_classes, dtype=np.int64)
    for lab in labels:
        present = np.zeros(n_classes, dtype=bool)
        present[np.asarray(lab, dtype=np.int64)] = True
        seen += present
    shared = int(np.count_nonzero(seen >= 2))
    if len(labels) > 1 and shared == 0:
        raise ValueError("no concept has documents in two languages, so nothing ties the languages "
                         "together (the embeddings would not be crosslingual); check that the concept ids "
                         "of aligned documents are equal across languages")
    return shared


def check_small_concept_data(model: str, r: int, blocks: Mapping[str, Any], labels: list, n_classes: int) -> None:
    """What small or badly linked data would make a bad concept model (Cr5, CL-LSI) in silence:
    no concept shared by two languages (an error: nothing ties the languages together), fewer
    shared concepts than components, more components than a language has words, or a language
    whose documents are fewer distinct texts than components (warnings naming the remedy)."""
    shared = check_shared_concepts(labels, n_classes)
    if len(blocks) > 1 and shared < r:
        warnings.warn(f"{model}: only {shared} concepts have documents in more than one language, fewer than "
                      f"n_components={r}: at most {shared} components can be crosslingual; lower "
                      f"n_components or add aligned documents", UserWarning, stacklevel=find_stack_level())
    widths = {lang: X.shape[1] for lang, X in blocks.items()}
    small = {lang: p for lang, p in widths.items() if p < r}
    if small:
        lang, p = min(small.items(), key=lambda kv: kv[1])
        warnings.warn(f"{model}: n_components={r} exceeds the vocabulary of {lang!r} ({p} features after the "
                      f"filters): at most {p} components can reach its documents, the others embed them as "
                      f"zero and the eigen-solve may not converge; use n_components <= {p} (or lower min_df)",
                      UserWarning, stacklevel=find_stack_level())
    for lang, X in blocks.items():
        warn_repeated_texts(model, r, X, repr(lang), "documents")


def _mixed_error(first: tuple, kind: Any, value: Any, where: str) -> TypeError:
    return TypeError(f"concept ids must all have one type: {where} = {value!r} is "
                     f"{_kind_name(kind)}, but {first[2]} = {first[1]!r} is {_kind_name(first[0])} "
                     "(ids of different types never match: 1 and '1' would be two concepts)")


def classes_state(classes: list) -> tuple[str, np.ndarray]:
    """Store form of concept ids that keeps their type: ``(kind, array)``.

    Raises ``TypeError`` (at save time) for id types the store cannot keep.
    """
    kind = _id_kind(classes[0]) if classes else "int"
    if kind in ("int", "float", "bool", "str"):
        dtype = {"int": np.int64, "float": np.float64, "bool": np.bool_, "str": object}[kind]
        return kind, np.asarray(classes, dtype=dtype)
    if isinstance(kind, tuple) and all(k in ("int", "float", "bool", "str") for k in kind[1]):
        # one column per tuple position, each with its own type, as strings of JSON scalars
        return "tuple", np.asarray([json.dumps(list(c)) for c in classes], dtype=object)
    raise TypeError(f"concept ids of type {_kind_name(kind)} cannot be stored: the model store keeps "
                    "int, float, bool and str ids and tuples of these")


def classes_from_state(kind: str | None, arr: np.ndarray, legacy_repr: bool = False) -> list:
    """Inverse of :func:`classes_state` (files without a kind hold ints, floats or strs)."""
    if kind == "tuple":
        return [tuple(json.loads(s)) for s in arr.tolist()]
    if kind == "str" or legacy_repr:
        return [str(s) for s in arr.tolist()]
    return np.asarray(arr).tolist()


def group_by_language(texts: Any, languages: Any, concepts: Any, *, texts_checked: bool = False
                      ) -> tuple[list[str], list, dict[str, list[int]]]:
    """Validate three parallel sequences and group document indices by language.

    ``texts_checked``: every text is already known to be a str without a lone surrogate (the
    mapping form of :func:`concept_groups` checked each, naming it ``texts['de'][3]``), so the
    pass over every text is not made again.

    Returns
    -------
    texts : list of str
    concepts : list of hashable
    by_lang : dict language -> list of int (indices into texts), in first-seen language order
    """
    for name, seq in (("texts", texts), ("languages", languages), ("concepts", concepts)):
        if isinstance(seq, str):
            raise TypeError(f"{name} must be a sequence, not a single str")
    for name, seq in (("texts", texts), ("languages", languages)):
        if isinstance(seq, Mapping):                # iterated, a mapping gives its keys
            raise TypeError(f"{name} must be a sequence (one entry per document), got a {type(seq).__name__}: "
                            "fit(texts, languages, concepts) takes three parallel sequences, e.g. "
                            "texts = en_texts + de_texts, languages = ['en'] * len(en_texts) + ['de'] * "
                            "len(de_texts)")
    texts, languages = list(texts), list(languages)
    concepts = as_concept_list(concepts, "concepts")
    check_same_length(texts, languages, "texts", "languages")
    check_same_length(texts, concepts, "texts", "concepts")
    if not texts:
        raise ValueError("texts is empty: nothing to fit")
    for i, text in enumerate(() if texts_checked else texts):   # indices in the user's sequence
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] is {type(text).__name__}, expected str")
        check_unicode(i, text, "texts")
    by_lang: dict[str, list[int]] = {}
    for i, lang in enumerate(languages):
        if not isinstance(lang, str):
            raise TypeError(f"languages[{i}] must be a str language code, got {type(lang).__name__}")
        if lang not in by_lang:
            if not lang.strip():
                raise ValueError(f"languages[{i}] is {lang!r}: a language code must be a non-empty str "
                                 "(as every model's fit requires)")
            if any(c.isspace() for c in lang.strip()):
                short = lang if len(lang) <= 40 else lang[:40] + "..."
                raise ValueError(f"languages[{i}] is {short!r}: a language code has no spaces (e.g. 'en'); "
                                 "were texts and languages swapped? fit(texts, languages, concepts)")
        by_lang.setdefault(lang, []).append(i)
    return texts, concepts, by_lang


def concept_groups(texts: Any, languages: Any, concepts: Any, model: str
                   ) -> tuple[list[str], list, dict[str, list[int]]]:
    """A concept model's ``fit`` input (Cr5, CL-LSI) in any of its forms, checked and grouped as
    :func:`group_by_language` returns it; ``model`` names the model in errors. Each text is
    checked once (by the mapping form, naming ``texts['de'][3]``, or by
    :func:`group_by_language`)."""
    mapping = isinstance(texts, Mapping)
    texts, languages, concepts = concept_inputs(texts, languages, concepts, model)
    return group_by_language(texts, languages, concepts, texts_checked=mapping)


def concept_inputs(texts: Any, languages: Any, concepts: Any, model: str) -> tuple[Any, Any, Any]:
    """The three parallel sequences ``(texts, languages, concepts)`` of a concept model's ``fit``
    (Cr5, CL-LSI) from any of its forms; ``model`` names the model in errors.

    - ``fit(texts, languages, concepts)``: returned as given (:func:`group_by_language` checks
      them); both ``languages`` and ``concepts`` are required.
    - ``fit({language: texts})``: row-aligned texts, every language the same length; row ``i``
      of every language is concept ``i`` (the ids are ``0 .. n - 1``).
    - ``fit({language: texts}, concepts={language: ids})``: each language's own concept ids,
      one per document (partially aligned corpora).

    A mapping becomes the sequences of its languages concatenated in the mapping's order, and
    :func:`group_by_language` orders languages as first seen: a fit from a mapping is the fit
    from that concatenation, bit for bit. Errors name the user's argument (``texts['de'][3]``).
    """
    if isinstance(texts, Mapping):
        if languages is not None:
            hint = (" (a mapping of concept ids goes to concepts=, by name)" if isinstance(languages, Mapping)
                    else "")
            raise TypeError(f"{model}.fit: languages is given, but texts is a mapping {{language: texts}} whose "
                            f"keys are the languages: leave languages out{hint}")
        return _concept_sequences(texts, concepts, model)
    if isinstance(concepts, Mapping) and not isinstance(texts, str):
        raise TypeError(f"{model}.fit: concepts is a mapping {{language: concept ids}}, which goes with texts as "
                        "a mapping {language: texts}: fit(texts_by_language, concepts=ids_by_language); "
                        "with a flat sequence of texts give one concept id per document")
    if languages is None or concepts is None:
        missing = " and ".join(n for n, v in (("languages", languages), ("concepts", concepts)) if v is None)
        raise TypeError(f"{model}.fit: {missing} missing. Give either three parallel sequences, "
                        "fit(texts, languages, concepts) (one language code and one concept id per document), "
                        "or a mapping of row-aligned texts, fit({'en': en_texts, 'de': de_texts}) (row i of "
                        "every language is concept i), with concepts={language: concept ids} when the "
                        "languages are only partially aligned")
    return texts, languages, concepts


def _concept_sequences(texts: Mapping, concepts: Any, model: str) -> tuple[list, list, list]:
    """:func:`concept_inputs` for ``texts`` a mapping ``language -> texts``."""
    langs = check_language_keys(texts, "texts")
    if not langs:
        raise ValueError("texts is empty: give at least one language, e.g. {'en': en_texts, 'de': de_texts}")
    for lang in langs:
        if any(c.isspace() for c in lang.strip()):
            short = lang if len(lang) <= 40 else lang[:40] + "..."
            raise ValueError(f"texts has the language key {short!r}: a language code has no spaces (e.g. 'en')")
    docs = {}
    for lang in langs:
        name = f"texts[{lang!r}]"
        docs[lang] = check_texts(texts[lang], name)
        if not docs[lang]:
            raise ValueError(f"{name} is empty: every language given needs documents (leave the language out)")
        for i, text in enumerate(docs[lang]):
            check_unicode(i, text, name)
    if concepts is None:
        lengths = {lang: len(d) for lang, d in docs.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"{model}.fit: without concepts the languages of texts are row-aligned (row i of every "
                             "language is concept i) and must have the same length, got "
                             + ", ".join(f"{lang!r}: {n}" for lang, n in lengths.items())
                             + "; for partially aligned texts give each language's concept ids as "
                             "concepts={language: ids}")
        n = len(docs[langs[0]])
        ids = {lang: list(range(n)) for lang in langs}
    elif not isinstance(concepts, Mapping):
        raise TypeError(f"{model}.fit: texts is a mapping {{language: texts}}, so concepts must be a mapping "
                        f"{{language: concept ids}} with the same languages (or left out for row-aligned "
                        f"texts), got a {type(concepts).__name__}")
    else:
        missing = [lang for lang in langs if lang not in concepts]
        extra = [lang for lang in concepts if lang not in texts]
        if missing or extra:
            raise ValueError(f"texts and concepts must have the same languages; only in texts: {missing}, "
                             f"only in concepts: {extra}")
        ids = {}
        for lang in langs:
            ids[lang] = as_concept_list(concepts[lang], f"concepts[{lang!r}]")
            if len(ids[lang]) != len(docs[lang]):
                raise ValueError(f"concepts[{lang!r}] has {len(ids[lang])} concept ids but texts[{lang!r}] has "
                                 f"{len(docs[lang])} documents: one concept id per document")
    flat_texts: list[str] = []
    flat_langs: list[str] = []
    flat_ids: list = []
    for lang in langs:
        flat_texts += docs[lang]
        flat_langs += [lang] * len(docs[lang])
        flat_ids += ids[lang]
    return flat_texts, flat_langs, flat_ids


def vectorizer_state(vec) -> tuple[Any, Any]:
    """Store state (params, arrays) of one vectoriser; ``(None, None)`` when there is none."""
    return (None, None) if vec is None else vec.get_state()


def vectorizers_state(vectorizers: dict) -> tuple[dict, dict]:
    """Store state of per-language vectorisers: (params language -> dict, arrays language -> dict)."""
    params, arrays = {}, {}
    for lang, vec in vectorizers.items():
        params[lang], arrays[lang] = vectorizer_state(vec)
    return params, arrays


def vectorizer_from_state(params: dict | None, arrays: dict | None):
    """One vectoriser from its store state (``None`` when there was none)."""
    if params is None:
        return None
    from linxling.text import TfidfVectorizer
    return TfidfVectorizer.from_state(params, arrays or {})


def vectorizers_from_state(params: dict | None, arrays: dict | None) -> dict:
    """Inverse of :func:`vectorizers_state`."""
    return {lang: vectorizer_from_state(vp, (arrays or {})[lang]) for lang, vp in (params or {}).items()}


# --------------------------------------------------------------------------- checks at load time
# A model file whose arrays disagree with each other (crafted, or assembled from two models, with
# its checksum recomputed) is refused by the model's ``_from_state`` with a ValueError naming the
# dataset, which the store reports as a ModelFormatError naming the file; loaded, it failed later
# in transform (an IndexError, a shape error deep in a kernel) or gave word lists of the wrong
# length.

def _all_finite(arr: np.ndarray) -> bool:
    """Whether every value of a float array is finite, without a temporary of its size: the sum
    of finite values is finite unless it overflows, which the exact (blockwise) check then rules
    on."""
    if arr.size == 0 or np.isfinite(np.add.reduce(arr, axis=None, dtype=np.float64)):
        return True
    flat = arr.reshape(-1)
    step = 1 << 20
    return all(np.isfinite(flat[i:i + step]).all() for i in range(0, flat.size, step))


def stored_float(value: Any, name: str, ndim: int, *, finite: bool = True) -> np.ndarray:
    """A float32/float64 array of ``ndim`` dimensions (finite, by default) read from a model
    file, else a ValueError naming ``arrays/<name>``."""
    arr = np.asarray(value)
    if arr.dtype not in (np.float32, np.float64):
        raise ValueError(f"arrays/{name} has dtype {arr.dtype}; the model stores float32 or float64 values there")
    if arr.ndim != ndim:
        raise ValueError(f"arrays/{name} has shape {arr.shape}; the model stores a {ndim}-D array there")
    if finite and not _all_finite(arr):
        raise ValueError(f"arrays/{name} holds NaN or infinite values")
    return arr


def stored_languages(value: Any) -> list[str]:
    """The ``languages`` a model file's params list: a non-empty list of distinct str, else a
    ValueError."""
    if (not isinstance(value, list) or not value or not all(isinstance(x, str) and x for x in value)
            or len(set(value)) != len(value)):
        short = repr(value) if len(repr(value)) <= 80 else repr(value)[:80] + "..."
        raise ValueError(f"the file's languages are {short}, not a list of distinct language codes")
    return list(value)


def stored_words(value: Any, name: str, n: int | None = None, what: str = "") -> list[str]:
    """A 1-D list of distinct words read from a model file (``n`` of them when given, ``what``
    saying what fixes that number), else a ValueError naming ``arrays/<name>``."""
    arr = np.asarray(value)
    if arr.ndim != 1 or arr.dtype.kind not in "OUS":
        raise ValueError(f"arrays/{name} has shape {arr.shape} and dtype {arr.dtype}; the model stores a 1-D "
                         "list of words there")
    words = [w.decode("utf-8") if isinstance(w, bytes) else str(w) for w in arr.tolist()]
    if n is not None and len(words) != n:
        raise ValueError(f"arrays/{name} lists {len(words)} words but {what} has {n}")
    if len(set(words)) != len(words):
        raise ValueError(f"arrays/{name} lists a word more than once")
    return words


def stored_word_table(arrays: dict, lang: str, d: int, dim_from: str) -> tuple[np.ndarray, list[str]]:
    """One language's word vectors and words read from a model file (``arrays["vectors"][lang]``,
    ``arrays["words"][lang]``), checked: finite 2-D float vectors of dimension ``d`` (``dim_from``
    says what fixes it), one distinct word per row; else a ValueError naming the dataset."""
    V = stored_float(arrays["vectors"][lang], f"vectors/{lang}", 2)
    if V.shape[1] != d:
        raise ValueError(f"arrays/vectors/{lang} has shape {V.shape}, vectors of dimension {V.shape[1]}, "
                         f"but {dim_from}")
    words = stored_words(arrays["words"][lang], f"words/{lang}", V.shape[0], f"arrays/vectors/{lang} {V.shape}")
    return V, words


def check_vectorizer_width(vec: Any, p: int, name: str, matrix: str) -> None:
    """A loaded vectoriser must give as many features as its language's matrix has columns
    (``matrix``, e.g. ``"arrays/components/en"``), with finite idf weights."""
    if vec is None:
        return
    n = len(vec.vocabulary_)
    if n != p:
        raise ValueError(f"arrays/{name}/vocabulary lists {n} words but {matrix} has {p} columns")
    if not _all_finite(np.asarray(vec.idf_, dtype=np.float64)):
        raise ValueError(f"arrays/{name}/idf holds NaN or infinite values")


@contextmanager
def nested_state(key: str) -> Iterator[None]:
    """Around the ``_from_state`` of a model saved inside another (under ``arrays/<key>``): its
    errors name its datasets by their place in the file."""
    try:
        yield
    except ValueError as exc:
        raise ValueError(str(exc).replace("arrays/", f"arrays/{key}/")) from exc


def _is_matrix(X: Any) -> bool:
    """True for a feature matrix (scipy.sparse, a 2-D or numeric NumPy array, another array type
    such as a dask or CuPy array), not texts (a 1-D array of str is texts)."""
    if sp.issparse(X):
        return True
    if isinstance(X, np.ndarray):
        return X.ndim != 1 or X.dtype.kind not in "OUST"
    return hasattr(X, "shape") and hasattr(X, "dtype") and not is_text_column(X)


def rows_times_map(X: Any, C: Any) -> np.ndarray:
    """``X @ C.T`` for feature rows X (n, p) and a language's map C (r, p), C-contiguous.

    SciPy multiplies a CSR matrix by ``C.T`` only after copying that transposed view to C order:
    the whole map, 240 MB at p = 200,000 and r = 300 in float32, for every call (81 ms to embed
    one sentence, 0.8 ms without it; 2-core AMD EPYC, 2026-11-29). When X's nonzeros use fewer
    than half of the p columns (a few documents), only those columns of C are gathered and X's
    indices renumbered; each row's sum runs over its nonzeros in the same order, so the result
    is bitwise the one of ``X @ C.T``. Other inputs (dense X, CuPy arrays, batches that use
    most columns) take ``X @ C.T``."""
    if not (sp.issparse(X) and X.format == "csr" and isinstance(C, np.ndarray)):
        return np.asarray(X @ C.T)
    p = C.shape[1]
    nnz = int(X.indptr[-1])
    cols = used_columns(X.indices[:nnz], p)
    if 2 * cols.size >= p:
        return np.asarray(X @ C.T)
    Xs = sp.csr_matrix((X.data[:nnz], renumbered(X.indices[:nnz], cols, p), X.indptr),
                       shape=(X.shape[0], cols.size))
    return np.asarray(Xs @ C[:, cols].T)


class ConceptEmbeddingMixin(LinxlingEstimator):
    """Shared behaviour of estimators with per-language maps ``components_[lang]`` (r, p_l).

    Subclasses define ``_embed_matrix(X, language)`` (the embedding of checked features; the
    public ``transform_matrix(X, language, dtype=None)`` wraps it) and ``_get_state``/``_from_state``, and
    may set ``vectorizers_`` (language -> TfidfVectorizer) when fitted from texts.
    """

    def _check_language(self, language: str) -> None:
        self._check_fitted()
        check_language(language, known=self.components_)
        if language not in self.components_:
            raise unknown_language(language, self.components_)

    def transform(self, texts: Sequence[str] | Iterable[str], language: str, dtype: Any = None) -> np.ndarray:
        """Embed raw documents of ``language``: a C-contiguous (n_docs, n_components) array,
        in ``dtype`` when given (e.g. ``np.float32`` for a vector index)."""
        self._check_language(language)
        if _is_matrix(texts):
            raise TypeError(f"{type(self).__name__}.transform takes texts (a sequence of str), got a "
                            f"{type(texts).__name__} of shape {getattr(texts, 'shape', '?')}: embed the rows "
                            f"of a feature matrix with transform_matrix(X, language)")
        if not hasattr(self, "vectorizers_") or language not in self.vectorizers_:
            raise RuntimeError("this model was fitted with fit_matrices: use transform_matrix on "
                               "features, or fit from texts to get a vectoriser per language")
        refuse_non_texts(texts, "texts")       # a single str, a mapping, a matrix: named as texts
        X = self.vectorizers_[language]._transform(texts, "texts")
        warn_no_known_words(self, X.shape[0], X.nnz, language)
        return self.transform_matrix(X, language, dtype=dtype)

    def transform_matrix(self, X: Any, language: str, dtype: Any = None) -> np.ndarray:
        """Embed rows of a feature matrix of ``language`` (sparse or dense (n, p_l), the columns
        of the language's vocabulary): a C-contiguous (n, n_components) array, in ``dtype`` when
        given."""
        self._check_language(language)
        if X is None:
            raise TypeError(f"{type(self).__name__}.transform_matrix: X is None; give a feature matrix "
                            "(sparse or dense, one column per word of the language's vocabulary)")
        if (isinstance(X, (str, bytes)) or is_text_column(X)
                or (isinstance(X, (list, tuple)) and X and isinstance(X[0], (str, bytes)))):
            raise TypeError(f"{type(self).__name__}.transform_matrix takes a feature matrix X, got "
                            f"{'a single str' if isinstance(X, (str, bytes)) else 'texts'}: embed texts with "
                            "transform(texts, language)")
        Xl = check_sparse_matrix(X, "X", dtype=self.components_[language].dtype, allow_empty=True)
        p = self.components_[language].shape[1]
        if Xl.shape[1] != p:
            raise ValueError(f"X has {Xl.shape[1]} columns but language {language!r} has {p} features")
        return as_output(self._embed_matrix(Xl, language), dtype)

    def word_vectors(self, language: str) -> tuple[list[str] | None, np.ndarray]:
        """Word vectors of ``language``: the embedding of each one-word document, i.e. the columns
        of the language's map (Φ_l for Cr5; S⁻¹V_lᵀ or V_lᵀ for CL-LSI, by ``scale``).

        Returns
        -------
        words : list of str (p_l,), or None when fitted from matrices (then rows are feature indices)
        vectors : ndarray (p_l, n_components), C-contiguous
        """
        self._check_language(language)
        words = None
        if getattr(self, "vectorizers_", None) and language in self.vectorizers_:
            words = list(self.vectorizers_[language].vocabulary_)
        p = self.components_[language].shape[1]
        one_word_docs = sp.identity(p, dtype=self.components_[language].dtype, format="csr")
        return words, as_output(self._embed_matrix(one_word_docs, language))

    # -------------------------------------------------------------- store helpers
    def _shared_state(self, params: dict) -> dict:
        """Add languages/classes/vectorisers to ``params``; return the shared arrays."""
        params["languages"] = list(self.languages_)
        params["classes_kind"], classes = classes_state(list(self.classes_))
        arrays: dict[str, Any] = {
            "components": {lang: self.components_[lang] for lang in self.languages_},
            "singular_values": self.singular_values_,
            "classes": classes,
        }
        if getattr(self, "vectorizers_", None):
            params["vectorizer_params"], arrays["vectorizers"] = vectorizers_state(self.vectorizers_)
        return arrays

    def _restore_shared(self, params: dict, arrays: dict) -> None:
        """Languages, maps, singular values, concept ids and vectorisers from the store, checked:
        every language's map (r, p_l) with the r of the singular values, its vectoriser (if any)
        with p_l words, finite float values."""
        self.languages_ = stored_languages(params["languages"])
        sv = stored_float(arrays["singular_values"], "singular_values", 1)
        r = sv.shape[0]
        self.components_ = {}
        for lang in self.languages_:
            C = stored_float(arrays["components"][lang], f"components/{lang}", 2)
            if C.shape[0] != r:
                raise ValueError(f"arrays/components/{lang} has shape {C.shape}: {C.shape[0]} components, but "
                                 f"arrays/singular_values holds {r} values (one per component)")
            self.components_[lang] = C
        self.n_features_ = {lang: self.components_[lang].shape[1] for lang in self.languages_}
        self.singular_values_ = sv
        classes = np.asarray(arrays["classes"])
        if classes.ndim != 1:
            raise ValueError(f"arrays/classes has shape {classes.shape}; the model stores a 1-D list of concept ids")
        self.classes_ = classes_from_state(params.get("classes_kind"), classes,
                                           legacy_repr=params.get("classes_repr", False))
        if "vectorizers" in arrays:
            self.vectorizers_ = vectorizers_from_state(params["vectorizer_params"], arrays["vectorizers"])
            for lang, vec in self.vectorizers_.items():
                if lang not in self.components_:
                    raise ValueError(f"arrays/vectorizers/{lang} is the vectoriser of a language the model "
                                     f"does not have (its languages are {self.languages_})")
                check_vectorizer_width(vec, self.n_features_[lang], f"vectorizers/{lang}",
                                       f"arrays/components/{lang}")
