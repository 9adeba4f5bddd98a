#!/usr/bin/env bash
# Set up a virtual environment (once) and open the app; arguments go to main.py.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
# Install once, and again only when pyproject.toml changes (the install is editable: code changes need none);
# a launch then opens the window without seconds of pip. The stamp is written only after pip succeeded.
stamp=.venv/.colorizer-installed
wanted="$(cksum < pyproject.toml)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
    .venv/bin/python -m pip install --quiet -e .
    printf '%s\n' "$wanted" > "$stamp"
fi
# Before the window opens, name the system libraries Qt's X11 plugin lacks (with the apt-get line),
# rather than let Qt abort with a generic message. The command line needs no Qt; a chosen platform skips it.
case "${1:-}" in
    colorize | bench | train | readout | evaluate | tune | models | -h | --help) ;;
    *)
        if [ -z "${QT_QPA_PLATFORM:-}" ]; then
            if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
                echo "error: no display to open the window on (DISPLAY and WAYLAND_DISPLAY are unset)." >&2
                echo "Run it in a desktop session, or colorize without a window: bash scripts/run.sh colorize PHOTOS --output DIR" >&2
                exit 1
            fi
            bash scripts/check_qt_libs.sh || exit 1
        fi ;;
esac
exec .venv/bin/python main.py "$@"
