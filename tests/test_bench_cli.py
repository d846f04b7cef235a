"""The benchmark modules' command lines as a user meets them: ``--help`` of every runnable module
starts no work and shows the defaults, bad arguments are refused before any work, and every
command benchmarks/README.md shows is accepted by the module's argument parser."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture
def no_work(monkeypatch):
    """Any benchmark step started as a process fails the test: ``--help`` and a refused option
    must return before the work."""
    import subprocess

    def refuse(*a, **k):
        raise AssertionError(f"started a process: {a[0] if a else k}")
    for name in ("call", "run", "Popen", "check_call", "check_output"):
        monkeypatch.setattr(subprocess, name, refuse)


def test_make_bench_driver_has_help_and_refuses_unknown_arguments(no_work, capsys):
    """``python -m benchmarks.run --help`` ignored its arguments and started the whole ``make
    bench`` run (minutes to an hour)."""
    from benchmarks import run
    with pytest.raises(SystemExit) as exc:
        run.main(["--help"])
    out = capsys.readouterr().out
    assert exc.value.code == 0
    assert "benchmarks.bench_cr5 main" in out and "bench_wmf.py" in out
    assert "benchmarks/results" in out
    with pytest.raises(SystemExit) as exc:
        run.main(["--quick"])
    assert exc.value.code == 2
    assert "unrecognized arguments: --quick" in capsys.readouterr().err
