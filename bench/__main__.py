"""``python -m bench``: the same as ``python bench/run.py`` (see bench/run.py)."""
import sys

from bench.run import main

sys.exit(main())
