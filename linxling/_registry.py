"""The one list of linxling's models.

Every place that enumerates models reads it: the package's lazy names (``linxling.Cr5``,
``linxling.models.Cr5``), the model store (``linxling.load`` imports a model's module from here
when it meets its name in a file), the command line (``linxling fit NAME``: which models exist,
their names in any case, how to read their input) and the contract tests. Adding a model is one
entry here plus its module (whose class is decorated with ``@linxling.io.register_model(name)``).

This module is plain data: importing it imports no model.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

__all__ = ["ModelEntry", "MODELS", "INPUT_KINDS", "entry", "model_class", "names"]

#: How ``linxling fit`` reads a model's input files and calls its ``fit``:
INPUT_KINDS = {
    "concepts": "documents with concept ids: one TSV (language<TAB>concept<TAB>text) or one file per "
                "language of aligned lines (concept = line number); fit(texts, languages, concepts)",
    "aligned": "one file per language of row-aligned lines; fit({language: lines})",
    "monolingual": "one file of sentences; fit(lines)",
    "pivot": "one file per language of row-aligned lines, the pivot language among them; "
             "fit({language: (pivot_lines, lines)})",
    "words": "one file per language of row-aligned lines, used as monolingual text and as the "
             "parallel corpus; fit({language: lines}, {language: lines})",
    "dictionary": "one TSV target_word<TAB>target_language<TAB>definition<TAB>definition_language "
                  "and a fitted word-space model (--embeddings); fit(rows, word_space)",
    "matrix": "a feature matrix and labels (scikit-learn's fit(X, y)); not fitted from text files",
    "glosses": "documents with concept ids and each word's descriptions, fit(texts, languages, concepts, "
               "descriptions); built from the shipped data by linxling.models.gloss_space.wikt3l_gloss_space; "
               "not fitted from text files",
}


@dataclass(frozen=True)
class ModelEntry:
    """One model: its class name (also its name in saved files and on the command line), the
    module that defines it, how the command line feeds it (a key of :data:`INPUT_KINDS`), a
    one-line summary and other names the command line accepts (any case)."""

    name: str
    module: str
    input: str
    summary: str
    aliases: tuple[str, ...] = ()

    @property
    def cli(self) -> bool:
        """Whether ``linxling fit`` can fit it from text files."""
        return self.input not in ("matrix", "glosses")


MODELS: tuple[ModelEntry, ...] = (
    ModelEntry("Cr5", "linxling.models.cr5", "concepts",
               "crosslingual reduced-rank ridge regression (Josifoski et al. 2019)"),
    ModelEntry("CLLSI", "linxling.models.cllsi", "concepts",
               "crosslingual LSI baseline (truncated SVD of concepts x stacked vocabularies)", ("cl-lsi",)),
    ModelEntry("WMF", "linxling.models.wmf", "monolingual",
               "weighted matrix factorisation of a sentence x word tf-idf matrix (Guo & Diab 2012)"),
    ModelEntry("BilingualWMF", "linxling.models.wmf", "aligned",
               "b-WMF: languages share the sentence factor (Aldarmaki & Diab 2016)", ("b-wmf", "bwmf")),
    ModelEntry("CrossWMF", "linxling.models.xwmf", "pivot",
               "x-WMF: a pivot WMF and one solve per language (Aldarmaki & Diab 2016)", ("x-wmf", "xwmf")),
    ModelEntry("BiCVM", "linxling.models.bicvm", "aligned",
               "compositional sentence vectors from parallel text, BiCVM / BiCVM+ (Hermann & Blunsom 2014)"),
    ModelEntry("RankingEmbedding", "linxling.models.ranking", "aligned",
               "Etter's translation network: aligned sentences ranked above random ones (Etter 2009)",
               ("etter", "ranking")),
    ModelEntry("CompressTree", "linxling.models.compress_tree", "monolingual",
               "Etter's CompressTree sentence encoder (Etter 2009)"),
    ModelEntry("BilBOWA", "linxling.models.bilbowa", "words",
               "bilingual skip-gram word vectors with a sentence alignment term (Gouws et al. 2015)"),
    ModelEntry("BilDRL", "linxling.models.bildrl", "dictionary",
               "bilingual dictionary encoders into a word space (Chen et al. 2019)"),
    ModelEntry("GlossSpace", "linxling.models.gloss_space", "glosses",
               "word vectors from each word's own glosses in a Cr5 document space (BilDRL's word space)"),
    ModelEntry("SingleBlock", "linxling.models._single_block", "matrix",
               "Cr5 or CL-LSI on one feature matrix with scikit-learn's fit(X, y)"),
)

_BY_KEY = {key.lower(): e for e in MODELS for key in (e.name, *e.aliases)}


def names(cli_only: bool = False) -> list[str]:
    """The models' names, in the registry's order."""
    return [e.name for e in MODELS if e.cli or not cli_only]


def entry(name: str) -> ModelEntry:
    """The entry of ``name``, its class name or an alias, in any case; ValueError naming the
    models otherwise."""
    if not isinstance(name, str) or name.lower() not in _BY_KEY:
        raise ValueError(f"unknown model {name!r}; choose one of {', '.join(names())} (any case"
                         + "; also " + ", ".join(a for e in MODELS for a in e.aliases) + ")")
    return _BY_KEY[name.lower()]


def model_class(name: str) -> type:
    """The class of ``name`` (see :func:`entry`), importing its module."""
    e = entry(name)
    return getattr(importlib.import_module(e.module), e.name)
