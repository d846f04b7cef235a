"""Evaluation of crosslingual embeddings.

:func:`retrieval`
    Blocked cosine / CSLS retrieval: P@k and MRR (e.g. parallel-sentence or document retrieval).
:func:`word_translation`, :func:`read_muse_dictionary`, :func:`muse_split`
    MUSE bilingual lexicon induction (word translation P@k).
:func:`sts`, :func:`read_sts`
    Semantic textual similarity (Pearson / Spearman of cosine vs gold scores).
"""
from __future__ import annotations

from linxling.evaluate._muse import muse_split, read_muse_dictionary, word_translation
from linxling.evaluate._retrieval import retrieval
from linxling.evaluate._sts import read_sts, sts

__all__ = ["retrieval", "word_translation", "read_muse_dictionary", "muse_split", "sts", "read_sts"]
