"""linxling.io.export_vectors: gensim and FAISS round trips, vocabulary files, atomic writes, bad input."""
from __future__ import annotations

import os

import numpy as np
import pytest

from linxling.evaluate import retrieval
from linxling.io import EXPORT_FORMATS, export_vectors, vocabulary_path

gensim_models = pytest.importorskip("gensim.models", reason="gensim comes with the 'test' extra")


def _data(n=40, d=7, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    V = rng.standard_normal((n, d)).astype(dtype)
    words = [f"w{i}_é" for i in range(n)]  # non-ASCII on purpose: UTF-8 throughout
    return V, words


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fmt,binary", [("word2vec", False), ("word2vec-binary", True)])
def test_gensim_loads_word2vec(tmp_path, fmt, binary, dtype):
    V, words = _data(dtype=dtype)
    path = tmp_path / "vectors.w2v"
    assert export_vectors(path, V, words, format=fmt) == [str(path)]
    kv = gensim_models.KeyedVectors.load_word2vec_format(str(path), binary=binary)
    assert kv.index_to_key == words
    # gensim stores float32: the exported values are exactly V rounded to float32
    np.testing.assert_array_equal(kv.vectors, V.astype(np.float32))


def test_words_none_writes_feature_indices(tmp_path):
    V, _ = _data(n=5)
    path = tmp_path / "v.txt"
    export_vectors(path, V, None)
    kv = gensim_models.KeyedVectors.load_word2vec_format(str(path))
    assert kv.index_to_key == ["0", "1", "2", "3", "4"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_npy_and_vocabulary(tmp_path, dtype):
    V, words = _data(dtype=dtype)
    path = tmp_path / "vectors.npy"
    written = export_vectors(path, V, words, format="npy")
    assert written == [str(path), str(tmp_path / "vectors.vocab.txt")]
    assert vocabulary_path(path) == written[1]
    M = np.load(path, allow_pickle=False)
    assert M.dtype == dtype
    np.testing.assert_array_equal(M, V)
    assert (tmp_path / "vectors.vocab.txt").read_text(encoding="utf-8").splitlines() == words


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint16, np.bool_])
def test_npy_keeps_an_integer_or_boolean_dtype(tmp_path, dtype):
    """docs/io.md: "npy" writes the vectors with their dtype kept; integer (int8-quantised) and
    boolean vectors were written as float64, 8 times the size of int8 ones."""
    V = np.array([[-5, 0, 3], [7, -1, 2], [0, 0, 1], [4, 4, -4]])
    V = (V > 0 if dtype is np.bool_ else np.abs(V) if dtype is np.uint16 else V).astype(dtype)
    path = tmp_path / "q.npy"
    export_vectors(path, V, list("abcd"), format="npy")
    M = np.load(path, allow_pickle=False)
    assert M.dtype == dtype
    np.testing.assert_array_equal(M, V)
    # the other formats write floats: the same numbers
    export_vectors(tmp_path / "q.txt", V, list("abcd"))
    kv = gensim_models.KeyedVectors.load_word2vec_format(str(tmp_path / "q.txt"))
    np.testing.assert_array_equal(kv.vectors, V.astype(np.float32))


def test_faiss_matrix_and_search_matches_cosine_ranking(tmp_path):
    faiss = pytest.importorskip("faiss", reason="faiss-cpu comes with the 'test' extra")
    V, words = _data(n=60, d=8)
    V[3] = 0.0  # a zero row stays zero (cosine 0 with everything), no NaN
    path = tmp_path / "index.npy"
    export_vectors(path, V, words, format="faiss")
    M = np.load(path)
    assert M.dtype == np.float32 and M.flags.c_contiguous
    norms = np.linalg.norm(M.astype(np.float64), axis=1)
    np.testing.assert_allclose(np.delete(norms, 3), 1.0, rtol=0, atol=1e-6)  # float32 rounding of unit rows
    assert norms[3] == 0.0

    rng = np.random.default_rng(1)
    Q = rng.standard_normal((25, 8))
    index = faiss.IndexFlatIP(M.shape[1])
    index.add(M)
    Qn = np.ascontiguousarray(Q / np.linalg.norm(Q, axis=1, keepdims=True), dtype=np.float32)
    k = 5
    _, I = index.search(Qn, k)
    # linxling.evaluate ranks the FAISS j-th neighbour of each query at rank j + 1 by cosine
    # (random Gaussian data: no ties within float32 rounding at these sizes)
    for j in range(k):
        ranks = retrieval(Q, V, gold=I[:, j], ks=(1,), return_ranks=True)["ranks"]
        np.testing.assert_array_equal(ranks, j + 1)


