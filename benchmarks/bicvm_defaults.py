"""How BiCVM's defaults were chosen: a validation grid on training verses only.

For each language pair en-X: the Bible verse pairs minus the bicvm benchmark's 1,000 held-out
verses (``bench_bicvm.split``'s test, seed 0; for X != de the same positions), and of the rest
1,000 validation pairs (seed 1) scored by held-out P@1 (cosine, both directions, mean) after
training on the others. No test verse is used. ``--grid`` picks the settings to try.

    python -m benchmarks.bicvm_defaults --pairs de --dims 128 64 --epochs 1 3 10 --grid defaults
    python -m benchmarks.bicvm_defaults --pairs de ru ar zh --dims 128 --epochs 10 --grid check

Raw rows: benchmarks/results/bicvm_defaults.jsonl (git-ignored), one JSON object per fit.
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
    # margin as a multiple of d ("rel"), attraction, noise_pool, batch size, learning rate
    "defaults": [dict(margin_rel=m, attraction=a, noise_pool=p, batch_size=b, learning_rate=lr)
                 for m in (0.25, 0.5, 1.0) for a in (0.0, 2.0, 5.0) for p in (None, 250)
                 for b in (500, 1000) for lr in (0.05,)],
    "lr": [dict(margin_rel=0.5, attraction=a, noise_pool=250, batch_size=500, learning_rate=lr)
           for lr in (0.025, 0.05, 0.1, 0.2) for a in (5.0, 10.0)],
    "paper": [dict(margin_abs=1.0, attraction=0.0, noise_pool=None, batch_size=50, learning_rate=0.05)],
    "check": [dict(margin_rel=0.5, attraction=5.0, noise_pool=250, batch_size=1000, learning_rate=0.05),
              dict(margin_abs=1.0, attraction=0.0, noise_pool=None, batch_size=50, learning_rate=0.05)],
}


def split(lang: str):
    from linxling.datasets import load_bible
    c = load_bible(["en", lang])
    en, xx = c.texts["en"], c.texts[lang]
    perm = np.random.default_rng(0).permutation(len(en))
    train = perm[1000:]
    inner = np.random.default_rng(1).permutation(len(train))
    val, fit = train[inner[:1000]], train[inner[1000:]]
    return ([en[i] for i in fit], [xx[i] for i in fit]), ([en[i] for i in val], [xx[i] for i in val])


def score(m, val, lang):
    from linxling.evaluate import retrieval
    E, D = m.transform(val[0], "en"), m.transform(val[1], lang)
    a = retrieval(E, D, ks=(1,), show_progress=False)["P@1"]
    b = retrieval(D, E, ks=(1,), show_progress=False)["P@1"]
    return a, b


def plus(langs, d, epochs, params, threads, out):
    """BiCVM+ (one model, English pivot, en-X pairs) against one model per pair, on the same
    training verses (the verses aligned in every language), validation P@1 per pair."""
    import linxling.models.bicvm as bm
    from linxling import BiCVM
    from linxling.datasets import load_bible
    c = load_bible(["en", *langs])
    n = len(c.texts["en"])
    perm = np.random.default_rng(0).permutation(n)
    train = perm[1000:]
    inner = np.random.default_rng(1).permutation(len(train))
    val, fit = train[inner[:1000]], train[inner[1000:]]
    tr = {g: [c.texts[g][i] for i in fit] for g in ["en", *langs]}
    va = {g: [c.texts[g][i] for i in val] for g in ["en", *langs]}
    kw = dict(n_components=d, n_epochs=epochs, random_state=0, n_threads=threads, show_progress=False, **params)
    rows = {}
    for x in langs:
        m = BiCVM(**kw).fit({"en": tr["en"], x: tr[x]})
        rows[f"pairwise en-{x}"] = score(m, (va["en"], va[x]), x)
    for label, inter in (("BiCVM+ interleaved", bm.INTERLEAVE), ("BiCVM+ sequential", 10 ** 9)):
        old, bm.INTERLEAVE = bm.INTERLEAVE, inter
        try:
            m = BiCVM(**kw).fit([{"en": tr["en"], x: tr[x]} for x in langs])
        finally:
            bm.INTERLEAVE = old
        for x in langs:
            rows[f"{label} en-{x}"] = score(m, (va["en"], va[x]), x)
    row = dict(plus=langs, n_components=d, n_epochs=epochs, params=params,
               val_p1={k: [round(v, 4) for v in p] for k, p in rows.items()}, load=os.getloadavg()[0])
    print(json.dumps(row), flush=True)
    with open(out, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(row) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", nargs="+", default=["de"])
    ap.add_argument("--dims", type=int, nargs="+", default=[128])
    ap.add_argument("--epochs", type=int, nargs="+", default=[10])
    ap.add_argument("--grid", default="defaults", choices=sorted(GRIDS))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--plus", nargs="+", help="BiCVM+ over en-X for these X against pairwise models")
    ap.add_argument("--params", default="{}", help="BiCVM parameters for --plus, as JSON")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "bicvm_defaults.jsonl"))
    a = ap.parse_args(argv)
    from linxling import BiCVM
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    if a.plus:
        for d in a.dims:
            for ep in a.epochs:
                plus(a.plus, d, ep, json.loads(a.params), a.threads, a.out)
        return
    for lang in a.pairs:
        fit, val = split(lang)
        for d in a.dims:
            for ep in a.epochs:
                for g in GRIDS[a.grid]:
                    margin = g.get("margin_abs", g.get("margin_rel", 0) * d)
                    kw = dict(n_components=d, n_epochs=ep, margin=margin, attraction=g["attraction"],
                              noise_pool=g["noise_pool"], batch_size=g["batch_size"],
                              learning_rate=g["learning_rate"], random_state=0, n_threads=a.threads,
                              show_progress=False)
                    t = time.perf_counter()
                    m = BiCVM(**kw).fit({"en": fit[0], lang: fit[1]})
                    dt = time.perf_counter() - t
                    p1 = score(m, val, lang)
                    row = dict(pair=f"en-{lang}", **{k: v for k, v in kw.items() if k not in
                               ("random_state", "n_threads", "show_progress")}, grid=g,
                               val_p1=[round(x, 4) for x in p1], val_p1_mean=round(float(np.mean(p1)), 4),
                               seconds=round(dt, 2), load=os.getloadavg()[0])
                    print(json.dumps(row), flush=True)
                    with open(a.out, "a", encoding="utf-8") as fh:
                        fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
