"""Evaluation of crosslingual embeddings.

:func:`retrieval`
    Blocked cosine / CSLS retrieval: P@k and MRR (e.g. parallel-sentence or document retrieval).
:func:`word_translation`, :func:`read_muse_dictionary`, :func:`muse_split`
    MUSE bilingual lexicon induction (word translation P@k).
:func:`sts`, :func:`read_sts`
    Semantic textual similarity (Pearson / Spearman of cosine vs gold scores).
:func:`exact_rank`, :func:`estimated_rank`
    Etter's (2009) exact rank (Algorithm 1) and estimated rank (Algorithm 2) of aligned pairs.
:func:`cldc`, :class:`AveragedPerceptron`, :func:`document_vectors`
    Cross-lingual document classification with the averaged perceptron (Collins 2002).
:func:`reverse_dictionary`
    Cross-lingual reverse dictionary retrieval (BilDRL): rank of the gold word, P@1, P@10, MRR.
:func:`paraphrase_pairs`, :func:`paraphrase_identification`, :class:`ParaphraseMLP`
    Bilingual paraphrase identification (BilDRL, Sec. 4.2): Wikt3l pairs, MLP accuracy.
"""
from __future__ import annotations

from linxling.evaluate._cldc import AveragedPerceptron, cldc, document_vectors
from linxling.evaluate._muse import muse_split, read_muse_dictionary, word_translation
from linxling.evaluate._paraphrase import ParaphraseMLP, paraphrase_identification, paraphrase_pairs
from linxling.evaluate._rank import RankEstimate, estimated_rank, exact_rank
from linxling.evaluate._retrieval import retrieval
from linxling.evaluate._reverse_dict import reverse_dictionary
from linxling.evaluate._sts import read_sts, sts

__all__ = ["retrieval", "word_translation", "read_muse_dictionary", "muse_split", "sts", "read_sts",
           "exact_rank", "estimated_rank", "RankEstimate", "cldc", "AveragedPerceptron",
           "document_vectors", "reverse_dictionary", "paraphrase_pairs", "paraphrase_identification",
           "ParaphraseMLP"]
