"""Saving and loading models (HDF5, versioned layout, atomic writes) and exporting word vectors.

:func:`export_vectors` writes word2vec text/binary (gensim), ``.npy`` + vocabulary, or a
FAISS-ready matrix; :data:`EXPORT_FORMATS` lists the formats.

>>> from linxling.io import register_model, save, load
>>> @register_model("Example")                    # doctest: +SKIP
... class Example:
...     def _get_state(self): return {"k": 2}, {"W": self.W}
...     @classmethod
...     def _from_state(cls, params, arrays): ...
"""
from __future__ import annotations

from linxling.io._chunks import ChunkedCSR, write_chunks
from linxling.io._export import EXPORT_FORMATS, export_vectors, vocabulary_path
from linxling.io._store import (
                                FORMAT_VERSION,
                                ModelFormatError,
                                load,
                                read_info,
                                register_model,
                                registered_models,
                                save,
)

__all__ = ["FORMAT_VERSION", "ModelFormatError", "register_model", "registered_models", "save", "load",
           "read_info", "EXPORT_FORMATS", "export_vectors", "vocabulary_path",
           "ChunkedCSR", "write_chunks"]
