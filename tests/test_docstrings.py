"""The estimators' docstrings document their parameters (numpydoc), as ``help()`` shows them."""
from __future__ import annotations

import ast
import inspect
import re

import pytest

import linxling


def documented_parameters(cls: type) -> dict[str, list[str]]:
    """Name -> description lines of the ``Parameters`` section of ``cls``'s docstring. A header
    is ``name : type`` or ``a, b : type`` (a list of names may continue on the next line after a
    comma); its description is the more indented lines below it."""
    lines = inspect.cleandoc(cls.__doc__ or "").splitlines()
    starts = [i for i in range(len(lines) - 1)
              if lines[i].strip() == "Parameters" and set(lines[i + 1].strip()) == {"-"}]
    if not starts:
        return {}
    out: dict[str, list[str]] = {}
    current: list[str] = []
    pending = ""
    body = lines[starts[0] + 2:]
    for i, line in enumerate(body):
        if line and not line[0].isspace():
            if i + 1 < len(body) and body[i + 1].strip() and set(body[i + 1].strip()) == {"-"}:
                break                                       # the next section
            head = pending + line
            if head.rstrip().endswith(",") and ":" not in head:
                pending = head + " "
                continue
            pending = ""
            names = head.split(":", 1)[0] if ":" in head else head
            current = [n.strip() for n in names.split(",") if n.strip()]
            for n in current:
                out[n] = []
        elif line.strip() and current:
            for n in current:
                out[n].append(line.strip())
    return out


def test_the_parser_reads_headers_lists_and_descriptions():
    class Doc:
        """Summary.

        Parameters
        ----------
        a : int
            First.
        b, c,
        d : float
            Shared.
        e : str
        f
            No type.

        Attributes
        ----------
        x_ : int
            Not a parameter.
        """
    assert documented_parameters(Doc) == {"a": ["First."], "b": ["Shared."], "c": ["Shared."],
                                          "d": ["Shared."], "e": [], "f": ["No type."]}


@pytest.mark.parametrize("name", ["Cr5", "CLLSI", "WMF", "BilingualWMF", "CrossWMF", "BiCVM",
                                  "RankingEmbedding", "CompressTree", "BilBOWA", "BilDRL", "GlossSpace"])
def test_every_parameter_has_a_description(name):
    """The audit's gaps: BilingualWMF said only 'Same as WMF', WMF's language was missing,
    BilBOWA's dtype, random_state and show_progress and BilDRL's show_progress had a header and
    no description (help() ran one header into the next); then every model: Cr5's dtype,
    random_state and vectoriser settings, BiCVM's n_epochs, CompressTree's min_df and
    word_learning_rate, GlossSpace's random_state and show_progress."""
    cls = getattr(linxling, name)
    doc = documented_parameters(cls)
    renamed = getattr(cls, "_renamed_params", {})       # old names kept for one release
    params = [p for p in inspect.signature(cls.__init__).parameters if p != "self" and p not in renamed]
    assert [p for p in params if p not in doc] == [], f"{name}: undocumented parameters"
    assert [p for p in params if not doc[p]] == [], f"{name}: parameters without a description"
    assert not re.search(r"Same as :class:`WMF`\.\s*$", cls.__doc__ or "", re.M)


def _stated_value(text: str):
    """The Python value a docstring header states as a default: ``300``, ``1e-2``, ``"auto"``,
    ``None``, ``200,000`` / ``200_000``, ``2 GiB``, ``float64``."""
    text = text.strip().rstrip(".")
    if re.fullmatch(r"float(32|64)", text):
        return text
    m = re.fullmatch(r"(\d+) GiB", text)
    if m:
        return int(m.group(1)) * 2 ** 30
    return ast.literal_eval(text.replace(",", ""))


def stated_defaults(cls: type) -> dict[str, str]:
    """Name -> the default a ``Parameters`` header states (``name : type, default V``, or
    ``a, b : ...; default Va, Vb``, or one value for every name)."""
    out: dict[str, str] = {}
    lines = inspect.cleandoc(cls.__doc__ or "").splitlines()
    documented = documented_parameters(cls)
    for line in lines:
        if not line or line[0].isspace() or ":" not in line:
            continue
        names = [n.strip() for n in line.split(":", 1)[0].split(",")]
        if not names or any(n not in documented for n in names):
            continue
        m = re.search(r"\bdefault (.+)$", line.split(":", 1)[1])
        if not m:
            continue
        # values: quoted strings, numbers with thousands separators, or anything up to a comma
        values = re.findall(r'"[^"]*"|\d{1,3}(?:,\d{3})+(?!\d)|[^,\s][^,]*', m.group(1))
        if len(values) == 1:
            values *= len(names)
        assert len(values) == len(names), f"{cls.__name__}: {line!r}"
        out.update(zip(names, values, strict=True))
    return out


