#!/usr/bin/env bash
# Run test suites again and again pinned to one core beside a CPU hog on the same core (issue 20
# item 5: the suites must not race), stopping at the first failure.
#   bench/pinned_suites.sh RUNS [pytest arguments...]   (default: tests/unit tests/app)
# Each run's summary line goes to stdout; a failing run's whole output is kept in $LOG_DIR.
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}; shift || true
args=("$@"); [ ${#args[@]} -eq 0 ] && args=(tests/unit tests/app)
core=${PIN_CORE:-0}
LOG_DIR=${LOG_DIR:-$(mktemp -d /tmp/pinned_suites.XXXX)}
export LITELLM_LOCAL_MODEL_COST_MAP=True HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
taskset -c "$core" .venv/bin/python -c "while True: pass" &
hog=$!
trap 'kill $hog 2>/dev/null' EXIT
for i in $(seq 1 "$runs"); do
  start=$(date +%s)
  taskset -c "$core" .venv/bin/python -m pytest -p no:cacheprovider -q --basetemp="$LOG_DIR/tmp" "${args[@]}" \
    > "$LOG_DIR/run$i.log" 2>&1
  rc=$?
  echo "run $i/$runs: rc=$rc in $(( $(date +%s) - start )) s: $(tail -1 "$LOG_DIR/run$i.log")"
  [ $rc -ne 0 ] && { echo "failed: $LOG_DIR/run$i.log"; exit 1; }
  rm -f "$LOG_DIR/run$i.log"
done
echo "all $runs runs passed (pinned to core $core beside a CPU hog)"
