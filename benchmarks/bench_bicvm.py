"""BiCVM speed and held-out retrieval on Bible en-de (issue 9, "must show" 1).

Setup: Bible verse pairs en-de (linxling.datasets.load_bible; ``--pair ru`` for en-ru, etc.),
1,000 random verses held out (seed 0), ADD, d=128, noise 10, AdaGrad, 10 epochs, 2 threads; held-out P@1 both directions
(cosine of summed word vectors, 1,000 candidates, linxling.evaluate.retrieval).

The authors' C++ (karlmoritz/bicvm @64fb7c1) is run when BICVM_BIN points to its built binary;
otherwise it is skipped with a message. Its command line is CPP_ARGS (the README's example with
this benchmark's settings; override with BICVM_ARGS, placeholders {train_en} {train_de} {model}
{epochs} {batches}); it is given our tokens (space-joined linxling tokens, lower-cased), its word
vectors are read back with `extract-vectors` (beside BICVM_BIN) and scored exactly like ours.
Its `--batches` is the number of minibatches per epoch: `--cpp-batches 10 602` runs it twice.

    python benchmarks/bench_bicvm.py [--pair de] [--epochs 10] [--cpp-batches 10 602]
        [--batch-size 50 500] [--margin 128] [--noise-pool 250] [--attraction 5] [--repeats 2]
        [--cpp-first] [--no-cpp]

Without options ours runs BiCVM's defaults (d = 128, 10 epochs, 2 threads).

numba runs on its default threading layer (OpenMP where numba finds it) and both sides with
OMP_WAIT_POLICY=PASSIVE (set unless given): see the comment at the imports.

Raw results go to benchmarks/results/bench_bicvm.json (en-de; bench_bicvm_en-X.json for
another pair; git-ignored).
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
# Both sides wait passively at their barriers: on a shared (oversubscribed) machine numba's OpenMP
# layer and the C++'s libgomp both spin, and two spinning threads ran 4x slower than one here.
# Until 2026-11-28 numba ran on its workqueue layer instead; on a quiet Intel Xeon the default
# fit took 3.74-3.96 s there against 3.16-3.23 s on OpenMP with passive waits (what a user gets:
# numba's default layer), so the benchmark now leaves numba's layer alone
# (NUMBA_THREADING_LAYER=workqueue still selects the old setting).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np


def split(validation=False, lang="de"):
    """(train, test) pairs of texts (en, ``lang``). With ``validation``, the "test" pairs are 1,000
    of the training pairs (seed 1) and "train" the rest: for tuning without the held-out verses."""
    import warnings

    from linxling.datasets import load_bible
    with warnings.catch_warnings():      # en-ar: one verse is empty in Arabic and is dropped
        warnings.simplefilter("ignore", UserWarning)
        c = load_bible(["en", lang])
    en, de = c.texts["en"], c.texts[lang]
    perm = np.random.default_rng(0).permutation(len(en))
    test, train = perm[:1000], perm[1000:]
    if validation:
        inner = np.random.default_rng(1).permutation(len(train))
        test, train = train[inner[:1000]], train[inner[1000:]]
    return ([en[i] for i in train], [de[i] for i in train]), ([en[i] for i in test], [de[i] for i in test])


def p_at_1(E, D):
    from linxling.evaluate import retrieval
    return (retrieval(E, D, ks=(1,), show_progress=False)["P@1"],
            retrieval(D, E, ks=(1,), show_progress=False)["P@1"])


def run_linxling(train, test, epochs, batch_size, threads, lang="de", **params):
    """BiCVM at its defaults (d = 128, ADD, noise 10 as the C++ run), but for ``params`` and a
    ``batch_size`` when given."""
    from linxling import BiCVM
    if batch_size is not None:
        params["batch_size"] = batch_size
    m = BiCVM(n_components=128, n_epochs=epochs, random_state=0, n_threads=threads, show_progress=False,
              **params)
    m.fit({"en": train[0][:100], lang: train[1][:100]})        # compile the kernels (not timed)
    t0 = time.perf_counter()
    c0 = time.process_time()
    m.fit({"en": train[0], lang: train[1]})
    dt = time.perf_counter() - t0
    cpu = time.process_time() - c0
    load = os.getloadavg()
    en2de, de2en = p_at_1(m.transform(test[0], "en"), m.transform(test[1], lang))
    return {"impl": "linxling (" + (", ".join(f"{k} {v}" for k, v in params.items()) or "defaults") + ")",
            "pair": f"en-{lang}",
            "seconds": dt, "cpu_seconds": cpu, "pairs_per_s": len(train[0]) * epochs / dt,
            "batch_size": m.batch_size, f"P@1 en->{lang}": en2de, f"P@1 {lang}->en": de2en, "loadavg": load,
            "loss_curve": m.loss_curve_}


# The authors' example command line (karlmoritz/bicvm README) with this benchmark's settings:
# ADD ("additive", plain tree), AdaGrad, d = 128, noise 10, eta 0.05, 10 iterations.
# `--batches` is the NUMBER of minibatches per epoch (batch size = pairs / batches).
CPP_ARGS = ("--input1 {train_en} --input2 {train_de} --tree plain --type additive --method adagrad "
            "--word-width 128 --hinge_loss_margin 128 --noise 10 --batches {batches} --eta 0.05 "
            "--lambdaD 1 --calc_bi_error1 true --calc_bi_error2 true --iterations {epochs} "
            "--model1-out {model}.en --model2-out {model}.de")


def _tokenized(texts):
    """One line of space-joined linxling tokens per text (the C++ splits on whitespace and skips
    empty lines, which would misalign the pairs: none may be empty)."""
    from linxling.text import tokenize
    lines = [" ".join(tokenize(t)) for t in texts]
    empty = [i for i, t in enumerate(lines) if not t]
    if empty:
        raise ValueError(f"{len(empty)} texts have no token (first: {empty[0]}): the C++ would misalign")
    return lines


def _cpp_vectors(extract, model_file):
    """word -> vector from the C++ model file (extract-vectors prints 'word v1 ... vd')."""
    out = subprocess.run([extract, "--model", str(model_file)], check=True, capture_output=True,
                         text=True).stdout
    vec = {}
    for line in out.splitlines():
        f = line.split(" ")
        if len(f) == 129:
            try:
                vec[f[0]] = np.array(f[1:], dtype=np.float64)
            except ValueError:
                continue
    return vec


def _sum_vectors(vec, texts):
    from linxling.text import tokenize
    Z = np.zeros((len(texts), 128))
    for i, t in enumerate(texts):
        for w in tokenize(t):
            if w in vec:
                Z[i] += vec[w]
    return Z


def run_cpp(train, test, epochs, batches, threads, lang="de"):
    binary = os.environ.get("BICVM_BIN")
    template = os.environ.get("BICVM_ARGS", CPP_ARGS)
    if not binary or not Path(binary).exists():
        print("BICVM_BIN not set or missing: skipping the authors' C++ (build it with "
              "/work/shared/tools/build_bicvm.sh)", file=sys.stderr)
        return None
    extract = str(Path(binary).with_name("extract-vectors"))
    with tempfile.TemporaryDirectory() as tmp:
        paths = {"train_en": Path(tmp, "en.txt"), "train_de": Path(tmp, "de.txt"), "model": Path(tmp, "model")}
        paths["train_en"].write_text("\n".join(_tokenized(train[0])) + "\n")
        paths["train_de"].write_text("\n".join(_tokenized(train[1])) + "\n")
        args = template.format(epochs=epochs, batches=batches, **{k: str(v) for k, v in paths.items()})
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        t0 = time.perf_counter()
        c0 = os.times()
        done = subprocess.run([binary, *args.split()], env=env, cwd=tmp, capture_output=True, text=True)
        if done.returncode:          # its config summary goes to stderr: shown only when it fails
            raise RuntimeError(f"{binary} exited with {done.returncode}:\n{done.stderr[-2000:]}")
        dt = time.perf_counter() - t0
        c1 = os.times()
        load = os.getloadavg()
        vA = _cpp_vectors(extract, f"{paths['model']}.en")
        vB = _cpp_vectors(extract, f"{paths['model']}.de")
    en2de, de2en = p_at_1(_sum_vectors(vA, test[0]), _sum_vectors(vB, test[1]))
    return {"impl": f"bicvm C++ (--batches {batches})", "pair": f"en-{lang}", "seconds": dt,
            "cpu_seconds": (c1.children_user + c1.children_system) - (c0.children_user + c0.children_system),
            "pairs_per_s": len(train[0]) * epochs / dt, "batch_size": len(train[0]) // batches,
            f"P@1 en->{lang}": en2de, f"P@1 {lang}->en": de2en, "loadavg": load}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pair", default="de", help="the language paired with English (de, ru, ar, zh, ...)")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, nargs="+", default=[None],
                    help="BiCVM batch sizes to run (default: the model's default)")
    ap.add_argument("--cpp-batches", type=int, nargs="*", default=[10])
    ap.add_argument("--margin", type=float, default=None)
    ap.add_argument("--learning-rate", type=float, default=None)
    ap.add_argument("--noise-pool", type=int, default=None,
                    help="BiCVM(noise_pool=P): per-batch pool of P noise sentences per language")
    ap.add_argument("--attraction", type=float, default=None,
                    help="BiCVM(attraction=w): unconditional w * E(a, b) on every pair")
    ap.add_argument("--cpp-first", action="store_true", help="run the C++ before ours")
    ap.add_argument("--no-cpp", action="store_true", help="run ours only")
    ap.add_argument("--validation", action="store_true",
                    help="score on 1,000 pairs carved from the training pairs (tuning), not the test")
    from benchmarks._cli import show_defaults
    args = show_defaults(ap).parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks._machine import machine
    params = {k: v for k, v in (("margin", args.margin), ("learning_rate", args.learning_rate),
                                ("noise_pool", args.noise_pool), ("attraction", args.attraction))
              if v is not None}
    train, test = split(args.validation, args.pair)
    results = []
    def ours():
        for bs in args.batch_size:
            results.append(run_linxling(train, test, args.epochs, bs, args.threads, args.pair, **params))
            print(json.dumps({k: v for k, v in results[-1].items() if k != "loss_curve"}), flush=True)

    def theirs():
        for nb in ([] if args.no_cpp else args.cpp_batches):
            cpp = run_cpp(train, test, args.epochs, nb, args.threads, args.pair)
            if cpp is not None:
                results.append(cpp)
                print(json.dumps(cpp), flush=True)

    for _ in range(args.repeats):     # interleaved: ours, C++, ours, C++ (same load for both)
        for step in ((theirs, ours) if args.cpp_first else (ours, theirs)):
            step()
    out = Path(__file__).resolve().parent / "results"
    out.mkdir(exist_ok=True)
    name = "bench_bicvm.json" if args.pair == "de" else f"bench_bicvm_en-{args.pair}.json"
    (out / name).write_text(json.dumps({"machine": machine(), "results": results}, indent=1))


if __name__ == "__main__":
    main()
