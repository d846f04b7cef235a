"""How BilBOWA's defaults were chosen: a validation grid on training data only.

For each language pair en-X: the Bible verse pairs minus the bicvm benchmark's 1,000 held-out
verses (``bicvm_defaults.split``: the test positions of seed 0, then 1,000 validation pairs of
seed 1), BilBOWA fitted on the rest (each language's verses as its monolingual text and the
pairs as parallel text). Two validation scores, neither touching a test split:

- verse retrieval: P@1 (cosine) of the 1,000 validation pairs, en->X and X->en, with
  ``transform`` (the mean of a verse's word vectors, BilBOWA's sentence representation);
- word translation: P@1 (CSLS) on the *training* part of MUSE's en-X dictionary
  (``muse_split``'s first 5,000 source words; the leaderboard scores the test part),
  out-of-vocabulary queries counted as misses, as on the leaderboard.

    python -m benchmarks.bilbowa_defaults --pairs de fr --grid epochs
    python -m benchmarks.bilbowa_defaults --pairs de fr --grid min_count --seed 1

Raw rows: benchmarks/results/bilbowa_defaults.jsonl (git-ignored), one JSON object per fit.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# each entry: BilBOWA() with these parameters changed ({} is the shipped defaults)
GRIDS = {
    "shipped": [{}],
    # the defaults before 2026-12-01 (word2vec's 5 epochs at step 0.025) against the shipped ones
    "final": [dict(n_epochs=5, learning_rate=0.025), {}],
    # the first grids ran at step 0.025 (the default then); that step is written out here
    "epochs": [dict(n_epochs=e, learning_rate=0.025) for e in (5, 10, 20, 40)],
    "alignment": [dict(n_epochs=20, learning_rate=0.025, alignment_weight=a) for a in (1.0, 3.0, 10.0, 30.0)],
    "min_count": [dict(n_epochs=20, learning_rate=0.025, min_count=k) for k in (1, 2, 3, 5)],
    "rates": [dict(n_epochs=20, learning_rate=lr) for lr in (0.0125, 0.025, 0.05)],
    "sample": [dict(n_epochs=20, learning_rate=0.025, sample=s) for s in (0.0, 1e-4, 1e-3)],
    "blocks": [dict(n_blocks=b) for b in (5, 20, 80)],
    "dims": [dict(n_components=d) for d in (50, 100, 200)],
    "lr_epochs": [dict(n_epochs=e, learning_rate=lr) for e in (10, 20, 40) for lr in (0.05, 0.1)],
    "alignment2": [dict(n_epochs=20, learning_rate=0.05, alignment_weight=a) for a in (10.0, 30.0, 100.0)],
    # the skip-gram and alignment steps apart (alignment_weight * alignment step sets stability)
    "split_rates": [dict(n_epochs=20, learning_rate=lr, alignment_learning_rate=alr)
                    for lr, alr in ((0.05, None), (0.05, 0.025), (0.1, 0.025), (0.1, 0.05))],
    "window": [dict(window=w) for w in (2, 10)] + [dict(negative=n) for n in (10, 20)],
}


def score(model, val, lang: str, muse_train) -> dict:
    """Validation scores of a fitted model (see the module docstring)."""
    from benchmarks.bicvm_defaults import score as verse_p1
    from linxling.evaluate import word_translation
    a, b = verse_p1(model, val, lang)          # en->X and X->en, as BiCVM's defaults were scored
    sw, sv = model.word_vectors("en")
    tw, tv = model.word_vectors(lang)
    r = word_translation(sw, sv, tw, tv, muse_train, ks=(1,), similarity="csls", show_progress=False)
    n_all = r["n_queries"] + r["n_missing"]
    return dict(retrieval_p1=[round(float(a), 4), round(float(b), 4)],
                retrieval_p1_mean=round(float(a + b) / 2, 4),
                muse_train_csls_p1=round(float(r["P@1"]) * r["n_queries"] / n_all, 4),
                muse_train_in_vocab=round(r["n_queries"] / n_all, 3))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", nargs="+", default=["de", "fr"], help="languages X of the en-X pairs")
    ap.add_argument("--grid", default="shipped", choices=sorted(GRIDS))
    ap.add_argument("--params", default="{}",
                    help="BilBOWA parameters as JSON, applied to every grid entry (the entry wins)")
    ap.add_argument("--seed", type=int, default=0, help="random_state of the models")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "bilbowa_defaults.jsonl"))
    from benchmarks._cli import show_defaults
    a = show_defaults(ap).parse_args(argv)
    import warnings

    from benchmarks.bicvm_defaults import split
    from linxling import BilBOWA
    from linxling.datasets import shared_data_dir
    from linxling.evaluate import muse_split, read_muse_dictionary
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    base = json.loads(a.params)
    for lang in a.pairs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            fit, val = split(lang)
        muse_train, _ = muse_split(read_muse_dictionary(shared_data_dir() / "muse" / f"en-{lang}.txt"))
        texts = {"en": fit[0], lang: fit[1]}
        for g in GRIDS[a.grid]:
            params = {**base, **g}
            m = BilBOWA(random_state=a.seed, show_progress=False, **params)
            t = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                m.fit(texts, texts)
            dt = time.perf_counter() - t
            row = dict(pair=f"en-{lang}", params=params, grid=a.grid, seed=a.seed, train_pairs=len(fit[0]),
                       vocabulary={g_: len(v) for g_, v in m.words_.items()},
                       **score(m, val, lang, muse_train), seconds=round(dt, 2),
                       load=round(os.getloadavg()[0], 2))
            print(json.dumps(row), flush=True)
            with open(a.out, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
