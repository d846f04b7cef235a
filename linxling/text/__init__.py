"""Unicode-aware text pipeline: tokenizer, vocabulary, document filter and streaming TF-IDF.

Functions and classes
    :func:`tokenize`, :class:`Tokenizer`
        NFC + case-folding, runs of letters/digits/combining marks, character bigrams for
        Han, Kana, Thai, Lao, Khmer and Myanmar.
    :func:`build_vocabulary` -> :class:`Vocabulary`
        Per-language vocabulary (Cr5 defaults ``min_df=3``, ``max_features=200_000``).
    :func:`filter_documents`
        The Cr5 document filter (50 to 1000 unique words by default).
    :class:`TfidfVectorizer`
        One-pass, ``O(nnz)``-memory TF-IDF over any iterable of str.

See ``docs/text.md`` for the user guide.
"""
from __future__ import annotations

from linxling.text._tokenize import Tokenizer, tokenize
from linxling.text._vectorize import TfidfVectorizer, Vocabulary, build_vocabulary, filter_documents

__all__ = ["tokenize", "Tokenizer", "TfidfVectorizer", "filter_documents", "build_vocabulary",
           "Vocabulary"]
