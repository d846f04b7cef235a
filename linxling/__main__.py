"""``python -m linxling``: the ``linxling`` command (the console script of pyproject.toml,
:func:`linxling.cli.main`), for environments where the script is not on ``PATH``."""
from __future__ import annotations

import sys

from linxling.cli import main

if __name__ == "__main__":
    sys.exit(main())
