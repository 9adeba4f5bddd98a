#!/usr/bin/env bash
# Set up a virtual environment (once) and run the whole test suite headless.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet -e '.[test]'
export QT_QPA_PLATFORM=offscreen
.venv/bin/lint-imports
.venv/bin/python -m pytest -q
