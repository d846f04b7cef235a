"""BiCVM speed and held-out retrieval on Bible en-de (issue 9, "must show" 1).

Setup: Bible verse pairs en-de (linxling.datasets.load_bible), 1,000 random verses held out
(seed 0), ADD, d=128, noise 10, AdaGrad, 10 epochs, 2 threads; held-out P@1 both directions
(cosine of summed word vectors, 1,000 candidates, linxling.evaluate.retrieval).

The authors' C++ (karlmoritz/bicvm @64fb7c1) is run when BICVM_BIN points to its built binary;
otherwise it is skipped with a message. Its command line is given in BICVM_ARGS (a template with
{train_en} {train_de} {model} placeholders), since this script does not assume its options.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_bicvm.py [--epochs 10]

Raw results go to benchmarks/results/bench_bicvm.json (git-ignored).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np


def split():
    from linxling.datasets import load_bible
    c = load_bible(["en", "de"])
    en, de = c.texts["en"], c.texts["de"]
    perm = np.random.default_rng(0).permutation(len(en))
    test, train = perm[:1000], perm[1000:]
    return ([en[i] for i in train], [de[i] for i in train]), ([en[i] for i in test], [de[i] for i in test])


def p_at_1(E, D):
    from linxling.evaluate import retrieval
    return (retrieval(E, D, ks=(1,), show_progress=False)["P@1"],
            retrieval(D, E, ks=(1,), show_progress=False)["P@1"])


def run_linxling(train, test, epochs):
    from linxling import BiCVM
    m = BiCVM(n_components=128, composition="add", noise=10, n_epochs=epochs, random_state=0,
              n_threads=2, show_progress=False)
    t0 = time.perf_counter()
    m.fit({"en": train[0], "de": train[1]})
    dt = time.perf_counter() - t0
    en2de, de2en = p_at_1(m.transform(test[0], "en"), m.transform(test[1], "de"))
    return {"impl": "linxling", "seconds": dt, "pairs_per_s": len(train[0]) * epochs / dt,
            "P@1 en->de": en2de, "P@1 de->en": de2en, "loss_curve": m.loss_curve_}


def run_cpp(train, epochs):
    binary, template = os.environ.get("BICVM_BIN"), os.environ.get("BICVM_ARGS")
    if not binary or not Path(binary).exists():
        print("BICVM_BIN not set or missing: skipping the authors' C++ (build it with "
              "/work/shared/tools/build_bicvm.sh)", file=sys.stderr)
        return None
    if not template:
        print("BICVM_ARGS not set: skipping the authors' C++ (give its command-line template)",
              file=sys.stderr)
        return None
    with tempfile.TemporaryDirectory() as tmp:
        paths = {"train_en": Path(tmp, "en.txt"), "train_de": Path(tmp, "de.txt"), "model": Path(tmp, "model")}
        paths["train_en"].write_text("\n".join(train[0]) + "\n")
        paths["train_de"].write_text("\n".join(train[1]) + "\n")
        cmd = [binary, *template.format(**{k: str(v) for k, v in paths.items()}).split()]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True)
        dt = time.perf_counter() - t0
    return {"impl": "bicvm C++", "seconds": dt, "pairs_per_s": len(train[0]) * epochs / dt}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks._machine import machine
    train, test = split()
    results = []
    for _ in range(args.repeats):     # interleaved: ours, C++, ours, C++
        results.append(run_linxling(train, test, args.epochs))
        print(json.dumps({k: v for k, v in results[-1].items() if k != "loss_curve"}))
        cpp = run_cpp(train, args.epochs)
        if cpp is not None:
            results.append(cpp)
            print(json.dumps(cpp))
    out = Path(__file__).resolve().parent / "results"
    out.mkdir(exist_ok=True)
    (out / "bench_bicvm.json").write_text(json.dumps({"machine": machine(), "results": results}, indent=1))


if __name__ == "__main__":
    main()
