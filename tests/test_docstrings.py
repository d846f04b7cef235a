"""The estimators' docstrings document their parameters (numpydoc), as ``help()`` shows them."""
from __future__ import annotations

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