@pytest.mark.parametrize("fmt", ["word2vec", "word2vec-binary"])
@pytest.mark.parametrize("bad,msg", [("two words", "whitespace"), ("tab\tword", "whitespace"), ("", "empty")])
def test_word2vec_rejects_unstorable_words(tmp_path, fmt, bad, msg):
    V, words = _data(n=3)
    words[1] = bad
    path = tmp_path / "v.txt"
    with pytest.raises(ValueError, match=msg):
        export_vectors(path, V, words, format=fmt)
    assert not path.exists() and os.listdir(tmp_path) == []  # nothing half-written


@pytest.mark.parametrize("fmt", ["word2vec", "word2vec-binary", "npy", "faiss"])
def test_a_word_that_utf8_cannot_write_is_named(tmp_path, fmt):
    """A lone surrogate (bytes decoded with surrogateescape) failed in the write as a
    UnicodeEncodeError naming neither the word nor its row."""
    V, words = _data(n=3)
    words[2] = "caf\udce9"
    path = tmp_path / "v.txt"
    with pytest.raises(ValueError, match=r"^words\[2\] contains the lone surrogate '\\udce9' at position 3"):
        export_vectors(path, V, words, format=fmt)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("fmt", ["npy", "faiss"])
@pytest.mark.parametrize("brk", ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\r\n"])
def test_vocabulary_refuses_every_line_break_splitlines_reads(tmp_path, fmt, brk):
    """The documented reader is splitlines(), which also breaks at U+2028, NEL, VT, FF, ...:
    such a word gave a vocabulary one line longer than the matrix, every later word shifted."""
    V, words = _data(n=3)
    words[1] = f"a{brk}b"
    with pytest.raises(ValueError, match=r"words\[1\] .* line break"):
        export_vectors(tmp_path / "v.npy", V, words, format=fmt)
    assert os.listdir(tmp_path) == []


def test_bad_input_errors(tmp_path):
    V, words = _data(n=3)
    p = tmp_path / "v.txt"
    with pytest.raises(ValueError, match="format must be one of"):
        export_vectors(p, V, words, format="glove")
    with pytest.raises(ValueError, match="2 entries but vectors has 3 rows"):
        export_vectors(p, V, words[:2])
    with pytest.raises(ValueError, match="repeats"):
        export_vectors(p, V, ["a", "b", "a"])
    with pytest.raises(ValueError, match="line break"):
        export_vectors(p, V, ["a", "b\nc", "d"], format="npy")
    with pytest.raises(TypeError, match=r"words\[1\] must be a str"):
        export_vectors(p, V, ["a", 2, "c"])
    with pytest.raises(ValueError, match="2-D"):
        export_vectors(p, V[0], words)
    W = V.copy()
    W[1, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite"):
        export_vectors(p, W, words)
    with pytest.raises(ValueError, match="directory"):
        export_vectors(tmp_path, V, words)
    assert os.listdir(tmp_path) == []


def test_words_without_a_row_order_and_swapped_arguments_are_refused(tmp_path):
    """A single string of n letters labelled n rows one letter each, and a set or a dict (such
    as a vectoriser's vocabulary {word: column}) labelled them in an order that is not the rows';
    a sparse matrix was reported as shape (); swapped path and vectors as os.fspath's error."""
    import scipy.sparse as sp
    V, _ = _data(n=3)
    p = tmp_path / "v.txt"
    with pytest.raises(TypeError, match="words must be a sequence of str .*not a single string"):
        export_vectors(p, V, "abc")
    for words in ({"a", "b", "c"}, {"b": 1, "a": 0, "c": 2}):
        with pytest.raises(TypeError, match="in the order of the rows of vectors, got a"):
            export_vectors(p, V, words)
    with pytest.raises(TypeError, match="vectors must be a dense array .*got a sparse csr_matrix"):
        export_vectors(p, sp.csr_matrix(V), ["a", "b", "c"])
    with pytest.raises(TypeError, match="path must be a str or os.PathLike .*got ndarray"):
        export_vectors(V, p, ["a", "b", "c"])
    assert os.listdir(tmp_path) == []


def test_atomic_failure_keeps_existing_file(tmp_path, monkeypatch):
    V, words = _data(n=3)
    path = tmp_path / "v.txt"
    export_vectors(path, V, words)
    before = path.read_bytes()

    def boom(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(KeyboardInterrupt):
        export_vectors(path, 2 * V, words)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["v.txt"]  # temporary file removed


def test_every_format_is_tested():
    assert set(EXPORT_FORMATS) == {"word2vec", "word2vec-binary", "npy", "faiss"}


def test_estimator_export_goes_through_export_vectors(tmp_path):
    """LinxlingEstimator.export (every model's) writes its word_vectors(language) with export_vectors."""
    from linxling.models._estimator import LinxlingEstimator

    V, words = _data(n=6, d=3)

    class Tiny(LinxlingEstimator):
        def fit(self):
            self.components_ = V
            return self

        def word_vectors(self, language):
            assert language == "xx"
            return words, self.components_

    path = tmp_path / "tiny.bin"
    Tiny().fit().export(path, "xx", format="word2vec-binary")
    kv = gensim_models.KeyedVectors.load_word2vec_format(str(path), binary=True)
    assert kv.index_to_key == words
    np.testing.assert_array_equal(kv.vectors, V.astype(np.float32))


def test_word2vec_binary_refuses_values_float32_cannot_hold(tmp_path):
    """Finite float64 values beyond float32's range were written as inf to word2vec-binary."""
    V = np.ones((3, 2))
    V[1, 0] = 1e39
    path = tmp_path / "v.bin"
    with pytest.raises(ValueError, match=r"vectors\[1\] \('b'\) has values beyond float32's range"):
        export_vectors(path, V, ["a", "b", "c"], format="word2vec-binary")
    assert not path.exists()
    export_vectors(path, V, ["a", "b", "c"], format="word2vec")      # text keeps them exactly
    assert float(path.read_text().splitlines()[2].split()[1]) == 1e39


def test_faiss_rows_whose_squares_overflow_or_underflow_keep_their_direction(tmp_path):
    """np.linalg.norm made a row of 1e200s a zero row (cosine 0 to everything) and left a row
    of 1e-170s unnormalised (almost zero)."""
    V = np.array([[1e200, 1e200], [3e-170, 4e-170], [0.0, 0.0], [3.0, 4.0]])
    path = tmp_path / "v.npy"
    export_vectors(path, V, ["big", "tiny", "zero", "plain"], format="faiss")
    np.testing.assert_allclose(np.load(path), [[2 ** -0.5, 2 ** -0.5], [0.6, 0.8], [0, 0], [0.6, 0.8]], rtol=1e-6)


@pytest.mark.parametrize("fmt", EXPORT_FORMATS)
def test_bytes_paths_are_accepted(tmp_path, fmt):
    """A bytes path gave 'path is empty' (word2vec) or a TypeError from str.endswith (npy)."""
    path = os.fsencode(tmp_path / "v.npy")
    written = export_vectors(path, np.eye(2), ["a", "b"], format=fmt)
    assert written[0] == os.fsdecode(path) and all(os.path.isfile(p) for p in written)
    assert vocabulary_path(path) == str(tmp_path / "v.vocab.txt")
