"""Command line: ``linxling demo``, ``linxling info``, ``linxling embed``."""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from linxling._version import __version__


def _cmd_demo(args: argparse.Namespace) -> int:
    from linxling.demo import run_demo
    run_demo(languages=args.languages, n_components=args.n_components, alpha=args.alpha,
             test_chapters=args.test_chapters, n_queries=args.queries, n_candidates=args.candidates,
             similarity=args.similarity, out_dir=args.out, random_state=args.seed,
             baseline=not args.no_baseline)
    return 0


def _cmd_info(args: argparse.Namespace) -> int:
    import linxling
    from linxling import _backend
    m = linxling.load(args.model)
    print(f"{type(m).__name__} saved by linxling; languages: {getattr(m, 'languages_', '?')}")
    for k in ("n_components", "alpha"):
        if hasattr(m, k):
            print(f"  {k} = {getattr(m, k)}")
    print(f"GPU: {_backend.CUPY_REASON}")
    return 0


def _cmd_embed(args: argparse.Namespace) -> int:
    import numpy as np

    import linxling
    m = linxling.load(args.model)
    with open(args.input, encoding="utf-8") as fh:
        lines = [line.rstrip("\n") for line in fh]
    E = m.transform(lines, args.language)
    np.save(args.output, E)
    print(f"wrote {E.shape[0]} x {E.shape[1]} embeddings to {args.output}")
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    try:
        from benchmarks.suite import main as bench_main
    except ImportError as exc:
        raise ImportError("linxling bench needs the benchmarks/ folder of a linxling source "
                          f"checkout on the Python path (run it from the repository root): {exc}") from exc
    return bench_main(getattr(args, "bench_args", []), prog="linxling bench")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="linxling", description="crosslingual text embeddings")
    parser.add_argument("--version", action="version", version=f"linxling {__version__}")
    parser.add_argument("--no-progress", action="store_true", help="turn progress bars off")
    sub = parser.add_subparsers(dest="command", required=True)

    d = sub.add_parser("demo", help="train Cr5 and CL-LSI on Bible verses, print held-out P@k")
    d.add_argument("--languages", nargs="+", default=["en", "es", "ru", "ar", "zh"])
    d.add_argument("--n-components", type=int, default=300, help="embedding dimension r (paper: 300)")
    d.add_argument("--alpha", type=float, default=1.0)
    d.add_argument("--test-chapters", type=int, default=150)
    d.add_argument("--queries", type=int, default=1000)
    d.add_argument("--candidates", type=int, default=5000)
    d.add_argument("--similarity", choices=["csls", "cosine"], default="csls")
    d.add_argument("--out", default="demo_out")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--no-baseline", action="store_true", help="skip CL-LSI")
    d.set_defaults(func=_cmd_demo)

    i = sub.add_parser("info", help="describe a saved model")
    i.add_argument("model")
    i.set_defaults(func=_cmd_info)

    e = sub.add_parser("embed", help="embed one document per line with a saved model")
    e.add_argument("model")
    e.add_argument("language")
    e.add_argument("input", help="UTF-8 text file, one document per line")
    e.add_argument("output", help=".npy file to write")
    e.set_defaults(func=_cmd_embed)

    b = sub.add_parser("bench", add_help=False,
                       help="run the leaderboard suite (python -m benchmarks); needs a source checkout")
    b.set_defaults(func=_cmd_bench)

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:   # forwards every remaining option to the suite's own parser
        args = argparse.Namespace(func=_cmd_bench, bench_args=argv[1:], no_progress=False)
    else:
        args = parser.parse_args(argv)
    if args.no_progress:
        from linxling._progress import set_show_progress
        set_show_progress(False)
    try:
        return args.func(args)
    except (ValueError, TypeError, FileNotFoundError, ImportError) as exc:
        print(f"linxling: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
