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

    def guard(original):
        def refuse(*a, **k):
            argv = a[0] if a else k.get("args", ())
            argv = [argv] if isinstance(argv, str) else list(argv)
            if any(sys.executable == str(x) or "benchmarks" in str(x) for x in argv):
                raise AssertionError(f"started a benchmark process: {argv}")
            return original(*a, **k)       # e.g. platform's `uname -p` at import
        return refuse
    for name in ("call", "run", "Popen", "check_call", "check_output"):
        monkeypatch.setattr(subprocess, name, guard(getattr(subprocess, name)))


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


def _readme_commands() -> list[str]:
    """Every ``python -m benchmarks...`` / ``python benchmarks/....py`` command that
    benchmarks/README.md, the README or docs/ show, in inline code or in a code block, on one
    line."""
    import re
    text = "\n".join(f.read_text(encoding="utf-8") for f in
                     [ROOT / "benchmarks" / "README.md", ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])
    start = r"(?:sudo )?(?:[A-Z_]+=\S+ )*(?:\.venv/bin/)?python3? (?:-m benchmarks[\w.]*|benchmarks/\w+\.py)"
    cmds = [" ".join(m.group(1).split()) for m in re.finditer(rf"`({start}[^`]*)`", text)]
    fence, shell = None, []                  # the open fence's language; the shell blocks' lines
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fence = None if fence is not None else line.strip()[3:].strip()
            continue
        if fence in ("", "bash", "sh"):
            shell.append(line)
    for line in "\n".join(shell).replace("\\\n", " ").splitlines():
        line = line.split("  #")[0]
        if re.search(start, line):
            cmds.append(" ".join(line.split()))
    return sorted(set(cmds))


#: the README's placeholders, replaced by a value of the option's type
PLACEHOLDERS = {"S": "0", "K": "1000", "T": "1", "W": "1", "B": "100", "OUT": "out", "...": "x"}
#: shown as a name, not as a command to run (a command group: `run` or `prepare` follows)
MENTIONS = {"python -m benchmarks.gpu"}


def test_every_command_in_the_benchmarks_readme_is_accepted_by_its_parser(no_work, monkeypatch, capsys):
    """benchmarks/README.md showed ``bench_bildrl --bilbowa-components 100``, an option renamed
    ``--space-components`` since: the command as written stopped with a usage error (the README
    and docs/ are read too). Each command is parsed by its module's own argument parser (and
    stops there: nothing is run)."""
    import argparse
    import importlib
    import inspect
    import shlex

    class Parsed(Exception):
        pass
    parse = argparse.ArgumentParser.parse_args

    def parse_then_stop(self, args=None, namespace=None):
        parse(self, args, namespace)
        raise Parsed
    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_then_stop)
    cmds = _readme_commands()
    assert len(cmds) > 40 and "python -m benchmarks --quick" in cmds
    failed = []
    for cmd in cmds:
        if cmd in MENTIONS:
            continue
        toks = shlex.split(cmd.replace("[...]", "").replace("[", "").replace("]", ""))
        toks = toks[next(i for i, t in enumerate(toks) if t.split("/")[-1].startswith("python")) + 1:]
        module, args = (toks[1], toks[2:]) if toks[0] == "-m" else (toks[0][:-3].replace("/", "."), toks[1:])
        args = [PLACEHOLDERS.get(a, a) for a in args]
        main = importlib.import_module("benchmarks.suite" if module == "benchmarks" else module).main
        monkeypatch.setattr(sys, "argv", [module, *args])
        try:
            main(args) if inspect.signature(main).parameters else main()
            failed.append(f"{cmd}: ran without parsing its arguments")
        except Parsed:
            pass
        except SystemExit as exc:
            failed.append(f"{cmd}: exit {exc.code}: {capsys.readouterr().err.strip().splitlines()[-1:]}")
    assert not failed, "\n".join(failed)


def _runnable_modules() -> list[str]:
    """The benchmark modules that are commands (``if __name__ == "__main__"``), and the suite."""
    return ["benchmarks.suite"] + sorted(
        f"benchmarks.{f.stem}" for f in (ROOT / "benchmarks").glob("*.py")
        if 'if __name__ == "__main__"' in f.read_text(encoding="utf-8"))


