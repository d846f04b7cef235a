"""How RankingEmbedding's defaults were chosen: a validation grid on training verses only.

Bible en-fr verse pairs; 1,000 random verses (seed 0) are the held-out test of issue #25 and
are never used here; of the rest, 1,000 validation pairs (seed 1) are scored after every epoch
of a fit on the others: P@1 by cosine (as the leaderboard retrieves), mean of both directions,
and Etter's performance P(w) (``estimated_rank(..., n_candidates=1).accuracy``, M = 1, with the
model's own score).

    python -m benchmarks.etter_defaults --epochs 3 --grid main
    python -m benchmarks.etter_defaults --test --epochs 3 --grid chosen     # the final check

Raw rows: benchmarks/results/etter_defaults.jsonl (git-ignored).
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")

import numpy as np

GRIDS = {
    "main": [dict(score=s, learning_rate=lr, batch_size=b)
             for s in ("l1", "dot") for lr in (0.05, 0.2, 0.5, 1.0) for b in (1, 10, 100)],
    "margin": [dict(score="l1", learning_rate=lr, batch_size=10, margin=m)
               for lr in (0.2, 0.5) for m in (1.0, 4.0, None, 16.0)],
    "init": [dict(score="l1", learning_rate=0.5, batch_size=10, init_scale=s) for s in (0.01, 0.1, 0.5)],
    "fine": ([dict(score="l1", learning_rate=lr, batch_size=10, margin=m)
              for lr in (0.5, 1.0, 2.0) for m in (0.5, 1.0, 2.0)]
             + [dict(score="l1", learning_rate=lr, batch_size=1, margin=m)
                for lr in (0.05, 0.1) for m in (0.5, 1.0)]),
    "mrule": [dict(score="l1", learning_rate=lr, batch_size=10, margin=m)
              for lr in (0.5, 1.0) for m in (1.0, 2.0, 4.0)],
    "paper": [dict(score="dot", learning_rate=0.01, batch_size=1)],
    "chosen": [dict()],                                   # the class defaults
}


def split(test: bool, lang: str = "fr"):
    from linxling.datasets import load_bible
    c = load_bible(["en", lang])
    en, xx = c.texts["en"], c.texts[lang]
    perm = np.random.default_rng(0).permutation(len(en))
    held, train = perm[:1000], perm[1000:]
    if not test:
        inner = np.random.default_rng(1).permutation(len(train))
        held, train = train[inner[:1000]], train[inner[1000:]]
    return ([en[i] for i in train], [xx[i] for i in train]), ([en[i] for i in held], [xx[i] for i in held])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", default="main", choices=sorted(GRIDS))
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--dim", type=int, default=50)
    ap.add_argument("--lang", default="fr")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--test", action="store_true", help="score the held-out test verses (final check only)")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "etter_defaults.jsonl"))
    a = ap.parse_args(argv)
    from linxling import RankingEmbedding
    from linxling.evaluate import estimated_rank, retrieval
    train, held = split(a.test, a.lang)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    for g in GRIDS[a.grid]:
        rows = []

        def cb(model, epoch, loss, rows=rows):
            E, D = model.transform(held[0], "en"), model.transform(held[1], a.lang)
            p1 = [retrieval(E, D, ks=(1,), show_progress=False)["P@1"],
                  retrieval(D, E, ks=(1,), show_progress=False)["P@1"]]
            pw = estimated_rank(E, D, score=model.score, n_candidates=1, random_state=0).accuracy
            rows.append(dict(epoch=epoch + 1, p1=[round(x, 4) for x in p1], p1_mean=round(float(np.mean(p1)), 4),
                             p_w=round(float(pw), 4), loss=round(float(loss), 5)))

        kw = dict(n_components=a.dim, n_epochs=a.epochs, random_state=0, n_threads=a.threads,
                  show_progress=False, callback=cb, **g)
        t = time.perf_counter()
        RankingEmbedding(**kw).fit({"en": train[0], a.lang: train[1]})
        out = dict(split="test" if a.test else "validation", pair=f"en-{a.lang}", dim=a.dim, params=g,
                   epochs=rows, seconds=round(time.perf_counter() - t, 1), load=os.getloadavg()[0])
        print(json.dumps(out), flush=True)
        with open(a.out, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
