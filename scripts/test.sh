#!/usr/bin/env bash
# Set up a virtual environment (once) and run every check headless: import contracts, ruff, mypy, pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet -e '.[test]'
export QT_QPA_PLATFORM=offscreen
.venv/bin/lint-imports
.venv/bin/ruff check .
.venv/bin/mypy
.venv/bin/python -m pytest -q
