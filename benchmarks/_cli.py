"""Shared by the benchmark modules' command lines."""
from __future__ import annotations

import argparse


def show_defaults(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Make every option of ``parser`` and of its subcommands say its default in ``--help``
    (``(default: ...)`` appended to its help, or as its help when it has none), unless its help
    already speaks of the default or there is none to say (flags, options without a default).
    Returns ``parser``."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                show_defaults(sub)
            continue
        if (not action.option_strings or action.default in (None, False, argparse.SUPPRESS)
                or isinstance(action, argparse._HelpAction) or "default" in (action.help or "").lower()):
            continue
        action.help = (f"{action.help} " if action.help else "") + "(default: %(default)s)"
    return parser
