"""MUSE bilingual dictionaries and word-translation precision at k (Conneau et al. 2018)."""
from __future__ import annotations

import os
from typing import Any, Iterable, Sequence

import numpy as np

from linxling._backend import get_namespace
from linxling._validation import check_int
from linxling.datasets.shared import _utf8, shared_data_dir
from linxling.evaluate._retrieval import (_auto_block_size, _blocked_ranks, _check_embedding_pair, _check_ks,
                                          _check_similarity, _csls_radii, _has_direction, _normalize_rows,
                                          _summarise, _warn_tied_candidates)

__all__ = ["read_muse_dictionary", "muse_split", "word_translation"]


def read_muse_dictionary(path: str | os.PathLike) -> list[tuple[str, str]]:
    """Read a MUSE dictionary: one whitespace-separated ``src tgt`` pair per line.

    Blank lines are skipped; any other line without exactly two fields is an error.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    list of (str, str)
        Pairs in file order (duplicates kept).

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist (the message names the shared data folder).
    IsADirectoryError
        If ``path`` is a directory.
    ValueError
        On a malformed line (the message gives the path and line number), a file without a pair,
        or a file that is not UTF-8.
    """
    pairs: list[tuple[str, str]] = []
    if os.path.isdir(path):                 # was reported as "not found"
        raise IsADirectoryError(f"MUSE dictionary path {os.fspath(path)} is a directory: give the file")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"MUSE dictionary not found: {os.fspath(path)} (relative to {os.getcwd()}); "
                                f"for the shared data use linxling.datasets.shared_data_dir() / 'muse' / ..., "
                                f"currently {shared_data_dir()} (set LINXLING_SHARED_DATA)")
    with open(path, encoding="utf-8") as fh, _utf8(path):
        for lineno, line in enumerate(fh, 1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 2:
                raise ValueError(f"{os.fspath(path)}:{lineno}: expected 2 fields 'src tgt', "
                                 f"got {len(fields)}: {line.rstrip()!r}")
            pairs.append((fields[0], fields[1]))
    if not pairs:              # was [], which every use of it then failed on (or scored nothing) elsewhere
        raise ValueError(f"{os.fspath(path)}: no 'src tgt' pair (the file is empty or blank)")
    return pairs


def muse_split(pairs: Iterable[tuple[str, str]], n_train: int = 5000,
               n_test: int = 1500) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The official MUSE train/test split of a full dictionary.

    Unique source words are ranked in order of first appearance; all pairs of the first
    ``n_train`` source words form the training set and all pairs of the source words with
    ranks ``n_train .. n_train + n_test - 1`` form the test set (for en-de with the defaults this
    reproduces ``en-de.0-5000.txt`` and ``en-de.5000-6500.txt``).

    Parameters
    ----------
    pairs : iterable of (str, str)
        As returned by :func:`read_muse_dictionary`.
    n_train, n_test : int
        Number of unique source words in each part (``>= 0``).

    Returns
    -------
    train_pairs, test_pairs : list of (str, str)
        Pairs in file order. If the dictionary has fewer unique source words than
        ``n_train + n_test``, the test set is correspondingly smaller.
    """
    n_train = check_int(n_train, "n_train", low=0)
    n_test = check_int(n_test, "n_test", low=0)
    if isinstance(pairs, (str, bytes, os.PathLike)):     # a path: iterated as its characters
        raise TypeError(f"pairs must be an iterable of (source, target) pairs, got a {type(pairs).__name__}; "
                        "read a dictionary file with read_muse_dictionary(path) first")
    rank: dict[str, int] = {}
    train, test = [], []
    for i, pair in enumerate(pairs):
        # a str of two characters unpacked as a pair ("ab" -> ("a", "b")) without a word
        if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise ValueError(f"pairs[{i}] must be a (source, target) pair, got {pair!r}")
        src, tgt = pair
        r = rank.setdefault(src, len(rank))
        if r < n_train:
            train.append((src, tgt))
        elif r < n_train + n_test:
            test.append((src, tgt))
    return train, test


def _vocab_index(words: Sequence[str], name: str, n_rows: int, vectors_name: str) -> dict[str, int]:
    if isinstance(words, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of words, not a single string")
    words = list(words)
    if len(words) != n_rows:
        raise ValueError(f"{name} has {len(words)} words but {vectors_name} has {n_rows} rows")
    index: dict[str, int] = {}
    for i, w in enumerate(words):
        if not isinstance(w, str):   # stored as str(w), it matched no word of pairs: skipped in silence
            raise TypeError(f"{name}[{i}] is a {type(w).__name__} ({w!r}), not a str (a word)")
        # a word given twice would be scored twice: its second row competes with the gold one
        # (the target word ranked first was a miss when it was the other row of that word)
        j = index.setdefault(str(w), i)
        if j != i:
            raise ValueError(f"{name} has the word {str(w)!r} twice (positions {j} and {i}); every word "
                             f"needs one row of {vectors_name}: drop or merge the duplicates")
    return index


def word_translation(src_words: Sequence[str], src_vectors: Any, tgt_words: Sequence[str], tgt_vectors: Any,
                     pairs: Iterable[tuple[str, str]], ks: Sequence[int] = (1, 5, 10),
                     similarity: str = "cosine", knn: int = 10, block_size: int | None = None, *,
                     show_progress: bool | None = None) -> dict:
    """Word-translation precision at k, as in MUSE.

    Every source word of ``pairs`` that is in ``src_words`` and has at least one gold
    translation in ``tgt_words`` is a query; it is retrieved against *all* target words and
    counts as correct at k if ANY of its gold translations is among the top k (ties favour the
    gold word; a ``UserWarning`` says when half of the target vectors or more share their direction
    with another, as a collapsed model's do). Pairs with a word outside the vocabularies are skipped and counted.

    Parameters
    ----------
    src_words : sequence of str, length n_src
        Distinct words (a duplicated word is an error, as in :func:`reverse_dictionary`).
    src_vectors : array, shape (n_src, d)
    tgt_words : sequence of str, length n_tgt
        Distinct words.
    tgt_vectors : array, shape (n_tgt, d)
    pairs : iterable of (str, str)
        Gold (source, target) pairs, e.g. the test part of :func:`muse_split`.
    ks : sequence of int
    similarity : {"cosine", "csls"}
        For CSLS (as in MUSE) ``r_src`` is the mean cosine of a source word to its ``knn``
        nearest target words and ``r_tgt`` the mean cosine of a target word to its ``knn``
        nearest words in the *whole* source vocabulary.
    knn : int
        ``1 <= knn <= min(n_src, n_tgt)`` (checked for CSLS only).
    block_size : int, optional
        Rows scored at a time (memory O(block_size * max(n_src, n_tgt))); default from a
        512 MiB budget, as in :func:`retrieval`.
    show_progress : bool, optional
        Progress bar over blocks; ``None`` follows :func:`linxling.set_show_progress`.

    Returns
    -------
    dict
        ``"P@k"`` per k and ``"MRR"`` (over queries, using the best-ranked gold translation);
        ``"n_queries"``: unique source words evaluated; ``"n_zero_queries"``: those of them whose
        vector is all zero (always a miss; a gold target word without a direction never counts
        as found either); ``"n_missing"``: unique source words of
        the dictionary skipped because the word or all of its translations are out of
        vocabulary; ``"n_pairs"`` / ``"n_pairs_missing"``: the same counted in pairs.

    Raises
    ------
    ValueError
        If no pair is in the vocabularies, a word is given twice in ``src_words`` or
        ``tgt_words``, or on invalid arrays / arguments.
    """
    ns = get_namespace(src_vectors, tgt_vectors)
    xp = ns.xp
    S, T = _check_embedding_pair(src_vectors, tgt_vectors, "src_vectors", "tgt_vectors", ns)
    ks = _check_ks(ks)
    similarity = _check_similarity(similarity)
    block_size = _auto_block_size(block_size, max(S.shape[0], T.shape[0], 1), S.dtype.itemsize, xp)
    if similarity == "csls":
        knn = check_int(knn, "knn", high=min(S.shape[0], T.shape[0]), what=" (min(n_src, n_tgt))")
    src_index = _vocab_index(src_words, "src_words", S.shape[0], "src_vectors")
    tgt_index = _vocab_index(tgt_words, "tgt_words", T.shape[0], "tgt_vectors")

    gold: dict[int, set[int]] = {}          # src row -> gold tgt rows, in query order
    all_sources: set[str] = set()
    n_pairs = n_pairs_missing = 0
    for i, pair in enumerate(pairs):
        if isinstance(pair, (str, bytes)) or len(pair) != 2:
            raise ValueError(f"pairs[{i}] must be a (source, target) pair, got {pair!r}")
        src, tgt = pair
        all_sources.add(src)
        s, t = src_index.get(src), tgt_index.get(tgt)
        if s is None or t is None:
            n_pairs_missing += 1
            continue
        n_pairs += 1
        gold.setdefault(s, set()).add(t)
    if not gold:
        raise ValueError(f"none of the {n_pairs_missing} pairs has both words in the vocabularies "
                         f"(src_words, tgt_words)")
    query_rows = list(gold)
    rows = np.repeat(np.arange(len(query_rows), dtype=np.int64), [len(gold[s]) for s in query_rows])
    cols = np.fromiter((t for s in query_rows for t in sorted(gold[s])), dtype=np.int64, count=rows.size)

    Sn, Tn = _normalize_rows(S, xp), _normalize_rows(T, xp)
    _warn_tied_candidates(Tn, xp, "word_translation", "target word vectors")
    q_idx = xp.asarray(np.asarray(query_rows, dtype=np.int64))
    Qn = Sn[q_idx]
    r_q = r_t = None
    if similarity == "csls":
        r_s, r_t = _csls_radii(Sn, Tn, knn, block_size, xp, show_progress)
        r_q = r_s[q_idx]
    ranks = _blocked_ranks(Qn, Tn, xp.asarray(rows), xp.asarray(cols), r_q, r_t, block_size, xp, show_progress)
    out = _summarise(ranks, ks, xp, T.shape[0])
    out.update(n_queries=len(query_rows), n_zero_queries=len(query_rows) - int(xp.count_nonzero(_has_direction(Qn, xp))), n_missing=len(all_sources) - len(query_rows),
               n_pairs=n_pairs, n_pairs_missing=n_pairs_missing)
    return out
