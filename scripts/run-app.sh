#!/usr/bin/env bash
# Set everything up (first run: a few minutes) and open MAD Lab on the offline default model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export LITELLM_LOCAL_MODEL_COST_MAP=True HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/python -m streamlit run app.py --browser.gatherUsageStats false "$@"
