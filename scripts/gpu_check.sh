#!/usr/bin/env bash
# The CUDA paths, checked on a machine with a GPU in under 8 minutes: bash scripts/gpu_check.sh [OUT]
# Writes OUT/gpu-check.json and OUT/gpu-check.md (and each part's log) to OUT (default: $OUT, else gpu-check/).
# Wheels for packages that machine lacks may lie in .whl/ (the device tool's README says how to carry them).
# Without CUDA it says so and exits 0.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-gpu-check}}"
py="${PYTHON:-python3}"
if ! "$py" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    echo "no CUDA GPU here: nothing to check (the CUDA paths need a machine with one)"
    exit 0
fi
if ls .whl/*.whl >/dev/null 2>&1; then
    "$py" -m pip install -q --no-index --no-deps --no-compile --target /tmp/colorizer-site .whl/*.whl \
        && export PYTHONPATH="/tmp/colorizer-site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONUNBUFFERED=1
timeout 475 "$py" tools/gpu_check.py "$out"
status=$?
[ "$status" -eq 124 ] && echo "the check ran past 475 s: the parts done are in $out/gpu-check.json"
exit "$status"
