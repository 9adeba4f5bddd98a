#!/usr/bin/env bash
# Check that Qt's X11 (xcb) platform plugin finds every system library it links, before Qt starts:
# when one is missing, Qt aborts with a generic "could not load the Qt platform plugin" message.
#
#   scripts/check_qt_libs.sh [QT_DIR]
#
# QT_DIR is PySide6's Qt folder (default: the one in .venv). Exit 0 when nothing is missing, or when
# there is nothing to check (no ldd, no xcb plugin); exit 1, with the one apt-get line that fixes it, otherwise.
set -uo pipefail

here=.
case "$0" in */*) here="${0%/*}" ;; esac  # not dirname: this runs on bare systems
root="$(cd "$here/.." && pwd)"
qt="${1:-}"
if [ -z "$qt" ]; then
    for candidate in "$root"/.venv/lib/python3*/site-packages/PySide6/Qt; do
        [ -d "$candidate" ] && qt="$candidate"
    done
fi
plugin="$qt/plugins/platforms/libqxcb.so"
command -v ldd >/dev/null 2>&1 || exit 0
[ -n "$qt" ] && [ -f "$plugin" ] || exit 0

# Debian/Ubuntu package of each library the plugin (or Qt's xcb library behind it) may need.
package_of() {
    case "$1" in
        libxcb-cursor.so.0) echo libxcb-cursor0 ;;
        libxcb-icccm.so.4) echo libxcb-icccm4 ;;
        libxcb-keysyms.so.1) echo libxcb-keysyms1 ;;
        libxcb-image.so.0) echo libxcb-image0 ;;
        libxcb-render-util.so.0) echo libxcb-render-util0 ;;
        libxcb-util.so.1) echo libxcb-util1 ;;
        libxcb-shape.so.0) echo libxcb-shape0 ;;
        libxcb-randr.so.0) echo libxcb-randr0 ;;
        libxcb-xkb.so.1) echo libxcb-xkb1 ;;
        libxcb-xinerama.so.0) echo libxcb-xinerama0 ;;
        libxcb-xfixes.so.0) echo libxcb-xfixes0 ;;
        libxcb-shm.so.0) echo libxcb-shm0 ;;
        libxcb-sync.so.1) echo libxcb-sync1 ;;
        libxcb-render.so.0) echo libxcb-render0 ;;
        libxcb.so.1) echo libxcb1 ;;
        libxkbcommon-x11.so.0) echo libxkbcommon-x11-0 ;;
        libxkbcommon.so.0) echo libxkbcommon0 ;;
        libX11-xcb.so.1) echo libx11-xcb1 ;;
        libX11.so.6) echo libx11-6 ;;
        libEGL.so.1) echo libegl1 ;;
        libGL.so.1) echo libgl1 ;;
        libGLX.so.0) echo libglx0 ;;
        libOpenGL.so.0) echo libopengl0 ;;
        libGLdispatch.so.0) echo libglvnd0 ;;
        libfontconfig.so.1) echo libfontconfig1 ;;
        libfreetype.so.6) echo libfreetype6 ;;
        libdbus-1.so.3) echo libdbus-1-3 ;;
        libglib-2.0.so.0 | libgthread-2.0.so.0) echo libglib2.0-0 ;;
        *) return 1 ;;
    esac
}

missing=$(for f in "$plugin" "$qt"/lib/libQt6XcbQpa.so*; do
    [ -f "$f" ] && ldd "$f" 2>/dev/null
done | awk '/=> not found/ {print $1}' | sort -u)
[ -z "$missing" ] && exit 0

packages=() unknown=()
for lib in $missing; do
    if pkg=$(package_of "$lib"); then
        packages+=("$pkg")
    else
        unknown+=("$lib")
    fi
done
{
    echo "The Colorizer window cannot start: Qt's X11 plugin needs libraries this system lacks:"
    echo "  $(echo $missing)"
    if [ ${#packages[@]} -gt 0 ]; then
        echo "Install them with:"
        echo "sudo apt-get install $(printf '%s\n' "${packages[@]}" | sort -u | tr '\n' ' ' | sed 's/ $//')"
    fi
    if [ ${#unknown[@]} -gt 0 ]; then
        echo "Find the package for ${unknown[*]} with: apt-file search ${unknown[0]}"
    fi
    echo "(Or choose another Qt platform, e.g. QT_QPA_PLATFORM=wayland, to skip this check.)"
} >&2
exit 1
