#!/usr/bin/env bash
# Set everything up (Debian's Chromium included), type-check the engine and its ports (mypy), and
# run the whole test suite: unit, app (Streamlit AppTest) and end-to-end (Playwright + Chromium) tests.
# Extra arguments go to pytest (e.g. `scripts/test.sh tests/unit -x`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --browser
export LITELLM_LOCAL_MODEL_COST_MAP=True HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# The type checker first (the files and settings: [tool.mypy] in pyproject.toml); a type error fails the run.
.venv/bin/python -m mypy
# The linter ([tool.ruff] in pyproject.toml: a small, explicit rule set); a finding fails the run.
.venv/bin/python -m ruff check --quiet .
set +e
.venv/bin/python -m pytest -p no:cacheprovider -ra "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure here." >&2
  exit 1
fi
exit "$status"