def _parsers(monkeypatch, module: str):
    """The argument parser that ``module``'s main builds, and its subcommands' parsers (caught
    at ``parse_args``: nothing is run)."""
    import argparse
    import importlib
    import inspect

    class Built(Exception):
        pass

    def catch(self, args=None, namespace=None):
        raise Built(self)
    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", catch)
    main = importlib.import_module(module).main
    monkeypatch.setattr(sys, "argv", [module])
    try:
        main([]) if inspect.signature(main).parameters else main()
    except Built as exc:
        parser = exc.args[0]
    else:
        raise AssertionError(f"{module}.main did not parse arguments")
    parsers = [parser]
    for p in parsers:
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                parsers += list(dict.fromkeys(a.choices.values()))
    return parsers


def test_every_option_with_a_default_shows_it_in_help(no_work, monkeypatch):
    """Most modules' ``--help`` listed options such as ``--part {machine,wmf,cr5,all}`` or
    ``--concepts CONCEPTS`` without their defaults, so a user could not tell what a plain run
    does."""
    import argparse
    modules = _runnable_modules()
    assert {"benchmarks.floor", "benchmarks.gpu", "benchmarks.run", "benchmarks.bench_cr5"} <= set(modules)
    silent = []
    for module in modules:
        for parser in _parsers(monkeypatch, module):
            text = parser.format_help()          # every help string formats
            for a in parser._actions:
                if (a.option_strings and a.default not in (None, False, argparse.SUPPRESS)
                        and not isinstance(a, argparse._HelpAction)):
                    if "default" not in (a.help or "").lower():
                        silent.append(f"{parser.prog} {'/'.join(a.option_strings)} (default {a.default!r})")
                    else:
                        assert "default" in text.lower()
    assert not silent, "options whose --help does not give their default:\n" + "\n".join(silent)


def test_bench_wmf_interrupted_while_writing_keeps_the_previous_results(monkeypatch, tmp_path):
    """bench_wmf reads its results file back and adds the parts it ran: an interruption while
    writing it left a truncated wmf.json, and every later run then failed on reading it."""
    import json
    import pathlib

    from benchmarks import bench_wmf
    results, section = tmp_path / "wmf.json", tmp_path / "wmf_section.md"
    results.write_text('{"speed": {"old": 1}}', encoding="utf-8")
    section.write_text("old section\n", encoding="utf-8")
    monkeypatch.setattr(bench_wmf, "RESULTS", results)
    monkeypatch.setattr(bench_wmf, "README", section)
    monkeypatch.setattr(bench_wmf, "bench_defaults", lambda quick: {"new": 2})
    write_text = pathlib.Path.write_text

    def interrupted(self, data, *a, **k):        # half the text reaches the file, then Ctrl-C
        write_text(self, data[:len(data) // 2], *a, **k)
        raise KeyboardInterrupt
    monkeypatch.setattr(pathlib.Path, "write_text", interrupted)
    with pytest.raises(KeyboardInterrupt):
        bench_wmf.main(["--part", "defaults"])
    monkeypatch.undo()
    assert json.loads(results.read_text(encoding="utf-8")) == {"speed": {"old": 1}}
    assert section.read_text(encoding="utf-8") == "old section\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wmf.json", "wmf_section.md"]


def test_bildrl_ridge_grid_options(no_work, capsys):
    """``bench_bildrl --ridge-alpha / --ridge-min-df``: one fit of each ridge model per
    combination, labelled by its values; the other models once; a bad value is refused before
    any work."""
    from benchmarks import bench_bildrl as B
    assert B.model_runs("ridge-MTL,ATT") == [("ridge-MTL", "ridge-MTL", {}), ("ATT", "ATT", {})]
    assert B.model_runs("ridge-MTL,BOW", "0.1,3", None) == [
        ("ridge-MTL alpha=0.1", "ridge-MTL", {"alpha": 0.1}), ("ridge-MTL alpha=3.0", "ridge-MTL", {"alpha": 3.0}),
        ("BOW", "BOW", {})]
    runs = B.model_runs("ridge", "1", "1,5")
    assert [r[0] for r in runs] == ["ridge alpha=1.0 min_df=1", "ridge alpha=1.0 min_df=5"]
    assert runs[1][2] == {"alpha": 1.0, "min_df": 5}
    with pytest.raises(SystemExit) as exc:
        B.main(["--split", "val", "--ridge-min-df", "1.5"])
    assert exc.value.code == 2 and "--ridge-min-df" in capsys.readouterr().err
