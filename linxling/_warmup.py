"""``linxling warmup``: compile every model's numba kernels ahead of the first real fit.

numba compiles a kernel the first time it runs with a new type signature and caches the machine
code on disk (``cache=True``: beside the kernels' sources, or in ``NUMBA_CACHE_DIR``), so only the
first fit on a machine pays for it (measured in benchmarks/README.md, "First and second fit").
This fits each registered model once on a tiny corpus with its default settings (and float32 for
the WMF family, whose dtype follows the data), and Cr5 and WMF once more on data past the size
thresholds of their threaded kernels, which compiles the signatures a default fit uses;
``make demo`` and ``make test`` run it after installing.
"""
from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

__all__ = ["warmup"]


def _corpus(n: int = 80, vocab: int = 40, seed: int = 0) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(seed)
    en, es = [], []
    for _ in range(n):
        ids = rng.integers(0, vocab, size=rng.integers(4, 9))
        en.append(" ".join(f"w{i}" for i in ids))
        es.append(" ".join(f"p{i}" for i in ids))
    return en, es


def _sized_blocks(seed: int = 2) -> tuple[dict, dict]:
    """Two languages' random blocks (1,500 documents × 3,000 features, 225,000 nonzeros each) of
    500 shared concepts: big enough for the kernels that only run past a size threshold."""
    import scipy.sparse as sp
    rng = np.random.default_rng(seed)
    blocks = {lang: sp.random(1500, 3000, density=0.05, random_state=rng, format="csr") for lang in ("en", "es")}
    ids = {lang: np.arange(1500) % 500 for lang in blocks}
    return blocks, ids


def _zipf_matrix(n: int = 2000, p: int = 600, per_row: int = 12, seed: int = 3) -> Any:
    """A binary (n, p) matrix whose columns are drawn with Zipf frequencies, so that a few of them
    have the hundreds of nonzeros the WMF half-steps push (:func:`linxling.kernels.als.hot_rows`)."""
    import scipy.sparse as sp
    rng = np.random.default_rng(seed)
    freq = 1.0 / np.arange(1, p + 1)
    freq /= freq.sum()
    cols = np.stack([rng.choice(p, per_row, replace=False, p=freq) for _ in range(n)])
    X = sp.csr_matrix((np.ones(cols.size), cols.ravel(), np.arange(0, cols.size + 1, per_row)),
                      shape=(n, p))
    X.sort_indices()
    return X


def _padded_block_cg() -> None:
    """The inner block CG's fused product at widths it pads to whole cache lines, which only large
    fits reach (:func:`linxling.solvers.cg._fused_gram_product`): float32 110 -> 112 and float64
    55 -> 56 columns, the copies into and out of the padded rows
    (:func:`linxling.kernels.blockcg.copy_columns`) included."""
    import scipy.sparse as sp

    from linxling.operators.gram import Gram
    from linxling.solvers.cg import krylov_block_cg
    rng = np.random.default_rng(4)
    for dtype, m in ((np.float32, 110), (np.float64, 55)):
        G = Gram(sp.random(600, 150, density=0.05, random_state=rng, format="csr", dtype=dtype), 0.5)
        krylov_block_cg(G, rng.standard_normal((150, m)).astype(dtype), G.diagonal(), rtol=1e-2,
                        gram=G.fused_parts())


