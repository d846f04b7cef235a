"""``python -m benchmarks``: the leaderboard suite (benchmarks/suite)."""
import sys

from benchmarks.suite import main

sys.exit(main())
