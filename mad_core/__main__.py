"""`python -m mad_core ...`: the command line (see mad_core.cli)."""
from .cli import main

raise SystemExit(main())
