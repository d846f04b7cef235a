"""linxling.search: exact top-k search in blocks, cosine and CSLS, against a dense reference and
FAISS's flat inner-product index; the index file and the CLI's index/search commands."""
from __future__ import annotations

import numpy as np
import pytest

import linxling.search as ls
from linxling.search import Index, search


def _dense(Q, C, k, similarity="cosine", knn=10, ref=None):
    Qn = Q / np.linalg.norm(Q, axis=1, keepdims=True)
    Cn = C / np.linalg.norm(C, axis=1, keepdims=True)
    S = Qn @ Cn.T
    if similarity == "csls":
        R = Qn if ref is None else ref / np.linalg.norm(ref, axis=1, keepdims=True)
        r_q = np.sort(S, axis=1)[:, ::-1][:, :knn].mean(axis=1)
        r_c = np.sort(Cn @ R.T, axis=1)[:, ::-1][:, :knn].mean(axis=1)
        S = 2 * S - r_q[:, None] - r_c[None, :]
    idx = np.argsort(-S, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(S, idx, axis=1), idx


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((120, 16)), rng.standard_normal((2000, 16)), rng.standard_normal((300, 16))


@pytest.mark.parametrize("similarity", ["cosine", "csls"])
@pytest.mark.parametrize("tiny_blocks", [False, True])
def test_search_equals_the_dense_reference(data, similarity, tiny_blocks, monkeypatch):
    Q, C, _ = data
    if tiny_blocks:                   # many query and candidate blocks, merged across blocks
        monkeypatch.setattr(ls, "BLOCK_BYTES", 5000)
    s, i = Index(C, dtype=np.float64).search(Q, k=7, similarity=similarity, knn=5,
                                             block_size=13 if tiny_blocks else None)
    rs, ri = _dense(Q, C, 7, similarity, knn=5)
    np.testing.assert_array_equal(i, ri)
    np.testing.assert_allclose(s, rs, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("similarity", ["cosine", "csls"])
@pytest.mark.parametrize("tiny_blocks", [False, True])
def test_tied_scores_go_to_the_lower_row_as_documented(similarity, tiny_blocks, monkeypatch):
    """Documents that tie (duplicates) come lower row first: argpartition's arbitrary choice at
    the k-th place returned rows 0, 4, 12 of five copies at rows 0, 4, 8, 12, 16."""
    if tiny_blocks:
        monkeypatch.setattr(ls, "BLOCK_BYTES", 64)
    rng = np.random.default_rng(3)
    C = np.tile(np.eye(4), (5, 1))                        # row j equals rows j + 4, j + 8, ...
    Q = np.vstack([np.eye(4), rng.standard_normal((6, 4))])
    for k in (1, 2, 3, 7, len(C)):
        s, i = Index(C, dtype=np.float64).search(Q, k=k, similarity=similarity, knn=3)
        rs, ri = _dense(Q, C, k, similarity, knn=3)
        np.testing.assert_array_equal(i, ri)
        np.testing.assert_allclose(s, rs, rtol=1e-12, atol=1e-12)


def test_csls_with_a_reference_set(data):
    Q, C, R = data
    index = Index(C, dtype=np.float64).set_reference(R, knn=5)
    s, i = index.search(Q, k=4, similarity="csls", knn=5)
    rs, ri = _dense(Q, C, 4, "csls", knn=5, ref=R)
    np.testing.assert_array_equal(i, ri)
    np.testing.assert_allclose(s, rs, rtol=1e-12, atol=1e-12)


def test_ids_and_texts_are_checked_not_converted(data):
    """Duplicate labels (search_ids could not tell the documents apart), a single string taken
    character by character, and None stored as the text 'None' were all accepted in silence."""
    _, C, _ = data
    n = len(C)
    with pytest.raises(ValueError, match=r"ids\[2\] = '0' repeats ids\[0\]"):
        Index(C, ids=[0, 1, "0", *range(3, n)])
    with pytest.raises(TypeError, match="ids must be a sequence of labels"):
        Index(C[:3], ids="abc")
    with pytest.raises(TypeError, match=r"texts\[1\] is a NoneType, not a str"):
        Index(C[:2], texts=["a", None])
    with pytest.raises(TypeError, match="texts must be a list of str, not a single string"):
        Index(C[:3], texts="abc")


def test_from_texts_says_how_many_texts_embed_to_zero():
    import linxling
    X = ["the cat sat", "a dog ran", "the dog sat", "a cat ran"] * 5
    Y = ["le chat", "un chien", "le chien", "un chat"] * 5
    m = linxling.CLLSI(n_components=2, random_state=0).fit(X + Y, ["en"] * 20 + ["fr"] * 20, list(range(20)) * 2)
    with pytest.warns(UserWarning, match=r"2 of 3 texts have no word the model knows"):
        index = Index.from_texts(m, ["the cat", "", "zzz qqq"], "en")
    assert np.count_nonzero(np.any(index.vectors_ != 0, axis=1)) == 1


def test_from_texts_refuses_swapped_or_misshapen_arguments():
    """``from_texts(model, "fr", texts)`` ended in ``unhashable type: 'list'``; a single string was
    indexed as one document per character, a dict as one document (its keys) per language."""
    import linxling
    X = ["the cat sat", "a dog ran", "the dog sat", "a cat ran"] * 5
    Y = ["le chat", "un chien", "le chien", "un chat"] * 5
    m = linxling.CLLSI(n_components=2, random_state=0).fit(X + Y, ["en"] * 20 + ["fr"] * 20, list(range(20)) * 2)
    with pytest.raises(TypeError, match=r"language must be a str \(a language code\), got list: .*swapped"):
        Index.from_texts(m, "fr", Y)
    with pytest.raises(TypeError, match="texts must be a list of str, not a single string"):
        Index.from_texts(m, "le chat", "fr")
    with pytest.raises(TypeError, match="texts must be a list of str, got a dict"):
        Index.from_texts(m, {"fr": Y}, "fr")
    with pytest.raises(TypeError, match="texts must be a list of str, got a ndarray of shape"):
        Index.from_texts(m, np.ones((3, 2)), "fr")
    with pytest.raises(TypeError, match="model must be a fitted linxling model .*got list"):
        Index.from_texts(Y, m, "fr")
    with pytest.raises(TypeError, match="language must be a str"):
        Index(np.ones((2, 2)), language=["fr"])
    assert len(Index.from_texts(m, (t for t in Y[:4]), "fr")) == 4


def test_sparse_or_non_numeric_vectors_are_named():
    """A sparse matrix gave ``setting an array element with a sequence``, a model passed as the
    vectors ``float() argument must be ...``."""
    import scipy.sparse as sp
    V = np.eye(4)
    with pytest.raises(TypeError, match=r"vectors must be a dense array \(n, d\), got a sparse csr_matrix"):
        Index(sp.csr_matrix(V))
    with pytest.raises(TypeError, match=r"queries must be a dense array \(n, d\), got a sparse"):
        Index(V).search(sp.csr_matrix(V), 2)
    with pytest.raises(TypeError, match=r"vectors must be a 2-D array of numbers \(n, d\), got object"):
        Index(object())


def test_csls_takes_the_reference_knn_and_refuses_another(data):
    """The two radii of a CSLS score over one neighbourhood size: search defaults to the
    reference's knn, and another knn is an error (it mixed knn=5 radii with knn=10 ones)."""
    Q, C, R = data
    index = Index(C, dtype=np.float64).set_reference(R, knn=5)
    s, i = index.search(Q, k=4, similarity="csls")
    rs, ri = _dense(Q, C, 4, "csls", knn=5, ref=R)
    np.testing.assert_array_equal(i, ri)
    np.testing.assert_allclose(s, rs, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match=r"knn=10, but the index's CSLS reference radii were taken over knn=5"):
        index.search(Q, k=4, similarity="csls", knn=10)
    s10, i10 = Index(C, dtype=np.float64).search(Q, k=4, similarity="csls")      # no reference: 10
    rs10, ri10 = _dense(Q, C, 4, "csls", knn=10)
    np.testing.assert_array_equal(i10, ri10)


def test_csls_with_fewer_queries_than_knn_says_how_to_go_on(data):
    """Without a reference the queries give each document's radius: fewer queries than knn is
    an error that names the ways out; with a reference the same few queries are searched."""
    Q, C, R = data
    with pytest.raises(ValueError, match=r"knn=5 exceeds .*\(3\).*set_reference.*smaller knn"):
        Index(C, dtype=np.float64).search(Q[:3], k=2, similarity="csls", knn=5)
    s, i = Index(C, dtype=np.float64).set_reference(R, knn=5).search(Q[:3], k=2, similarity="csls", knn=5)
    rs, ri = _dense(Q, C, 2, "csls", knn=5, ref=R)
    np.testing.assert_array_equal(i, ri[:3])


def test_equals_faiss_flat_inner_product(data):
    faiss = pytest.importorskip("faiss", reason="faiss-cpu comes with the 'test' extra")
    Q, C, _ = data
    Cn = (C / np.linalg.norm(C, axis=1, keepdims=True)).astype(np.float32)
    Qn = (Q / np.linalg.norm(Q, axis=1, keepdims=True)).astype(np.float32)
    fi = faiss.IndexFlatIP(C.shape[1])
    fi.add(Cn)
    fs, fidx = fi.search(Qn, 10)
    s, i = search(Q, C, k=10)                       # float32, as FAISS
    np.testing.assert_allclose(s, fs, rtol=0, atol=1e-5)
    # the same documents in the same order, except where two scores tie to float32 rounding
    same = i == fidx
    assert same.mean() > 0.99
    for q, r in zip(*np.nonzero(~same), strict=True):
        assert abs(float(s[q, r]) - float(fs[q, r])) < 1e-5


def test_zero_rows_and_errors(data):
    Q, C, _ = data
    C = C.copy()
    C[3] = 0                                            # a document without any known word
    s, i = Index(C).search(Q[:5], k=len(C))
    assert np.all(s[i == 3] == 0)
    with pytest.raises(ValueError, match="k=2001 exceeds"):
        Index(C).search(Q, k=2001)
    with pytest.raises(ValueError, match="dimension 8, the index 16"):
        Index(C).search(Q[:, :8])
    with pytest.raises(ValueError, match="similarity must be"):
        Index(C).search(Q, similarity="l2")
    with pytest.raises(ValueError, match="NaN"):
        Index(np.full((3, 2), np.nan))
    with pytest.raises(ValueError, match="ids has 2 items"):
        Index(C, ids=["a", "b"])
    # NumPy's "data type 'flaot32' not understood" named no argument
    with pytest.raises(ValueError, match="dtype must be float32 or float64, got 'flaot32'"):
        Index(C, dtype="flaot32")
    with pytest.raises(ValueError, match="dtype must be float32 or float64, got 'flaot32'"):
        search(Q, C, dtype="flaot32")
    # np.dtype(None) is float64: None would have doubled the index's memory without a word
    with pytest.raises(ValueError, match="dtype must be float32 or float64, got None"):
        Index(C, dtype=None)


def test_vectors_that_are_not_real_numbers_are_named(data):
    """Complex vectors lost their imaginary part with only a ComplexWarning; strings and ragged
    rows gave NumPy's message, which names no argument; values beyond float32 were called NaN."""
    Q, C, _ = data
    with pytest.raises(TypeError, match=r"vectors must hold real numbers, got dtype complex128"):
        Index(C + 1j)
    with pytest.raises(TypeError, match=r"queries must hold real numbers, got dtype complex128"):
        Index(C).search(Q + 1j)
    with pytest.raises(TypeError, match=r"vectors must hold real numbers.*<U1"):
        Index([["a", "b"]])
    with pytest.raises(ValueError, match=r"vectors must be a 2-D array of numbers.*inhomogeneous"):
        Index([[1.0, 2.0], [3.0]])
    with pytest.raises(ValueError, match=r"vectors has values too large for float32: give dtype=float64"):
        Index(np.full((3, 4), 1e300))




def test_texts_given_for_vectors_say_to_embed_them(data):
    """A newcomer's index.search(["a query"]) said "queries must hold real numbers, got dtype
    <U9": texts where vectors go are named as texts, with the way to embed them."""
    _, C, _ = data
    with pytest.raises(TypeError, match=r"queries holds texts, but embedding vectors \(n, d\) go here: "
                                        r"embed them first, e\.g\. model\.transform\(texts, language\) "
                                        r"\(Index\.from_texts and add_texts take texts"):
        Index(C).search(["a query", "another"])
    for texts in (["doc one", "doc two"], np.array(["doc one", "doc two"]), "doc one"):
        with pytest.raises(TypeError, match="vectors holds texts"):
            Index(texts)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rows_of_any_finite_size_are_normalised(dtype):
    """The sum of squares overflowed (rows of 1e20 in float32, 1e200 in float64 became zero rows,
    cosine 0 to everything) or underflowed (rows of 1e-25 in float32 stayed tiny, not unit)."""
    big, small = (1e20, 1e-25) if dtype == np.float32 else (1e200, 1e-200)
    C = np.array([[big, 0, 0], [0, small, small], [0, 0, 0], [1, 1, 1]])
    index = Index(C, dtype=dtype)
    np.testing.assert_allclose(np.linalg.norm(index.vectors_.astype(np.float64), axis=1), [1, 1, 0, 1],
                               rtol=1e-6)
    s, i = index.search([[0, 1, 1]], k=2)
    assert i.tolist() == [[1, 3]] and np.isclose(s[0, 0], 1.0, rtol=1e-6)


def test_index_file_round_trip(data, tmp_path):
    Q, C, R = data
    index = Index(C, ids=[f"d{j}" for j in range(len(C))], texts=[f"text {j}" for j in range(len(C))],
                  language="es").set_reference(R, knn=5)
    index.save(tmp_path / "i.h5")
    back = Index.load(tmp_path / "i.h5")
    assert back.language == "es" and back.ids[:2] == ["d0", "d1"] and back.texts[5] == "text 5"
    for sim in ("cosine", "csls"):
        a, b = index.search(Q, k=3, similarity=sim, knn=5), back.search(Q, k=3, similarity=sim, knn=5)
        np.testing.assert_array_equal(a[1], b[1])
        np.testing.assert_array_equal(a[0], b[0])
    _, ids = back.search_ids(Q[:2], k=2)
    assert all(isinstance(x, str) and x.startswith("d") for row in ids for x in row)


@pytest.mark.parametrize("field", ["ids", "texts"])
def test_a_trailing_nul_is_refused_on_save_not_dropped(tmp_path, field):
    """NumPy's str arrays drop trailing NULs: ids 'c\\x00' came back as 'c' (a NUL inside was
    already refused by the store, which HDF5 cannot hold)."""
    values = ["a", "b", "c\x00"]
    index = Index(np.eye(3), **{field: values})
    with pytest.raises(ValueError, match=rf"arrays/{field} contains strings with NUL"):
        index.save(tmp_path / "i.h5")
    assert not (tmp_path / "i.h5").exists()


def _parallel_lines(n: int, words: int, seed: int) -> tuple[list[str], list[str]]:
    """``n`` English-like lines of six words ``w<i>`` and their "Spanish" translations ``p<i>``."""
    rng = np.random.default_rng(seed)
    ids = [rng.integers(0, words, size=6) for _ in range(n)]
    return [" ".join(f"w{i}" for i in row) for row in ids], [" ".join(f"p{i}" for i in row) for row in ids]


def test_cli_index_and_search_find_translations(tmp_path, monkeypatch, capsys):
    """linxling index / search on a small parallel corpus: each English query's Spanish
    translation is its top document (the same ranking as Index.search on the model's vectors)."""
    import linxling
    from linxling.cli import main
    en, es = _parallel_lines(150, 60, seed=1)
    (tmp_path / "en.txt").write_text("\n".join(en) + "\n", encoding="utf-8")
    (tmp_path / "es.txt").write_text("\n".join(es) + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["--no-progress", "fit", "cr5", "--input", "en.txt", "es.txt", "--output", "m.h5",
                 "--n-components", "20", "--min-df", "1", "--doc-filter", "none", "--random-state", "0"]) == 0
    assert main(["--no-progress", "index", "m.h5", "es", "es.txt", "es_index.h5"]) == 0
    capsys.readouterr()
    assert main(["--no-progress", "search", "es_index.h5", "en", "en.txt", "--k", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "query\trank\tscore\tdocument\ttext" and len(out) == 1 + 3 * 150
    top = {int(r[0]): int(r[3]) for r in (line.split("\t") for line in out[1:]) if r[1] == "1"}
    assert np.mean([top[q] == q for q in top]) > 0.9
    m = linxling.load(tmp_path / "m.h5")
    _, idx = Index(m.transform(es, "es")).search(m.transform(en, "en"), k=1)
    assert [top[q] for q in sorted(top)] == list(idx[:, 0] + 1)
    capsys.readouterr()
    assert main(["--no-progress", "search", "es_index.h5", "en", "en.txt", "--k", "1000"]) == 0
    out, err = capsys.readouterr()                # was: 150 rows a query, in silence
    assert len(out.splitlines()) == 1 + 150 * 150
    assert "--k 1000 is more than the index's 150 documents: each query ranks all 150" in err
    assert main(["info", "es_index.h5"]) == 0
    assert "search index of 150 es documents" in capsys.readouterr().out
    assert main(["search", "m.h5", "en", "en.txt"]) == 2
    assert "not a search index" in capsys.readouterr().err


def test_csls_radii_take_the_documents_in_large_blocks(monkeypatch):
    """The CSLS radii of the documents (against the queries, or a reference) are computed over
    blocks of documents sized by the other side's count: 100 queries no longer take the
    documents 100 at a time (one kernel launch and sort per 100 documents: 10 s for 20,000)."""
    from linxling.evaluate import _retrieval
    rng = np.random.default_rng(5)
    index = Index(rng.standard_normal((5000, 8)))
    blocks = []
    radii = _retrieval._csls_radii_numpy

    def recorded(A, B, knn, bs, *args, **kwargs):
        blocks.append((A.shape[0], bs))
        return radii(A, B, knn, bs, *args, **kwargs)
    monkeypatch.setattr(_retrieval, "_csls_radii_numpy", recorded)
    queries = rng.standard_normal((100, 8))
    scores, ids = index.search(queries, k=3, similarity="csls")
    index.set_reference(rng.standard_normal((300, 8)))
    assert blocks == [(5000, 4096), (5000, 4096)]
    # the scores are CSLS's: 2 cos - r_q - r_c, with r_c over the queries
    Qn = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    cos = Qn @ (index.vectors_.astype(np.float64)).T
    r_c = np.sort(cos, axis=0)[-10:].mean(axis=0)
    r_q = np.sort(cos, axis=1)[:, -10:].mean(axis=1)
    want = 2 * cos - r_q[:, None] - r_c[None, :]
    np.testing.assert_allclose(scores, np.take_along_axis(want, ids, axis=1), atol=1e-5)


def test_search_names_candidates_and_a_swapped_k():
    """search(queries, k, candidates) said "vectors must be a non-empty 2-D array (n, d), got
    shape ()", naming an argument of Index, not of search."""
    Q, C = np.ones((3, 4)), np.random.default_rng(0).random((10, 4))
    with pytest.raises(ValueError, match=r"candidates must be a 2-D array .* were candidates and k swapped"):
        search(Q, 5, C)
    with pytest.raises(ValueError, match=r"candidates must be a 2-D array \(n, d\), got list of 1 dimension"):
        search(Q, [1.0, 2.0])
    with pytest.raises(ValueError, match=r"got int of 0 dimension\(s\); a count where the candidates go\?"):
        search(Q, 3)                                    # the candidates forgotten


def _in_a_fresh_process(code: str, path):
    """Run ``code`` with ``sys.argv[1] = path`` in a new Python process (linxling from this
    checkout, nothing imported before it); the CompletedProcess."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import linxling
    env = dict(os.environ, PYTHONPATH=str(Path(linxling.__file__).resolve().parents[1]), LINXLING_NO_PROGRESS="1")
    return subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env,
                          timeout=120)


def test_an_index_file_loads_in_a_fresh_process_and_is_not_taken_for_a_model(tmp_path, capsys):
    """`linxling info idx.h5` worked only in a process that had imported linxling.search (as the
    test above): in a fresh one linxling.load said "unknown model 'SearchIndex' ... load it with
    linxling.load(path)". linxling.load now registers the index; `embed` / `export` given an
    index say it is one (and name its model) instead of 'got Index'."""
    from linxling.cli import main
    index = Index(np.random.default_rng(0).standard_normal((5, 3)), texts=list("abcde"))
    index.model_path = "/somewhere/model.h5"
    index.save(tmp_path / "idx.h5")
    out = _in_a_fresh_process("import sys, linxling\nobj = linxling.load(sys.argv[1])\n"
                              "print(type(obj).__module__, len(obj))\n"
                              "from linxling.cli import main\nsys.exit(main(['info', sys.argv[1]]))",
                              tmp_path / "idx.h5")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["linxling.search 5",
                                       "search index of 5 documents, d = 3; model: /somewhere/model.h5"]
    (tmp_path / "q.txt").write_text("a\n", encoding="utf-8")
    for argv in (["embed", str(tmp_path / "idx.h5"), "en", str(tmp_path / "q.txt"), str(tmp_path / "e.npy")],
                 ["export", str(tmp_path / "idx.h5"), "en", str(tmp_path / "v.txt")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "idx.h5 is a search index (written by linxling index), not a model; its model is " \
               "/somewhere/model.h5" in err, err


def test_int_ids_come_back_as_ints_from_a_saved_index(tmp_path):
    """A saved index gave int ids (database keys, line numbers) back as strs: search_ids
    returned [[0, 6]] before save and [['0', '6']] after load, so joins on the ids missed in
    silence. Ints stay ints, strs strs; other labels are saved as their str() as before."""
    C = np.random.default_rng(0).standard_normal((20, 4))
    for ids, back in ((list(range(100, 120)), list(range(100, 120))),
                      (np.arange(20, dtype=np.int32), list(range(20))),
                      ([f"d{j}" for j in range(20)], [f"d{j}" for j in range(20)]),
                      ([*range(19), "x"], [*map(str, range(19)), "x"]),      # mixed: str as before
                      ([2 ** 64 + j for j in range(20)], [str(2 ** 64 + j) for j in range(20)])):
        Index(C, ids=ids).save(tmp_path / "i.h5")
        loaded = Index.load(tmp_path / "i.h5")
        assert loaded.ids == back and [type(x) for x in loaded.ids] == [type(x) for x in back]
    index = Index(C, ids=[int(j) * 7 for j in range(20)])
    index.save(str(tmp_path / "j.h5"))
    (s0, ids0), (s1, ids1) = index.search_ids(C[:2], k=3), Index.load(str(tmp_path / "j.h5")).search_ids(C[:2], k=3)
    assert ids1 == ids0 and all(type(x) is int for row in ids1 for x in row)
    np.testing.assert_array_equal(s1, s0)


def test_index_load_refuses_a_model_file_from_its_header(tmp_path):
    """Index.load of a model file loaded the whole model, then raised TypeError; it is a
    ModelFormatError (as Cr5.load of an index file) and reads the header only. The other way
    round, CLLSI.load of an index file advised "SearchIndex.load(path)", a class that does not
    exist: it names linxling.search.Index."""
    import linxling
    from linxling.io import ModelFormatError
    X = ["the cat sat", "a dog ran", "the dog sat", "a cat ran"] * 5
    Y = ["le chat", "un chien", "le chien", "un chat"] * 5
    m = linxling.CLLSI(n_components=2, random_state=0).fit(X + Y, ["en"] * 20 + ["fr"] * 20, list(range(20)) * 2)
    m.save(tmp_path / "m.h5")
    with pytest.raises(ModelFormatError, match=r"m\.h5 holds a CLLSI model, not a search index"):
        Index.load(tmp_path / "m.h5")
    index = Index(np.eye(3))
    index.save(tmp_path / "i.h5")
    # the advice names a class that exists, not the store's tag "SearchIndex"
    with pytest.raises(ModelFormatError, match=r"i\.h5 holds a linxling\.search\.Index, not a CLLSI model: load it "
                                               r"with linxling\.load\(path\) or linxling\.search\.Index\.load\(path\)"):
        linxling.CLLSI.load(tmp_path / "i.h5")


def test_a_model_class_load_of_an_index_names_the_index_class_in_a_fresh_process(tmp_path):
    """The test above runs where linxling.search is imported; in a fresh process ``Cr5.load`` of
    an index file still advised "SearchIndex.load(path)", the store's tag and no class."""
    Index(np.eye(3)).save(tmp_path / "i.h5")
    out = _in_a_fresh_process("import sys, linxling\ntry:\n    linxling.Cr5.load(sys.argv[1])\n"
                              "except linxling.io.ModelFormatError as exc:\n    print(exc)", tmp_path / "i.h5")
    assert out.returncode == 0, out.stderr
    assert "holds a linxling.search.Index, not a Cr5 model: load it with linxling.load(path) or " \
           "linxling.search.Index.load(path)" in out.stdout, out.stdout


def _crafted_index(tmp_path, params, arrays):
    import json

    import h5py
    from test_io import _reseal
    path = tmp_path / "i.h5"
    Index(np.eye(3), ids=["a", "b", "c"]).save(path)
    with h5py.File(path, "a") as f:
        p = json.loads(f.attrs["params"])
        p.update(params)
        f.attrs["params"] = json.dumps(p)
        del f.attrs["params_crc32"]
        for k, v in arrays.items():
            if k in f["arrays"]:
                del f["arrays"][k]
            ds = f["arrays"].create_dataset(k, data=v)
            ds.attrs["kind"] = "array"
    _reseal(path)
    return path


@pytest.mark.parametrize("params,arrays,msg", [
    ({"dtype": "int8"}, {}, r"arrays/vectors has dtype float32 \(params dtype int8\)"),
    ({}, {"vectors": np.ones(3)}, r"arrays/vectors has shape \(3,\)"),
    ({}, {"vectors": np.full((3, 2), np.nan)}, "NaN or infinite"),
    ({}, {"vectors": np.arange(6).reshape(3, 2)}, "dtype int64"),
    ({}, {"ids": np.arange(5)}, r"arrays/ids has shape \(5,\), but arrays/vectors has 3 rows"),
    ({"ids_kind": "int"}, {"ids": np.ones(3)}, "arrays/ids has dtype float64, but the index saved int ids"),
    ({"reference_knn": 2}, {"reference_radii": np.ones(5)}, r"reference_radii has shape \(5,\)"),
    ({"reference_knn": None}, {"reference_radii": np.ones(3)}, "reference_knn is None"),
    ({"language": 5}, {}, "language is 5, not a str"),
    ({"reference_knn": 2}, {"reference_radii": np.ones(3), "reference": np.ones((4, 2))},
     r"arrays/reference has shape \(4, 2\)"),
    ({"reference_knn": 2}, {"reference_radii": np.ones(3), "reference": np.ones((1, 3))},
     r"at least reference_knn = 2 finite rows"),
])
def test_an_inconsistent_index_file_is_refused_naming_it(tmp_path, params, arrays, msg):
    """A crafted index file loaded and then failed at its first search (IndexError, 'not
    inexact'), answered NaN scores, or kept more ids than rows."""
    from linxling.io import ModelFormatError
    path = _crafted_index(tmp_path, params, arrays)
    with pytest.raises(ModelFormatError, match=msg) as err:
        Index.load(path)
    assert str(path) in str(err.value)


def _same_search(a, b, Q, k=5, knn=5, exact=False):
    for sim in ("cosine", "csls"):
        sa, ia = a.search(Q, k=k, similarity=sim, knn=knn)
        sb, ib = b.search(Q, k=k, similarity=sim, knn=knn)
        np.testing.assert_array_equal(ia, ib)
        if exact:
            np.testing.assert_array_equal(sa, sb)
        else:   # the radii of added rows come from other GEMM blocks: equal to rounding, a few
            # units of the stored dtype's rounding in scores of order one (2 cos - r_q - r_c)
            tol = max(1e-12, 16 * float(np.finfo(sa.dtype).eps))
            np.testing.assert_allclose(sa, sb, rtol=tol, atol=tol)


def test_add_in_pieces_equals_an_index_of_everything(data):
    """An index grown by add (one row, then batches), with ids, texts and a CSLS reference,
    searches as the index built from all the documents at once."""
    Q, C, R = data
    ids = [f"d{j}" for j in range(len(C))]
    texts = [f"text {j}" for j in range(len(C))]
    whole = Index(C, ids=ids, texts=texts, dtype=np.float64).set_reference(R, knn=5)
    grown = Index(C[:1], ids=ids[:1], texts=texts[:1], dtype=np.float64).set_reference(R, knn=5)
    for a, b in [(1, 2), (2, 30), (30, 31), (31, 900), (900, len(C))]:
        assert grown.add(C[a:b], ids=ids[a:b], texts=texts[a:b]) is grown
    assert len(grown) == len(C) and grown.ids == ids and grown.texts == texts
    np.testing.assert_allclose(grown.reference_radii_, whole.reference_radii_, rtol=1e-13, atol=1e-13)
    _same_search(whole, grown, Q)
    assert grown.search_ids(Q[:3], k=2)[1] == whole.search_ids(Q[:3], k=2)[1]
    plain = Index(C[:10], dtype=np.float64).add(C[10:])        # no ids: the next row numbers
    _same_search(Index(C, dtype=np.float64), plain, Q, exact=True)


def test_add_keeps_spare_room_and_earlier_views_intact(data):
    """Adding a row at a time does not copy the whole index per call (the rows live in a block
    with spare room); a view of vectors_ taken earlier keeps its rows."""
    _, C, _ = data
    index = Index(C[:100], dtype=np.float64)
    first = index.vectors_
    copies = 0
    for j in range(100, 400):
        before = index.vectors_
        index.add(C[j:j + 1])
        copies += not np.shares_memory(before, index.vectors_)
    assert copies <= 5, copies                 # growth by half the size: a handful of copies
    np.testing.assert_array_equal(first, Index(C[:100], dtype=np.float64).vectors_)
    np.testing.assert_array_equal(index.vectors_, Index(C[:400], dtype=np.float64).vectors_)


def test_a_grown_index_saves_and_adds_after_loading(data, tmp_path):
    Q, C, R = data
    ids = list(range(len(C)))
    index = Index(C[:500], ids=ids[:500], language="es").set_reference(R, knn=5).add(C[500:800], ids=ids[500:800])
    index.save(tmp_path / "i.h5")
    back = Index.load(tmp_path / "i.h5")
    np.testing.assert_array_equal(back.reference_, index.reference_)
    back.add(C[800:], ids=ids[800:])
    index.add(C[800:], ids=ids[800:])
    _same_search(index, back, Q, exact=True)
    assert back.ids == ids


def test_a_pickled_grown_index_leaves_its_spare_room_behind(data):
    """pickle (and joblib) wrote a grown index's spare room of add beside its rows, a copy of
    them apart: 2.5 times the index, as large again in memory once loaded; copy.copy shared it,
    so the copy's rows changed when the original grew. The pickle of a grown index is now that
    of the same index built at once, and it searches and grows as before."""
    import copy
    import io
    import pickle

    import joblib
    Q, C, R = data
    ids = list(range(len(C)))
    grown = Index(C[:500], ids=ids[:500]).set_reference(R, knn=5).add(C[500:800], ids=ids[500:800])
    whole = Index(C[:800], ids=ids[:800]).set_reference(R, knn=5)
    assert grown._spare is not None and grown._spare.shape[0] > 800
    size_grown, size_whole = len(pickle.dumps(grown)), len(pickle.dumps(whole))
    assert size_grown < 1.05 * size_whole, (size_grown, size_whole)
    buf = io.BytesIO()
    joblib.dump(grown, buf)
    for back in (pickle.loads(pickle.dumps(grown)), joblib.load(io.BytesIO(buf.getvalue())), copy.deepcopy(grown)):
        assert back._spare is None and back.ids == grown.ids
        _same_search(grown, back, Q, exact=True)
        back.add(C[800:], ids=ids[800:])
        _same_search(Index(C, ids=ids).set_reference(R, knn=5), back, Q)
    assert grown._spare is not None and len(grown) == 800      # the pickled index keeps its own
    # copy.copy shared the spare block and the ids: the copy's next add and the original's wrote
    # the same rows, and both added their labels to one list
    twin = copy.copy(grown)
    twin.add(C[800:801], ids=[800])
    grown.add(C[900:901], ids=[900])
    np.testing.assert_array_equal(twin.vectors_[800], Index(C[800:801]).vectors_[0])
    np.testing.assert_array_equal(grown.vectors_[800], Index(C[900:901]).vectors_[0])
    assert twin.ids == [*ids[:801]] and grown.ids == [*ids[:800], 900]     # the ids list was shared too


def test_add_refuses_what_does_not_fit_and_changes_nothing(data):
    Q, C, R = data
    index = Index(C[:50], ids=[f"d{j}" for j in range(50)], texts=["t"] * 50,
                  dtype=np.float64).set_reference(R, knn=5)
    snapshot = (index.vectors_.copy(), list(index.ids), list(index.texts), index.reference_radii_.copy())
    bad = [
        (dict(vectors=C[50:52], ids=None, texts=["a", "b"]), ValueError, "the index has ids"),
        (dict(vectors=C[50:52], ids=["x", "y"], texts=None), ValueError, "keeps its documents' texts"),
        (dict(vectors=C[50:52], ids=["x", "d3"], texts=["a", "b"]), ValueError,
         r"ids\[1\] = 'd3' is already in the index \(row 3\)"),
        (dict(vectors=C[50:52], ids=["x", "x"], texts=["a", "b"]), ValueError, r"ids\[1\] = 'x' repeats"),
        (dict(vectors=C[50:52], ids=["x"], texts=["a", "b"]), ValueError, "ids has 1 items but vectors has 2"),
        (dict(vectors=C[50:52, :8], ids=["x", "y"], texts=["a", "b"]), ValueError, "dimension 8, the index 16"),
        (dict(vectors=np.array([[np.nan] * 16]), ids=["x"], texts=["a"]), ValueError, "NaN"),
        (dict(vectors=C[50:52], ids=["x", "y"], texts=["a", None]), TypeError, r"texts\[1\]"),
    ]
    for kwargs, exc, msg in bad:
        with pytest.raises(exc, match=msg):
            index.add(kwargs.pop("vectors"), **kwargs)
        np.testing.assert_array_equal(index.vectors_, snapshot[0])
        assert index.ids == snapshot[1] and index.texts == snapshot[2]
        np.testing.assert_array_equal(index.reference_radii_, snapshot[3])
    with pytest.raises(ValueError, match="built without ids"):
        Index(C[:5]).add(C[5:6], ids=["a"])
    with pytest.raises(ValueError, match="built without texts"):
        Index(C[:5]).add(C[5:6], texts=["a"])
    old = Index(C[:50], dtype=np.float64).set_reference(R, knn=5)
    old.reference_ = None                  # as loaded from a file saved before add existed
    with pytest.raises(ValueError, match="call set_reference again"):
        old.add(C[50:51])


def test_remove_equals_an_index_without_those_documents(data):
    Q, C, R = data
    ids = [f"d{j}" for j in range(len(C))]
    gone = [5, 0, 1999, 700]
    keep = [j for j in range(len(C)) if j not in gone]
    index = Index(C, ids=ids, texts=ids, dtype=np.float64).set_reference(R, knn=5)
    assert index.remove([ids[j] for j in gone]) is index
    rebuilt = Index(C[keep], ids=[ids[j] for j in keep], texts=[ids[j] for j in keep],
                    dtype=np.float64).set_reference(R, knn=5)
    assert index.ids == rebuilt.ids and index.texts == rebuilt.texts
    _same_search(index, rebuilt, Q)
    index.add(C[gone[:1]], ids=["d5"], texts=["d5"])          # a removed label may come back
    assert index.ids[-1] == "d5"
    plain = Index(C[:10], dtype=np.float64).remove([0, 9])    # no ids: row numbers
    np.testing.assert_array_equal(plain.vectors_, Index(C[1:9], dtype=np.float64).vectors_)


def test_remove_refuses_unknown_repeated_or_all_and_changes_nothing(data):
    _, C, _ = data
    index = Index(C[:4], ids=[10, 11, 12, 13])
    before = index.vectors_.copy()
    for wanted, msg in [([11, 99], r"ids\[1\] = 99 is not in the index"), ([11, 11], r"ids\[1\] = 11 repeats"),
                        ([10, 11, 12, 13], "leave the index empty")]:
        with pytest.raises(ValueError, match=msg):
            index.remove(wanted)
        np.testing.assert_array_equal(index.vectors_, before)
        assert index.ids == [10, 11, 12, 13]
    with pytest.raises(TypeError, match="ids must be a sequence of labels"):
        index.remove(11)
    for bad in ([4], [-1], [True], ["0"]):
        with pytest.raises(ValueError, match="not a row of the index"):
            Index(C[:4]).remove(bad)


def test_add_texts_embeds_with_the_model():
    import linxling
    X = ["the cat sat", "a dog ran", "the dog sat", "a cat ran"] * 5
    Y = ["le chat", "un chien", "le chien", "un chat"] * 5
    m = linxling.CLLSI(n_components=2, random_state=0).fit(X + Y, ["en"] * 20 + ["fr"] * 20, list(range(20)) * 2)
    index = Index.from_texts(m, ["le chat", "un chien"], "fr", ids=["a", "b"])
    index.add_texts(m, ["le chien"], ids=["c"])
    whole = Index.from_texts(m, ["le chat", "un chien", "le chien"], "fr", ids=["a", "b", "c"])
    np.testing.assert_array_equal(index.vectors_, whole.vectors_)
    assert index.texts == whole.texts and index.ids == ["a", "b", "c"]
    with pytest.raises(ValueError, match="the index has no language"):
        Index(index.vectors_).add_texts(m, ["le chat"])


def test_cli_index_append_equals_an_index_of_both_files(tmp_path, monkeypatch, capsys):
    """``linxling index --append`` adds a second file's lines, numbered after the first's, to an
    index with a CSLS reference: the same results as the index of both files at once; what
    cannot be appended is refused before the file changes."""
    from linxling.cli import main
    en, es = _parallel_lines(120, 50, seed=2)
    for name, lines in [("en.txt", en), ("es.txt", es), ("es1.txt", es[:70]), ("es2.txt", es[70:])]:
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    run = ["--no-progress"]
    assert main(run + ["fit", "cr5", "--input", "en.txt", "es.txt", "--output", "m.h5", "--n-components", "16",
                       "--min-df", "1", "--doc-filter", "none", "--random-state", "0"]) == 0
    assert main(run + ["index", "m.h5", "es", "es.txt", "all.h5", "--reference", "en", "en.txt", "--knn", "5"]) == 0
    assert main(run + ["index", "m.h5", "es", "es1.txt", "grown.h5", "--reference", "en", "en.txt", "--knn", "5"]) == 0
    capsys.readouterr()
    assert main(run + ["index", "m.h5", "es", "es2.txt", "grown.h5", "--append"]) == 0
    assert "appended 50 documents to grown.h5 as documents 71-120 (120 in all)" in capsys.readouterr().err
    outs = []
    for index in ("all.h5", "grown.h5"):
        assert main(run + ["search", index, "en", "en.txt", "--k", "3", "--similarity", "csls"]) == 0
        outs.append([line.split("\t") for line in capsys.readouterr().out.splitlines()])
    assert [r[:2] + r[3:] for r in outs[0]] == [r[:2] + r[3:] for r in outs[1]]
    np.testing.assert_allclose([float(r[2]) for r in outs[0][1:]], [float(r[2]) for r in outs[1][1:]], atol=2e-6)
    before = (tmp_path / "grown.h5").read_bytes()
    for extra, msg in [(["--reference", "en", "en.txt"], "--append keeps the index's CSLS reference"),
                       (["--knn", "3"], "--knn applies with --reference only")]:
        assert main(run + ["index", "m.h5", "es", "es2.txt", "grown.h5", "--append"] + extra) == 2
        assert msg in capsys.readouterr().err
    assert main(run + ["index", "m.h5", "en", "en.txt", "grown.h5", "--append"]) == 2
    assert "indexes es documents, not en" in capsys.readouterr().err
    assert main(run + ["index", "m.h5", "es", "es2.txt", "none.h5", "--append"]) == 2
    assert "no such index file to append to" in capsys.readouterr().err
    (tmp_path / "m2.h5").write_bytes((tmp_path / "m.h5").read_bytes())
    assert main(run + ["index", "m2.h5", "es", "es2.txt", "grown.h5", "--append"]) == 2
    assert "was built with the model" in capsys.readouterr().err
    assert (tmp_path / "grown.h5").read_bytes() == before


def test_repr_says_what_the_index_holds():
    """It printed as <linxling.search.Index object at 0x...>."""
    rng = np.random.default_rng(0)
    idx = Index(rng.normal(size=(5, 3)), language="en")
    assert repr(idx) == "Index(n_documents=5, dim=3, dtype=float32, language='en')"
    idx.set_reference(rng.normal(size=(4, 3)), knn=2)
    assert repr(idx) == "Index(n_documents=5, dim=3, dtype=float32, language='en', csls_reference=knn 2)"


def test_cli_search_keeps_one_row_per_result_for_texts_with_line_breaks(tmp_path, monkeypatch, capsys):
    """An index made in Python may hold a text with a line break and an id with a tab: linxling
    search printed them raw, so a result spread over two rows or six fields."""
    import linxling
    from linxling.cli import main
    en, es = _parallel_lines(60, 40, seed=2)
    model = linxling.Cr5(n_components=5, min_df=1, random_state=0, show_progress=False).fit({"en": en, "es": es})
    model.save(tmp_path / "m.h5")
    model = linxling.load(tmp_path / "m.h5")
    texts = [t.replace(" ", "\n", 1) if i % 2 else t for i, t in enumerate(es)]
    ids = [f"doc\t{i}" for i in range(len(es))]
    Index.from_texts(model, texts, "es", ids=ids).save(tmp_path / "i.h5")
    (tmp_path / "q.txt").write_text("\n".join(en[:3]) + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["--no-progress", "search", "i.h5", "en", "q.txt", "--k", "4", "--model", "m.h5"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert len(rows) == 1 + 3 * 4
    fields = [r.split("\t", 4) for r in rows[1:]]
    assert all(len(f) == 5 and f[3].startswith("doc\\t") for f in fields)
    by_id = {f"doc\\t{i}": t.replace("\n", "\\n") for i, t in enumerate(texts)}
    assert all(f[4] == by_id[f[3]] for f in fields)
