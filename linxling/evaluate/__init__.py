"""Evaluation of crosslingual embeddings.

:func:`retrieval`
    Blocked cosine / CSLS retrieval: P@k and MRR (e.g. parallel-sentence or document retrieval).
:func:`word_translation`, :func:`read_muse_dictionary`, :func:`muse_split`
    MUSE bilingual lexicon induction (word translation P@k).
:func:`sts`, :func:`read_sts`
    Semantic textual similarity (Pearson / Spearman of cosine vs gold scores).
:func:`reverse_dictionary`
    Cross-lingual reverse dictionary retrieval (BilDRL): rank of the gold word, P@1, P@10, MRR.
"""
from __future__ import annotations

from linxling.evaluate._muse import muse_split, read_muse_dictionary, word_translation
from linxling.evaluate._retrieval import retrieval
from linxling.evaluate._reverse_dict import reverse_dictionary
from linxling.evaluate._sts import read_sts, sts

__all__ = ["retrieval", "word_translation", "read_muse_dictionary", "muse_split", "sts", "read_sts",
           "reverse_dictionary"]
