"""The Wikipedia-shaped synthetic generator used by the scale benchmarks (issue #11)."""
import numpy as np
import pytest

from benchmarks.wiki_synth import wiki_corpus


def test_shape_weighting_and_determinism():
    kw = dict(n_languages=3, vocab_size=5000, median_unique=60, min_unique=20, max_unique=200,
              min_df=3, chunk_docs=170, seed=7)
    blocks, concepts = wiki_corpus(600, **kw)
    again, _ = wiki_corpus(600, **kw)
    other, _ = wiki_corpus(600, **{**kw, "seed": 8})
    assert sorted(blocks) == ["l0", "l1", "l2"]
    for lang, X in blocks.items():
        assert X.shape[0] == 600 and X.shape[1] <= 5000
        np.testing.assert_array_equal(concepts[lang], np.arange(600))
        # deterministic for a seed, different for another
        assert (X != again[lang]).nnz == 0
        assert X.shape != other[lang].shape or (X != other[lang]).nnz > 0
        # tf-idf rows are L2-normalised, min_df holds on every kept column
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        np.testing.assert_allclose(norms, 1.0, rtol=1e-12)
        assert np.bincount(X.indices, minlength=X.shape[1]).min() >= 3
        assert (X.data > 0).all() and X.has_sorted_indices
        # unique words per document: within the clip range before min_df, median near the target
        per_doc = np.diff(X.indptr)
        assert per_doc.max() <= 200
        assert 40 <= np.median(per_doc) <= 70


def test_topic_words_shared_across_languages():
    blocks, _ = wiki_corpus(400, n_languages=2, vocab_size=20000, median_unique=80, min_unique=30,
                            max_unique=300, topic_fraction=0.5, min_df=0, seed=1)  # all columns kept: ids align
    A, B = blocks["l0"], blocks["l1"]
    # same-concept documents share more columns (topic word ids are shared) than shifted pairs
    same = np.mean([len(np.intersect1d(A[i].indices, B[i].indices)) for i in range(100)])
    shifted = np.mean([len(np.intersect1d(A[i].indices, B[(i + 200) % 400].indices)) for i in range(100)])
    assert same > 2 * shifted


def test_bad_parameters():
    with pytest.raises(ValueError, match="topic_fraction"):
        wiki_corpus(10, topic_fraction=1.5)
    with pytest.raises(ValueError, match="oversample"):
        wiki_corpus(10, oversample=0.5)


def test_multilingual_corpus_sizes_and_overlap():
    from benchmarks.wiki_synth import PAPER_SIZES, multilingual_corpus
    kw = dict(vocab_size=5000, median_unique=60, min_unique=30, max_unique=200, min_df=1)
    blocks, concepts = multilingual_corpus(6000, seed=3, **kw)
    again, concepts2 = multilingual_corpus(6000, seed=3, **kw)
    assert list(blocks) == list(PAPER_SIZES)
    for lang, X in blocks.items():
        ids = concepts[lang]
        assert X.shape[0] == len(ids) and np.all(np.diff(ids) > 0)
        assert (X != again[lang]).nnz == 0 and np.array_equal(ids, concepts2[lang])
    # every kept concept is covered by at least two languages (the paper's joint training)
    allc = np.concatenate(list(concepts.values()))
    _, n = np.unique(allc, return_counts=True)
    assert n.min() >= 2
    # the languages keep the order of their Wikipedias' sizes, Danish the smallest
    n_docs = {lang: X.shape[0] for lang, X in blocks.items()}
    assert n_docs["en"] >= n_docs["it"] >= n_docs["vi"] >= n_docs["da"] > 0
    with pytest.raises(ValueError, match="sizes must be positive"):
        multilingual_corpus(3, **kw)
    with pytest.raises(TypeError, match="unknown document-model arguments"):
        multilingual_corpus(100, colour="blue")


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_write_multilingual_corpus_streams_the_same_matrices(tmp_path, n_jobs):
    """The streamed writer (for corpora larger than memory) gives exactly the in-memory matrices."""
    from benchmarks.wiki_synth import multilingual_corpus, write_multilingual_corpus
    from linxling.io import ChunkedCSR
    kw = dict(vocab_size=3000, median_unique=50, min_unique=20, max_unique=200, min_df=2, chunk_docs=97,
              dtype=np.float32)
    blocks, concepts = multilingual_corpus(2400, seed=5, **kw)
    done = write_multilingual_corpus(tmp_path, 2400, seed=5, chunk_rows=64, n_jobs=n_jobs, **kw)
    assert list(done) == list(blocks)
    for lang, X in blocks.items():
        C = ChunkedCSR(tmp_path / f"{lang}.h5")
        assert done[lang][:2] == (X.shape[0], X.nnz)
        assert C.shape == X.shape and C.dtype == np.float32 and np.diff(C.bounds).max() <= 64
        Y = C.to_csr()
        np.testing.assert_array_equal(Y.indptr, X.indptr)
        np.testing.assert_array_equal(Y.indices, X.indices)
        np.testing.assert_array_equal(Y.data, X.data)                   # bitwise
        assert (C.T.to_csr() != X.T.tocsr()).nnz == 0
        np.testing.assert_array_equal(np.load(tmp_path / f"{lang}.concepts.npy"), concepts[lang])
    assert not list(tmp_path.glob(".*counts*"))                          # the temporary counts are gone