def _fits() -> list[tuple[str, Any]]:
    """(name, a function that fits the model once) for every model the registry lists."""
    import scipy.sparse as sp

    import linxling as lx
    en, es = _corpus()
    langs, concepts = ["en"] * len(en) + ["es"] * len(es), list(range(len(en))) * 2
    small = dict(random_state=0, show_progress=False)

    def bildrl():
        space = lx.Cr5(n_components=4, min_df=1, doc_filter=None, **small).fit(en + es, langs, concepts)
        words = space.word_vectors("en")[0]
        rows = [(w, "en", es[i % len(es)], "es") for i, w in enumerate(words)]
        for enc in ("bow", "cnn", "gru", "att"):
            lx.BilDRL(encoder=enc, n_epochs=1, min_df=1, hidden_size=8, **small).fit(rows, space)

    X32 = sp.random(60, 30, density=0.2, random_state=0, format="csr", dtype=np.float32)
    big_en, big_es = _corpus(n=400, vocab=300, seed=1)

    def cr5():
        """The paths a default fit takes at scale too: the subspace eigen-solver (r > 20), the
        dense and block-CG (mixed-precision) inverses, float64 and float32; and, on blocks past
        the kernels' size thresholds (:data:`linxling.kernels.spmm.MIN_PARALLEL_WORK` nonzeros,
        ``dense._MIN_PARALLEL`` entries), the threaded transpose and rank-one updates."""
        lx.Cr5(n_components=4, min_df=1, doc_filter=None, **small).fit(en + es, langs, concepts)
        docs, bl = big_en + big_es, ["en"] * 400 + ["es"] * 400
        for method in ("dense", "cg"):
            for dtype in (np.float64, np.float32):
                lx.Cr5(n_components=24, min_df=1, doc_filter=None, block_method=method, dtype=dtype,
                       **small).fit(docs, bl, list(range(400)) * 2)
        blocks, ids = _sized_blocks()
        for dtype in (np.float64, np.float32):
            lx.Cr5(n_components=24, dtype=dtype, **small).fit_matrices(blocks, ids)
        _padded_block_cg()

    def wmf():
        """Both solvers, and the exact solver's whitened path (many rows shorter than k, as
        sentences are) with a transform's Gram fingerprint, float32 and float64; the CG solver
        with its frequent columns pushed (a matrix where they hold most nonzeros, as words do), at
        a width the kernels take from the arrays and at the default width, whose CG kernels are
        compiled with the width a constant (:data:`linxling.kernels.als.CONST_WIDTHS`)."""
        from linxling.kernels.als import CONST_WIDTHS
        lx.WMF(n_components=4, min_df=1, max_iter=1, **small).fit(en)
        lx.WMF(n_components=4, max_iter=1, solver="cholesky", **small).fit(X32)
        zipf = _zipf_matrix()
        for dtype in (np.float32, np.float64):
            Xs = sp.random(400, 200, density=0.02, random_state=1, format="csr", dtype=dtype)
            lx.WMF(n_components=16, max_iter=1, solver="cholesky", **small).fit(Xs).transform(Xs)
            for k in (16, *sorted(CONST_WIDTHS)):
                lx.WMF(n_components=k, max_iter=1, **small).fit(zipf.astype(dtype))

    return [
        ("Cr5", cr5),
        ("CLLSI", lambda: lx.CLLSI(n_components=4, random_state=0).fit(en + es, langs, concepts)),
        ("WMF", wmf),
        ("BilingualWMF", lambda: lx.BilingualWMF(n_components=4, min_df=1, max_iter=1, **small).fit(
            {"en": en, "es": es})),
        ("CrossWMF", lambda: lx.CrossWMF(n_components=4, min_df=1, max_iter=1, **small).fit({"es": (en, es)})),
        # and a transform of a few sentences, which composes them on the calling thread
        ("BiCVM", lambda: lx.BiCVM(n_components=8, n_epochs=1, **small).fit({"en": en, "es": es}).transform(
            en[:2], "en")),
        ("RankingEmbedding", lambda: lx.RankingEmbedding(n_components=8, n_epochs=1, **small).fit(
            {"en": en, "es": es}).transform(en[:2], "en")),
        ("CompressTree", lambda: lx.CompressTree(n_components=8, n_epochs=1, language="en", **small).fit(en)),
        ("BilBOWA", lambda: lx.BilBOWA(n_components=8, n_epochs=1, min_count=1, **small).fit(
            {"en": en, "es": es}, {"en": en, "es": es})),
        ("BilDRL", bildrl),
    ]


def warmup(models: list[str] | None = None, print_fn: Any = print) -> dict[str, float]:
    """Fit every (or each named) model once on a tiny corpus; return the seconds each took."""
    from linxling import _registry
    fits = dict(_fits())
    names = [_registry.entry(m).name for m in models] if models else list(fits)
    out = {}
    for name in names:
        if name not in fits:
            continue
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits[name]()
        out[name] = time.perf_counter() - t
        print_fn(f"  {name}: {out[name]:.1f} s")
    return out
