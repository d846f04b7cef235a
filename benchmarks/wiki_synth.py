"""Wikipedia-shaped synthetic corpora for Cr5 scale runs (issue #11).

For **scale runs only** (time and memory at a given size): the documents carry no language, so
nothing measured on them says anything about embedding quality.

Shape (defaults follow issue #11's English-Italian row): ``n_languages`` languages, each with its
own vocabulary of ``vocab_size`` words; one document per concept and language. A document has a
lognormal number of *unique* words (median ``median_unique``, clipped to the paper's
``[min_unique, max_unique]`` = [50, 1000]), drawn as a mixture of

* background words, Zipf(``zipf_s``) over the language's vocabulary, and
* topic words: every concept belongs to one of ``n_topics`` topics; a topic owns
  ``topic_words`` word ids, the same ids in every language (so the documents of one concept are
  related across languages, as aligned Wikipedia articles are).

A token's word is a topic word with probability ``topic_fraction``. Term counts are the number of
times a kept word was drawn. Each language block is then weighted like the paper's pipeline:
tf-idf (scikit-learn's smooth idf), ``min_df`` on document frequency (dropped columns are removed,
so the block's width is the number of surviving words), rows L2-normalised.

Everything is deterministic given ``seed`` and is produced in row chunks of ``chunk_docs``
documents, so generating K = 485,000 needs little more memory than the result.

    python -m benchmarks.wiki_synth --concepts 60000           # prints the shape and nnz
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse as sp


def _zipf_cdf(n: int, s: float) -> np.ndarray:
    w = 1.0 / np.arange(1, n + 1, dtype=np.float64) ** s
    c = np.cumsum(w)
    return c / c[-1]


def _chunk_counts(rng, n_docs, topics, vocab_size, cdf, topic_table, topic_fraction,
                  median_unique, sigma, min_unique, max_unique, oversample):
    """COO (row, col, count) of one chunk of documents of one language."""
    n_unique = np.clip(np.rint(rng.lognormal(np.log(median_unique), sigma, n_docs)),
                       min_unique, max_unique).astype(np.int64)
    n_unique = np.minimum(n_unique, vocab_size)
    n_draw = np.ceil(n_unique * oversample).astype(np.int64)
    rows = np.repeat(np.arange(n_docs, dtype=np.int64), n_draw)
    total = rows.size
    is_topic = rng.random(total) < topic_fraction
    cols = np.searchsorted(cdf, rng.random(total), side="right")
    np.minimum(cols, vocab_size - 1, out=cols)
    t_rows = rows[is_topic]
    pick = rng.integers(0, topic_table.shape[1], t_rows.size)
    cols[is_topic] = topic_table[topics[t_rows], pick]
    # count duplicates: unique (row, col) pairs with multiplicities
    key = rows * vocab_size + cols
    key, counts = np.unique(key, return_counts=True)
    r = key // vocab_size
    c = key - r * vocab_size
    # keep n_unique words per document, chosen at random among the distinct words drawn
    order = np.lexsort((rng.random(r.size), r))
    r, c, counts = r[order], c[order], counts[order]
    starts = np.searchsorted(r, np.arange(n_docs))
    rank = np.arange(r.size) - starts[r]
    keep = rank < n_unique[r]
    return r[keep], c[keep], counts[keep]


def _raw_chunks(s_lang, n_concepts, vocab_size, topics, topic_table, cdf, topic_fraction, median_unique,
                sigma, min_unique, max_unique, oversample, dtype, chunk_docs):
    """One language's term counts as CSR row blocks of ``chunk_docs`` documents, in order, drawn
    from its own seed sequence (one generator for all blocks: the same counts however they are
    consumed)."""
    rng = np.random.default_rng(s_lang)
    for start in range(0, n_concepts, chunk_docs):
        stop = min(start + chunk_docs, n_concepts)
        r, c, cnt = _chunk_counts(rng, stop - start, topics[start:stop], vocab_size, cdf, topic_table,
                                  topic_fraction, median_unique, sigma, min_unique, max_unique, oversample)
        yield sp.csr_matrix((cnt.astype(dtype), (r, c)), shape=(stop - start, vocab_size))


def _tfidf(df, n_concepts, min_df, dtype):
    """The kept columns (document frequency >= ``min_df``) and their smooth idf."""
    kept = np.flatnonzero(df >= min_df)
    idf = (np.log((1.0 + n_concepts) / (1.0 + df[kept])) + 1.0).astype(dtype)
    return kept, idf


def _weigh(X, kept, idf, dtype):
    """Counts ``X`` -> tf-idf on the kept columns, rows L2-normalised (row by row: the same values
    for a block of rows as for the whole matrix)."""
    X = X[:, kept].tocsr()
    X.data *= idf[X.indices]
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel())
    scale = np.repeat(1.0 / np.where(norms > 0, norms, 1.0), np.diff(X.indptr)).astype(dtype)
    X.data *= scale
    X.sort_indices()
    return X


def _language_block(s_lang, n_concepts, vocab_size, topics, topic_table, cdf, topic_fraction, median_unique,
                    sigma, min_unique, max_unique, oversample, min_df, dtype, chunk_docs):
    """One language's tf-idf block (CSR, L2 rows), drawn from its own seed sequence."""
    X = sp.vstack(list(_raw_chunks(s_lang, n_concepts, vocab_size, topics, topic_table, cdf, topic_fraction,
                                   median_unique, sigma, min_unique, max_unique, oversample, dtype,
                                   chunk_docs)), format="csr")
    kept, idf = _tfidf(np.bincount(X.indices, minlength=vocab_size), n_concepts, min_df, dtype)
    return _weigh(X, kept, idf, dtype)


