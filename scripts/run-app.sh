#!/usr/bin/env bash
# Set everything up (first run: a few minutes) and open MAD Lab on the offline default model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Offline by default without forcing the Hub off: every model MAD Lab loads by itself is read from local files
# (local_files_only), litellm uses its bundled price map, and the Models page downloads a model only when
# clicked (HF_HUB_OFFLINE=1 scripts/run-app.sh refuses even that).
export LITELLM_LOCAL_MODEL_COST_MAP=True
# Browsers on this machine are the teacher; another machine is a visitor (poll, projected debate) unless it
# opens this line's link (madlab_ui/access.py; the key is kept in MADLAB_HOME and printed only here).
.venv/bin/python -m madlab_ui.access "$@" || echo "No teacher key line: other machines are visitors only." >&2
exec .venv/bin/python -m streamlit run app.py --browser.gatherUsageStats false "$@"
