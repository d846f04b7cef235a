"""Unicode-aware word tokenizer.

Rules (applied by :class:`Tokenizer` / :func:`tokenize`):

1. The text is normalised to NFC (so NFC and NFD input give identical tokens) and, by
   default, case-folded (:meth:`str.casefold`, a stronger ``lower()``; ``"ß"`` -> ``"ss"``).
   The Turkish dotted capital ``"İ"`` becomes ``"i"`` (plain casefold would give ``"i"`` plus
   a combining dot above).
2. A token is a maximal run of letters, digits and combining marks (Unicode general
   categories ``L*``, ``N*`` and ``M*``). Combining marks never split a word, so Arabic words
   with harakat, Devanagari words with virama/matras and Vietnamese words with stacked
   diacritics each stay one token. Everything else (spaces, punctuation ``P*``, symbols
   ``S*``, controls, the underscore) separates tokens and is dropped.
3. Scripts written without spaces between words -- Han, Hiragana, Katakana, Thai, Lao,
   Khmer and Myanmar -- are cut into overlapping character bigrams within each run of such
   characters (a run of one character yields that character). A "character" here is a base
   letter/digit together with its following combining marks, so a Thai vowel or tone mark
   stays attached to its consonant. Letters of other scripts adjacent to such a run form
   ordinary tokens: ``"iPhone手机"`` gives ``["iphone", "手机"]``.

The character classes are computed once per process from :mod:`unicodedata` (about 0.1 s
on first use) and compiled into a single regular expression, so tokenising is a C-level
regex scan plus a small amount of Python work per run of space-less script.
"""
from __future__ import annotations

import re
import unicodedata
from typing import Any, Callable

__all__ = ["Tokenizer", "tokenize", "check_tokenizer"]

# Code-point blocks of scripts written without spaces between words. Only letters and
# digits (categories L*, N*) inside these blocks become bigram characters; symbols in
# them (e.g. CJK radicals, category So) are separators like any other symbol.
_BIGRAM_BLOCKS: tuple[tuple[int, int], ...] = (
    (0x0E00, 0x0E7F),    # Thai
    (0x0E80, 0x0EFF),    # Lao
    (0x1000, 0x109F),    # Myanmar
    (0x1780, 0x17FF),    # Khmer
    (0x19E0, 0x19FF),    # Khmer symbols
    (0x2E80, 0x2FDF),    # CJK radicals (mostly symbols) / Kangxi radicals
    (0x3005, 0x3007),    # CJK iteration mark, closing mark, ideographic zero
    (0x3021, 0x3029),    # Hangzhou numerals
    (0x3031, 0x3035),    # kana repeat marks
    (0x3038, 0x303C),    # Hangzhou numerals, masu mark
    (0x3040, 0x309F),    # Hiragana
    (0x30A0, 0x30FF),    # Katakana
    (0x31F0, 0x31FF),    # Katakana phonetic extensions
    (0x3400, 0x4DBF),    # CJK extension A
    (0x4E00, 0x9FFF),    # CJK unified ideographs
    (0xA9E0, 0xA9FF),    # Myanmar extended-B
    (0xAA60, 0xAA7F),    # Myanmar extended-A
    (0xF900, 0xFAFF),    # CJK compatibility ideographs
    (0xFF66, 0xFF9F),    # half-width Katakana
    (0x1AFF0, 0x1B16F),  # Kana extended / supplement / small kana
    (0x20000, 0x323AF),  # CJK extensions B-H and compatibility supplement
)

_PATTERNS: dict[str, Any] = {}


def _ranges_to_class(ranges: list[tuple[int, int]]) -> str:
    parts = []
    for a, b in ranges:
        parts.append(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}")
    return "".join(parts)


def _compile() -> dict[str, Any]:
    """Build (once) the regexes from the Unicode database of this Python."""
    if _PATTERNS:
        return _PATTERNS
    in_block = bytearray(0x110000)
    for a, b in _BIGRAM_BLOCKS:
        in_block[a:b + 1] = b"\x01" * (b - a + 1)
    # kind: 0 = separator, 1 = word base (L/N), 2 = mark (M), 3 = bigram base (L/N in block)
    ranges: dict[int, list[tuple[int, int]]] = {1: [], 2: [], 3: []}
    category = unicodedata.category
    prev_kind, start = 0, 0
    for cp in range(0x110001):
        if cp == 0x110000:
            kind = 0
        else:
            c = category(chr(cp))[0]
            if c == "M":
                kind = 2
            elif c == "L" or c == "N":
                kind = 3 if in_block[cp] else 1
            else:
                kind = 0
        if kind != prev_kind:
            if prev_kind:
                ranges[prev_kind].append((start, cp - 1))
            prev_kind, start = kind, cp
    # A character class with code points above U+FFFF compiles to a linear list of ranges in
    # `re` (about 4x slower); keep a BMP-only set of patterns for the usual case and use the
    # full ones only for texts that contain astral characters.
    for variant, cap in (("bmp", 0xFFFF), ("full", 0x10FFFF)):
        word, mark, big = (_ranges_to_class([(a, min(b, cap)) for a, b in ranges[k] if a <= cap])
                           for k in (1, 2, 3))
        _PATTERNS[variant] = dict(
            # bigram_scripts=True: ordinary word runs, or runs of (bigram base + its marks)
            split=re.compile(f"[{word}{mark}]+|(?:[{big}][{mark}]*)+"),
            any_big=re.compile(f"[{big}]"),
            unit=re.compile(f"[{big}][{mark}]*"),
            # bigram_scripts=False: any run of letters / digits / marks
            plain=re.compile(f"[{word}{mark}{big}]+"),
        )
    _PATTERNS["astral"] = re.compile("[\\U00010000-\\U0010ffff]")
    _PATTERNS["ascii"] = re.compile("[A-Za-z0-9]+")  # the only L/M/N characters in ASCII
    _PATTERNS["version"] = unicodedata.unidata_version
    return _PATTERNS