def wiki_corpus(n_concepts: int = 60_000, *, n_languages: int = 2, vocab_size: int = 200_000,
                median_unique: float = 150.0, sigma: float = 0.5, min_unique: int = 50,
                max_unique: int = 1000, zipf_s: float = 1.05, n_topics: int | None = None,
                topic_words: int = 300, topic_fraction: float = 0.3, min_df: int = 3,
                dtype=np.float64, chunk_docs: int = 20_000, seed: int = 0, oversample: float = 1.6,
                n_jobs: int = 1):
    """Return ``(blocks, concepts)`` for :meth:`linxling.models.Cr5.fit_matrices`.

    ``blocks[lang]`` is a CSR ``(n_concepts, n_words_kept)`` tf-idf matrix (L2 rows, ``dtype``);
    ``concepts[lang]`` is ``arange(n_concepts)`` (document i of every language is concept i).
    Languages are named ``"l0"``, ``"l1"``, ...  Parameters: see the module docstring;
    ``n_jobs`` processes build the languages' blocks in parallel (the same matrices).
    """
    if n_concepts < 1 or n_languages < 1 or vocab_size < max(min_unique, 1):
        raise ValueError("n_concepts and n_languages must be >= 1 and vocab_size >= min_unique")
    if not 0.0 <= topic_fraction <= 1.0:
        raise ValueError(f"topic_fraction must be in [0, 1], got {topic_fraction}")
    if oversample < 1.0:
        raise ValueError(f"oversample must be >= 1, got {oversample}")
    if n_topics is None:
        n_topics = max(1, n_concepts // 50)
    root = np.random.SeedSequence(seed)
    s_topics, s_table, *s_langs = root.spawn(2 + n_languages)
    topics = np.random.default_rng(s_topics).integers(0, n_topics, n_concepts)
    topic_table = np.random.default_rng(s_table).integers(0, vocab_size, (n_topics, topic_words))
    cdf = _zipf_cdf(vocab_size, zipf_s)
    args = (n_concepts, vocab_size, topics, topic_table, cdf, topic_fraction, median_unique, sigma,
            min_unique, max_unique, oversample, min_df, dtype, chunk_docs)
    if n_jobs == 1 or n_languages == 1:
        mats = [_language_block(s_lang, *args) for s_lang in s_langs]
    else:   # one process per language: the same matrices, in 1 / n_jobs of the time
        import concurrent.futures as cf
        import multiprocessing as mp
        with cf.ProcessPoolExecutor(max_workers=min(n_jobs, n_languages),
                                    mp_context=mp.get_context("spawn")) as pool:
            mats = list(pool.map(_language_block, s_langs, *[[a] * n_languages for a in args]))
    blocks = {f"l{li}": X for li, X in enumerate(mats)}
    concepts = {lang: np.arange(n_concepts) for lang in blocks}
    return blocks, concepts


#: Wikipedia articles per language in the Cr5 paper (Sec. 4.1: en 5.7m, it 1.5m, vi 1.1m, da 239k);
#: the documents left after its 50-1,000 unique-word filter are not given, so these proportions
#: stand for them
PAPER_SIZES = {"en": 5_700_000, "it": 1_500_000, "vi": 1_100_000, "da": 239_000}


def _multilingual_plan(n_documents: int, sizes: dict | None, popularity: float, seed: int, kw: dict):
    """What :func:`multilingual_corpus` and :func:`write_multilingual_corpus` draw from: per
    language its concept ids, its seed sequence, and the arguments of :func:`_raw_chunks`."""
    sizes = dict(PAPER_SIZES if sizes is None else sizes)
    if not sizes or min(sizes.values()) <= 0 or n_documents < 2 * len(sizes):
        raise ValueError("sizes must be positive and n_documents at least 2 per language")
    kw = dict(kw)
    total = float(sum(sizes.values()))
    want = {lang: max(2, int(round(n_documents * v / total))) for lang, v in sizes.items()}
    pool = max(want.values())
    root = np.random.SeedSequence(seed)
    s_cover, s_topics, s_table, *s_langs = root.spawn(3 + len(sizes))
    rng = np.random.default_rng(s_cover)
    w = np.arange(1, pool + 1, dtype=np.float64) ** -float(popularity)
    w /= w.sum()
    cover = {lang: np.sort(rng.choice(pool, size=n, replace=False, p=w)) for lang, n in want.items()}
    counts = np.zeros(pool, dtype=np.int64)
    for ids in cover.values():
        counts[ids] += 1
    cover = {lang: ids[counts[ids] >= 2] for lang, ids in cover.items()}
    vocab_size = kw.pop("vocab_size", 200_000)
    n_topics = kw.pop("n_topics", None) or max(1, pool // 50)
    topic_words = kw.pop("topic_words", 300)
    zipf_s = kw.pop("zipf_s", 1.05)
    topics = np.random.default_rng(s_topics).integers(0, n_topics, pool)
    topic_table = np.random.default_rng(s_table).integers(0, vocab_size, (n_topics, topic_words))
    cdf = _zipf_cdf(vocab_size, zipf_s)
    opts = dict(topic_fraction=0.3, median_unique=150.0, sigma=0.5, min_unique=50, max_unique=1000,
                oversample=1.6, min_df=3, dtype=np.float64, chunk_docs=20_000)
    unknown = set(kw) - set(opts)
    if unknown:
        raise TypeError(f"unknown document-model arguments: {sorted(unknown)}")
    opts.update(kw)
    plan = {}
    for (lang, ids), s_lang in zip(cover.items(), s_langs, strict=True):
        raw = (s_lang, len(ids), vocab_size, topics[ids], topic_table, cdf, opts["topic_fraction"],
               opts["median_unique"], opts["sigma"], opts["min_unique"], opts["max_unique"], opts["oversample"],
               np.dtype(opts["dtype"]), opts["chunk_docs"])
        plan[lang] = (ids, raw, opts["min_df"])
    return plan


def multilingual_corpus(n_documents: int, *, sizes: dict | None = None, popularity: float = 1.0,
                        seed: int = 0, **kw):
    """Several languages of different sizes with partially overlapping concepts (issue #30).

    ``n_documents`` documents in all, split over the languages in the proportion of ``sizes``
    (default :data:`PAPER_SIZES`, the paper's da/en/it/vi Wikipedias). The concepts are a
    pool of as many as the largest language has documents; each language covers its share of
    the pool, drawn without replacement with weights ``rank ** -popularity`` (popular concepts
    are covered by many languages, as Wikipedia's are). As in the paper's joint training, only
    concepts covered by at least two languages are kept (a language loses its documents about
    concepts no other language covers). Each concept keeps one topic in every language
    (:func:`wiki_corpus`'s model). Returns ``(blocks, concepts)`` with languages named as in
    ``sizes`` and ``concepts[lang]`` the concept ids of its rows (increasing). ``kw``: the
    document model of :func:`wiki_corpus` (``vocab_size``, ``median_unique``, ``dtype``, ...).
    :func:`write_multilingual_corpus` writes the same matrices to HDF5 without holding a language.
    """
    plan = _multilingual_plan(n_documents, sizes, popularity, seed, kw)
    blocks = {}
    for lang, (_ids, raw, min_df) in plan.items():
        s_lang, n, vocab_size, *rest = raw
        *model, dtype, chunk_docs = rest
        blocks[lang] = _language_block(s_lang, n, vocab_size, *model, min_df, dtype, chunk_docs)
    return blocks, {lang: ids for lang, (ids, _, _) in plan.items()}


def _write_language(path, raw, min_df, chunk_rows, transpose_budget):
    """Stream one language to ``path`` (HDF5, :func:`linxling.io.write_chunks`, with its transpose):
    the counts go to a temporary file beside it while their document frequencies are counted,
    then are read back block by block, weighted and written. Never more than a block of counts,
    plus the transpose's ``transpose_budget``, in memory. Returns (rows, nnz, seconds)."""
    from pathlib import Path

    from linxling.io import write_chunks
    path = Path(path)
    n_concepts, vocab_size, dtype = raw[1], raw[2], raw[-2]
    df = np.zeros(vocab_size, dtype=np.int64)

    def counted():
        for X in _raw_chunks(*raw):
            df[:] += np.bincount(X.indices, minlength=vocab_size)
            yield X

    t = time.perf_counter()
    tmp = path.with_name(f".{path.name}.counts.h5")
    try:
        counts = write_chunks(tmp, counted(), transpose=False, overwrite=True)
        kept, idf = _tfidf(df, n_concepts, min_df, dtype)
        out = write_chunks(path, (_weigh(C, kept, idf, dtype) for _, C in counts.chunks()),
                           chunk_rows=chunk_rows, memory_budget=transpose_budget, overwrite=True)
    finally:
        if tmp.exists():
            tmp.unlink()
    return out.shape[0], out.nnz, time.perf_counter() - t


def write_multilingual_corpus(workdir, n_documents: int, *, sizes: dict | None = None, popularity: float = 1.0,
                              seed: int = 0, chunk_rows: int | None = None, transpose_budget: str = "2G",
                              n_jobs: int = 1, **kw) -> dict:
    """:func:`multilingual_corpus` written to ``workdir`` as ``{lang}.h5`` (row chunks and the
    transpose, :func:`linxling.io.write_chunks`) and ``{lang}.concepts.npy``, the same matrices,
    streamed: for corpora larger than memory (issue #30 item 1). ``chunk_rows``: rows per stored
    chunk (default: the generator's blocks of ``chunk_docs`` documents); ``transpose_budget``:
    memory for gathering the transpose's column blocks; ``n_jobs`` processes write languages side
    by side. Returns ``{lang: (rows, nnz, seconds)}``."""
    from pathlib import Path
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    plan = _multilingual_plan(n_documents, sizes, popularity, seed, kw)
    for lang, (ids, _, _) in plan.items():
        np.save(workdir / f"{lang}.concepts.npy", ids)
    args = [(workdir / f"{lang}.h5", raw, min_df, chunk_rows, transpose_budget)
            for lang, (_, raw, min_df) in plan.items()]
    if n_jobs == 1:
        done = [_write_language(*a) for a in args]
    else:       # largest language first, so that the others fill the other processes
        import concurrent.futures as cf
        import multiprocessing as mp
        order = sorted(range(len(args)), key=lambda i: -args[i][1][1])
        with cf.ProcessPoolExecutor(max_workers=n_jobs, mp_context=mp.get_context("spawn")) as pool:
            futs = {i: pool.submit(_write_language, *args[i]) for i in order}
            done = [futs[i].result() for i in range(len(args))]
    return dict(zip(plan, done, strict=True))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--concepts", type=int, default=60_000)
    p.add_argument("--languages", type=int, default=2)
    p.add_argument("--vocab", type=int, default=200_000)
    p.add_argument("--seed", type=int, default=0)
    from benchmarks._cli import show_defaults
    a = show_defaults(p).parse_args(argv)
    t = time.perf_counter()
    blocks, _ = wiki_corpus(a.concepts, n_languages=a.languages, vocab_size=a.vocab, seed=a.seed)
    dt = time.perf_counter() - t
    nnz = sum(X.nnz for X in blocks.values())
    per_doc = np.concatenate([np.diff(X.indptr) for X in blocks.values()])
    print(f"K={a.concepts} docs={a.concepts * a.languages} nnz={nnz / 1e6:.1f}M "
          f"median unique/doc={np.median(per_doc):.0f} widths={[X.shape[1] for X in blocks.values()]} "
          f"generated in {dt:.1f}s")


if __name__ == "__main__":
    main()
