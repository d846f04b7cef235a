"""Word vectors out, for the tools that search with them: word2vec (gensim), ``.npy``, FAISS.

Every file is written atomically like the model store: to a temporary file in the destination
directory, flushed and fsync'ed, then moved over the destination with :func:`os.replace`, so a
failed export leaves an existing file intact.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

import numpy as np

from linxling._validation import refuse_sparse
from linxling.io._store import atomic_replace, atomic_replace_all
from linxling.text._vectorize import check_unicode

__all__ = ["EXPORT_FORMATS", "export_vectors", "vocabulary_path"]

#: Formats accepted by :func:`export_vectors` (and ``model.export`` / ``linxling export``).
EXPORT_FORMATS = ("word2vec", "word2vec-binary", "npy", "faiss")


def vocabulary_path(path: str | os.PathLike) -> str:
    """Vocabulary file written next to a ``"npy"`` / ``"faiss"`` export at ``path``.

    ``vectors.npy`` -> ``vectors.vocab.txt`` (a trailing ``.npy`` is replaced, any other name
    gets ``.vocab.txt`` appended).
    """
    path = os.fsdecode(path)
    stem = path[:-4] if path.endswith(".npy") else path
    return stem + ".vocab.txt"


def _filler(write: Callable[[IO[bytes]], object]) -> Callable[[str], None]:
    def fill(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            write(fh)
    return fill


def _atomic_write(path: str, write: Callable[[IO[bytes]], object]) -> None:
    atomic_replace(path, _filler(write))


def _check_vectors(vectors: Any) -> np.ndarray:
    refuse_sparse(vectors, "vectors")
    V = np.asarray(vectors)
    if V.ndim != 2:
        raise ValueError(f"vectors must be a 2-D array (n_words, dim), got shape {V.shape}")
    if V.shape[0] == 0 or V.shape[1] == 0:
        raise ValueError(f"vectors must be non-empty, got shape {V.shape}")
    if V.dtype.kind not in "fiub":
        raise TypeError(f"vectors must hold real numbers, got dtype {V.dtype}")
    if V.dtype.kind != "f":
        V = V.astype(np.float64)
    if not np.all(np.isfinite(V)):
        bad = int(np.sum(~np.all(np.isfinite(V), axis=1)))
        raise ValueError(f"vectors has {bad} row(s) with NaN or infinite values")
    return V


def _check_words(words: Sequence[str] | None, n: int, format: str) -> list[str]:
    if words is None:  # fitted from matrices: the feature (column) index is the word
        return [str(i) for i in range(n)]
    if isinstance(words, (str, bytes)):
        raise TypeError("words must be a sequence of str (one per row of vectors), not a single string")
    if isinstance(words, (Mapping, set, frozenset)):   # no row order (a vocabulary dict's keys
        raise TypeError(f"words must be a sequence of str in the order of the rows of vectors, got a "
                        f"{type(words).__name__}, whose order is not the rows' (e.g. for a vocabulary "
                        "{word: column} give the words sorted by column)")
    words = list(words)
    if len(words) != n:
        raise ValueError(f"words has {len(words)} entries but vectors has {n} rows")
    seen: dict[str, int] = {}
    for i, w in enumerate(words):
        if not isinstance(w, str):
            raise TypeError(f"words[{i}] must be a str, got {type(w).__name__}")
        if w == "":
            raise ValueError(f"words[{i}] is the empty string, which the {format!r} format cannot store")
        check_unicode(i, w, "words")      # UTF-8 cannot write it: was a UnicodeEncodeError naming no word
        if format.startswith("word2vec"):
            if any(c.isspace() for c in w):
                raise ValueError(f"words[{i}] = {w!r} contains whitespace, which the word2vec format uses as "
                                 "separator; replace it (e.g. with '_') before exporting")
        elif w.splitlines() != [w]:     # \n, \r and every other break str.splitlines() reads
            raise ValueError(f"words[{i}] = {w!r} contains a line break, which the one-word-per-line "
                             "vocabulary file cannot store")
        if w in seen:
            raise ValueError(f"words[{i}] = {w!r} repeats words[{seen[w]}]; exported words must be unique")
        seen[w] = i
    return words


def _faiss_matrix(V: np.ndarray) -> np.ndarray:
    """float32, C-contiguous, rows of unit L2 norm (zero rows stay zero: cosine 0 with everything).
    A row whose sum of squares over- or underflows keeps its direction (Index's normalisation):
    np.linalg.norm alone made a row of 1e200s a zero row and left a row of 1e-170s unnormalised."""
    from linxling.evaluate._retrieval import _normalize_rows
    X = _normalize_rows(np.array(V, dtype=np.float64, order="C"), np)
    return np.ascontiguousarray(X, dtype=np.float32)


def export_vectors(path: str | os.PathLike, vectors: Any, words: Sequence[str] | None = None,
                   format: str = "word2vec") -> list[str]:
    """Write word vectors in a format other tools read.

    Parameters
    ----------
    path : str or path-like
        Destination file. For ``"npy"`` and ``"faiss"`` the vocabulary goes to
        :func:`vocabulary_path` ``(path)`` (``vectors.npy`` -> ``vectors.vocab.txt``).
    vectors : array, shape (n_words, dim)
        Real, finite values.
    words : sequence of str, optional
        ``words[i]`` labels ``vectors[i]``; unique and non-empty. ``None`` (a model fitted from
        matrices, whose columns are feature indices) writes the indices ``"0"``, ``"1"``, ... as words.
    format : {"word2vec", "word2vec-binary", "npy", "faiss"}
        - ``"word2vec"``: text, a header line ``n_words dim`` then ``word v1 ... vd`` per line
          (floats printed to round-trip exactly: 9 significant digits for float32 input, 17
          otherwise). gensim: ``KeyedVectors.load_word2vec_format(path)``.
        - ``"word2vec-binary"``: the same header, then ``word`` + a space + ``dim`` little-endian
          float32 per word. gensim: ``KeyedVectors.load_word2vec_format(path, binary=True)``.
        - ``"npy"``: the vectors unchanged (dtype kept) as a NumPy ``.npy`` file, plus the
          vocabulary file (UTF-8, one word per line).
        - ``"faiss"``: a float32, C-contiguous, L2-normalised ``.npy`` matrix (zero rows stay
          zero), plus the vocabulary file: ``faiss.IndexFlatIP(dim).add(np.load(path))`` then
          searches by cosine similarity (the scores are cosines for queries normalised too,
          ``faiss.normalize_L2``; an unnormalised query ranks the same, its scores times its norm).

    Returns
    -------
    list of str
        The files written.

    Raises
    ------
    ValueError
        Unknown ``format``; vectors not 2-D, empty or non-finite (for ``"word2vec-binary"``: once
        converted to float32); ``words`` of the wrong length,
        repeated, empty, or containing whitespace (word2vec) or line breaks (vocabulary file: any that
        ``str.splitlines`` breaks at, U+2028 and NEL included).
    TypeError
        Non-numeric ``vectors`` or a non-str word.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> export_vectors(os.path.join(d, "v.txt"), np.eye(2), ["a", "b"])  # doctest: +ELLIPSIS
    ['.../v.txt']
    >>> print(open(os.path.join(d, "v.txt")).read())
    2 2
    a 1 0
    b 0 1
    <BLANKLINE>
    """
    if format not in EXPORT_FORMATS:
        raise ValueError(f"format must be one of {', '.join(map(repr, EXPORT_FORMATS))}, got {format!r}")
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike (the file to write), got {type(path).__name__}: "
                        "export_vectors(path, vectors, words)")
    path = os.fsdecode(path)                 # a bytes path as the file system decodes it
    if os.path.isdir(path):
        raise ValueError(f"path {path!r} is a directory; give a file name")
    V = _check_vectors(vectors)
    n, dim = V.shape
    words = _check_words(words, n, format)

    if format == "word2vec":
        digits = 9 if V.dtype.itemsize <= 4 else 17
        fmt = f"%.{digits}g"

        def write_text(fh: IO[bytes]) -> None:
            fh.write(f"{n} {dim}\n".encode())
            for w, row in zip(words, V, strict=True):
                fh.write((w + " " + " ".join(fmt % x for x in row.tolist()) + "\n").encode("utf-8"))
        _atomic_write(path, write_text)
        return [path]

    if format == "word2vec-binary":
        with np.errstate(over="ignore"):
            V32 = np.asarray(V, dtype="<f4")
        if not np.all(np.isfinite(V32)):          # finite float64 beyond float32's range: inf in the file
            row = int(np.flatnonzero(~np.all(np.isfinite(V32), axis=1))[0])
            raise ValueError(f"vectors[{row}] ({words[row]!r}) has values beyond float32's range "
                             f"(|x| > {np.finfo(np.float32).max:.4g}), which word2vec-binary stores as "
                             "infinity; scale the vectors or use format='word2vec' (text, exact)")

        def write_binary(fh: IO[bytes]) -> None:
            fh.write(f"{n} {dim}\n".encode())
            for w, row in zip(words, V32, strict=True):
                fh.write(w.encode("utf-8") + b" " + row.tobytes())
        _atomic_write(path, write_binary)
        return [path]

    if format == "npy":     # the dtype kept, an integer or boolean one too (int8 vectors became float64)
        given = np.asarray(vectors)
        matrix = given if given.dtype.kind in "iub" else V
    else:
        matrix = _faiss_matrix(V)
    vocab = vocabulary_path(path)
    # both files or neither: a failure while writing the vocabulary leaves the old matrix too
    atomic_replace_all([(path, _filler(lambda fh: np.save(fh, matrix, allow_pickle=False))),
                        (vocab, _filler(lambda fh: fh.write("".join(w + "\n" for w in words).encode("utf-8"))))])
    return [path, vocab]
