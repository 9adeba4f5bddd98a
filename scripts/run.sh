#!/usr/bin/env bash
# Set up a virtual environment (once) and open the app; arguments go to main.py.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet -e .
exec .venv/bin/python main.py "$@"