def _bigrams(run: str, unit_re: re.Pattern) -> list[str]:
    """Overlapping bigrams of the characters (base + marks) of one space-less run."""
    units = unit_re.findall(run)
    if len(units) == len(run):  # no combining marks: slice the string directly
        if len(run) == 1:
            return [run]
        return [run[i:i + 2] for i in range(len(run) - 1)]
    if len(units) == 1:
        return units
    return [units[i] + units[i + 1] for i in range(len(units) - 1)]


class Tokenizer:
    """Unicode-aware word tokenizer (callable ``str -> list[str]``).

    See the module docstring (or ``docs/text.md``) for the exact rules.

    Parameters
    ----------
    lowercase : bool, default True
        Case-fold the text (:meth:`str.casefold`) before splitting.
    bigram_scripts : bool, default True
        Cut runs of Han, Hiragana, Katakana, Thai, Lao, Khmer and Myanmar characters into
        overlapping character bigrams. When False such runs are kept as single tokens.

    Examples
    --------
    >>> tok = Tokenizer()
    >>> tok("Hello, World! 42 times")
    ['hello', 'world', '42', 'times']
    >>> tok("我们试试看！")
    ['我们', '们试', '试试', '试看']
    >>> tok("हिन्दी भाषा")
    ['हिन्दी', 'भाषा']
    """

    def __init__(self, lowercase: bool = True, bigram_scripts: bool = True) -> None:
        if not isinstance(lowercase, bool):
            raise TypeError(f"lowercase must be a bool, got {type(lowercase).__name__}")
        if not isinstance(bigram_scripts, bool):
            raise TypeError(f"bigram_scripts must be a bool, got {type(bigram_scripts).__name__}")
        self.lowercase = lowercase
        self.bigram_scripts = bigram_scripts
        pats = _compile()
        self._ascii = pats["ascii"]
        self._astral = pats["astral"]
        self._bmp = pats["bmp"]
        self._full = pats["full"]

    def normalize(self, text: str) -> str:
        """NFC-normalise and (if ``lowercase``) case-fold ``text``; returns a str."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        if not text.isascii():
            text = unicodedata.normalize("NFC", text)
        if self.lowercase:
            if "\u0130" in text:  # 'İ' (Turkish dotted capital I): 'i', not 'i' + U+0307
                text = text.replace("\u0130", "i")
            text = text.casefold()
            # casefold can produce a few decomposed sequences (e.g. 'ǰ' -> 'ǰ'); keep NFC
            if not text.isascii() and not unicodedata.is_normalized("NFC", text):
                text = unicodedata.normalize("NFC", text)
        return text

    def __call__(self, text: str) -> list[str]:
        """Tokenize one document.

        Parameters
        ----------
        text : str

        Returns
        -------
        list of str
            Tokens in text order (repetitions kept).
        """
        text = self.normalize(text)
        if text.isascii():
            return self._ascii.findall(text)
        pats = self._full if self._astral.search(text) else self._bmp
        if not self.bigram_scripts:
            return pats["plain"].findall(text)
        runs = pats["split"].findall(text)
        if pats["any_big"].search(text) is None:
            return runs
        out: list[str] = []
        match_big = pats["any_big"].match
        unit = pats["unit"]
        for run in runs:
            if match_big(run) is None:
                out.append(run)
            else:
                out.extend(_bigrams(run, unit))
        return out

    def get_params(self) -> dict[str, bool]:
        """The constructor arguments, as a JSON-serialisable dict."""
        return {"lowercase": self.lowercase, "bigram_scripts": self.bigram_scripts}

    def __repr__(self) -> str:
        return f"Tokenizer(lowercase={self.lowercase}, bigram_scripts={self.bigram_scripts})"

    def __eq__(self, other: object) -> bool:
        return type(other) is Tokenizer and other.get_params() == self.get_params()

    def __hash__(self) -> int:
        return hash((Tokenizer, self.lowercase, self.bigram_scripts))


_DEFAULT: Tokenizer | None = None


def tokenize(text: str) -> list[str]:
    """Tokenize ``text`` with the default :class:`Tokenizer` (lower-case, bigram scripts).

    Parameters
    ----------
    text : str

    Returns
    -------
    list of str

    Examples
    --------
    >>> tokenize("Thổ Nhĩ Kỳ, 2024!")
    ['thổ', 'nhĩ', 'kỳ', '2024']
    """
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Tokenizer()
    return _DEFAULT(text)


def check_tokenizer(tokenizer: Any, name: str = "tokenizer") -> Callable[[str], list[str]]:
    """``None`` -> a default :class:`Tokenizer`; a callable is returned unchanged."""
    if tokenizer is None:
        return Tokenizer()
    if not callable(tokenizer):
        raise TypeError(f"{name} must be None or a callable str -> list[str], "
                        f"got {type(tokenizer).__name__}")
    return tokenizer