def test_the_default_parser_reads_lists_and_units():
    class Doc:
        """Summary.

        Parameters
        ----------
        a : int, default 300
        b, c, d : default 3, 200,000, "l2"
        e : float32 or float64, default float64
        f : int, default 2 GiB
        g, h : int, default 2
        """
    stated = {k: _stated_value(v) for k, v in stated_defaults(Doc).items()}
    assert stated == {"a": 300, "b": 3, "c": 200_000, "d": "l2", "e": "float64", "f": 2 * 2 ** 30,
                      "g": 2, "h": 2}


@pytest.mark.parametrize("name", ["Cr5", "CLLSI", "WMF", "BilingualWMF", "CrossWMF", "BiCVM",
                                  "RankingEmbedding", "CompressTree", "BilBOWA", "BilDRL", "GlossSpace"])
def test_stated_defaults_are_the_signatures(name):
    """The audit of the defaults (every header's ``default V`` against ``__init__``): a docstring
    that states a default states the one the code has (help() is where most users read it)."""
    cls = getattr(linxling, name)
    sig = inspect.signature(cls.__init__).parameters
    stated = stated_defaults(cls)
    assert stated or name == "CrossWMF", f"{name}: no stated default found"
    for p, text in stated.items():
        code = sig[p].default
        if isinstance(code, type):                       # dtype=np.float64
            code = code.__name__
        assert _stated_value(text) == code, f"{name}({p}=...): the docstring says {text}, the code has {code!r}"


_PUBLIC_MODULES = ("linxling", "linxling.models", "linxling.text", "linxling.search", "linxling.evaluate",
                   "linxling.io", "linxling.datasets", "linxling.compose", "linxling.operators", "linxling.solvers")


def _public_callables() -> list[tuple[str, object]]:
    """Every public function, class and public method of a public class of the API modules."""
    import importlib
    seen: dict[int, tuple[str, object]] = {}
    for mod_name in _PUBLIC_MODULES:
        mod = importlib.import_module(mod_name)
        for name in getattr(mod, "__all__", [n for n in dir(mod) if not n.startswith("_")]):
            obj = getattr(mod, name, None)
            if not callable(obj) or not getattr(obj, "__module__", "").startswith("linxling"):
                continue
            seen.setdefault(id(obj), (f"{mod_name}.{name}", obj))
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if isinstance(member, (staticmethod, classmethod)):
                        member = member.__func__
                    if not attr.startswith("_") and inspect.isfunction(member):
                        seen.setdefault(id(member), (f"{mod_name}.{name}.{attr}", member))
    return sorted(seen.values(), key=lambda t: t[0])


def test_public_functions_document_the_parameters_they_take():
    """The audit of 2026-12-03: ``BilingualWMF.transform`` and ``CrossWMF.transform`` took a
    ``dtype`` their Parameters section did not list, nor did ``Index.search``,
    ``filter_documents`` and ``word_translation`` their ``show_progress``. Every public function
    or method with a ``Parameters`` section lists each parameter it takes and no other."""
    checked = 0
    problems = []
    for name, obj in _public_callables():
        doc = documented_parameters(obj)        # type: ignore[arg-type]
        if not doc:
            continue                            # prose docstrings (no Parameters section)
        try:
            sig = inspect.signature(obj)        # type: ignore[arg-type]
        except (TypeError, ValueError):
            continue
        renamed = getattr(obj, "_renamed_params", {})
        params = [p for p, par in sig.parameters.items() if p not in ("self", "cls") and p not in renamed
                  and par.kind not in (par.VAR_POSITIONAL, par.VAR_KEYWORD)]
        missing = [p for p in params if p not in doc]
        # a header is a name; a paragraph of prose after the parameters is not one
        stale = [d for d in doc if re.fullmatch(r"\*{0,2}[A-Za-z_]\w*", d) and d.lstrip("*") not in sig.parameters]
        if missing or stale:
            problems.append((name, {"undocumented": missing, "not a parameter": stale}))
        checked += 1
    assert not problems, problems
    assert checked >= 50
