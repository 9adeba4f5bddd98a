"""Hidden temporary names for outputs being written, and the clean-up of those a killed writer left.

A name carries its writer's process id, so a clean-up leaves the files of a writer that still runs alone.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

PARTIAL_MARK = ".colorizer-partial"  # temporary outputs carry this in their name until renamed

_NAME_MAX = 255  # bytes in one file name on every common file system


def partial_name(final: Path) -> Path:
    """A hidden temporary name next to ``final``: ``.NAME.PID-RANDOM.colorizer-partial``.

    The writer's process id lets ``clean_partials`` leave a running writer's files alone.
    The name is shortened where needed so that it fits where ``final`` fits.
    """
    tag = f".{os.getpid()}-{secrets.token_hex(4)}{PARTIAL_MARK}"
    name = final.name
    while name and len(os.fsencode(f".{name}{tag}")) > _NAME_MAX:
        name = name[:-1]
    return final.with_name(f".{name}{tag}")


def _writer_alive(name: str) -> bool:
    """Whether the process that wrote this temporary file still runs (and is not us)."""
    stem = name[: -len(PARTIAL_MARK)]
    pid_part = stem.rsplit(".", 1)[-1].split("-", 1)[0]
    if not pid_part.isdigit():
        return False  # an older name without a process id
    pid = int(pid_part)
    if pid == os.getpid() or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: another user's process (whose /proc entry may be hidden from us)
        return not _exited(pid, missing=False)
    return not _exited(pid, missing=True)


def _exited(pid: int, missing: bool) -> bool:
    """Whether ``pid`` has exited though ``kill(pid, 0)`` still finds it: a zombie. A killed worker whose new parent (a
    container's first process, often) never reaps it stays one, though it will write no more. ``missing``: the answer
    where /proc has no entry for it.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except FileNotFoundError:
        return missing and os.path.isdir("/proc/self")  # reaped since kill() asked; no /proc (macOS): trust kill()
    except (OSError, IndexError):
        return False
    return state in (b"Z", b"X", b"x")


def clean_partials(folder: Path) -> int:
    """Delete temporary files a killed run left behind; returns how many.

    Files of a writer that still runs (another batch writing into the same folder) are kept.
    """
    removed = 0
    if not os.path.isdir(folder):
        return 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            if name.endswith(PARTIAL_MARK) and not _writer_alive(name):
                try:
                    os.unlink(os.path.join(root, name))
                    removed += 1
                except OSError:
                    pass
    return removed
