#!/bin/sh
# The README's screenshots: a batch under Xvfb, taken after it with the last photo selected, at 1600x1000
# and at 1024x700:
#   tools/gui_screenshots.sh [PHOTO_OR_FOLDER...]      (default: resources/samples)
# writes docs/screenshot-1600x1000.png and docs/screenshot-1024x700.png (developer options
# COLORIZER_SCREENSHOT and COLORIZER_SCREENSHOT_SIZE, see gui/app.py). Without trained weights it uses an
# untrained model (COLORIZER_UNTRAINED=1), whose colours are meaningless. Settings and outputs go to
# throwaway folders, not the user's.
set -e
cd "$(dirname "$0")/.."
[ -f resources/models/colorizer.pt ] || export COLORIZER_UNTRAINED=1
[ $# -gt 0 ] || set -- resources/samples
work=$(mktemp -d)
for size in 1600x1000 1024x700; do
    XDG_CONFIG_HOME="$work/config-$size" COLORIZER_SCREENSHOT="$work/shot-$size" COLORIZER_SCREENSHOT_SIZE=$size \
        xvfb-run -a -s "-screen 0 ${size}x24" nice -n 19 .venv/bin/python -c \
        'import sys; from gui.app import run_app; sys.exit(run_app(sys.argv[1:]))' "$@" --output "$work/out-$size" --start
    cp "$work/shot-$size-done.png" "docs/screenshot-$size.png"
    echo "docs/screenshot-$size.png"
done
rm -rf "$work"
