"""Atomic file replacement: a reader sees the old file or the complete new one, never a part.

One helper for photos, weights, checkpoints and reports. It writes to a temporary name in the
destination's folder (a rename is only atomic within one file system), syncs the data before the
rename and the folder after it, so a power cut cannot leave a renamed but empty file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO


def temp_name(final: Path) -> Path:
    """The default temporary name: hidden, next to ``final``, unique to this process."""
    return final.with_name(f".{final.name}.{os.getpid()}.tmp")


@contextmanager
def atomic_write(final: Path | str, *, tmp: Path | None = None) -> Iterator[BinaryIO]:
    """Yield a binary file; on a clean exit it replaces ``final``, on any exception it is removed.

    ``tmp`` is the temporary name to write (in ``final``'s folder); callers that sweep their own
    leftovers after a crash (``partials.partial_name``) pass theirs.
    """
    final = Path(final)
    tmp = temp_name(final) if tmp is None else Path(tmp)
    try:
        with open(tmp, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    sync_folder(final.parent)


def write_bytes(final: Path | str, data: bytes, *, tmp: Path | None = None) -> None:
    """Replace ``final`` with ``data`` atomically."""
    with atomic_write(final, tmp=tmp) as f:
        f.write(data)


def write_text(final: Path | str, text: str, *, encoding: str = "utf-8") -> None:
    """Replace ``final`` with ``text`` atomically."""
    write_bytes(final, text.encode(encoding))


def sync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable. Best effort: Windows cannot open a folder to sync it."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems (and platforms) refuse fsync on a folder; the file itself is synced
    finally:
        os.close(fd)


def _unlink_quietly(p: Path) -> None:
    try:
        os.unlink(p)
    except OSError:
        pass
