#!/bin/sh
# Screenshots of the window mid-batch and after it, under Xvfb:
#   tools/gui_screenshots.sh PHOTO_OR_FOLDER... [--output DIR]
# writes docs/screenshot-mid.png and docs/screenshot-done.png (developer option COLORIZER_SCREENSHOT,
# see gui/app.py). Without trained weights it uses an untrained model (COLORIZER_UNTRAINED=1),
# whose colours are meaningless. Settings go to a throwaway folder, not the user's.
set -e
cd "$(dirname "$0")/.."
[ -f resources/models/colorizer.pt ] || export COLORIZER_UNTRAINED=1
XDG_CONFIG_HOME=$(mktemp -d)
export XDG_CONFIG_HOME
export COLORIZER_SCREENSHOT="${COLORIZER_SCREENSHOT:-docs/screenshot}"
exec xvfb-run -a -s "-screen 0 1400x900x24" nice -n 19 .venv/bin/python -c \
    'import sys; from gui.app import run_app; sys.exit(run_app(sys.argv[1:]))' "$@" --start
