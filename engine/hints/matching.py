"""Which photo a hints file's key names: a path relative to the input folder it was found in (matched on its
tail, so files saved by the app and by the CLI read in each other), or a file name unique among the inputs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from ..options import Job
from .hints_file import HintsFile
from .point import Hint


def photo_key(job: Job) -> str:
    """The key that names ``job`` in a hints file: its path relative to its input folder, with ``/``."""
    try:
        return job.path.relative_to(job.root).as_posix()
    except ValueError:
        return job.path.name


class HintMatch(NamedTuple):
    """``match_hints``' answer: hints by job index, keys that name no input, keys that name several."""

    hints: dict[int, tuple[Hint, ...]]
    unmatched: list[str]
    ambiguous: list[str]


def match_hints(hints_file: HintsFile, jobs: Sequence[Job]) -> HintMatch:
    """Each key's input: the one whose path relative to its input folder is the key (folders given together keep
    their names in that path: the key may leave the first one out), else the one input whose
    path, with its input folder's own name in front, ends with the key on whole names (a file name, or
    ``beach/scan07.png``, or ``1952/beach/scan07.png``: the app keeps a queued folder's name, the command line
    walks inside it, and a file saved by either reads in the other). A key naming several inputs is
    ambiguous and not used (never guessed); two keys naming the same input add up, in file order.
    """
    by_path: dict[str, list[Job]] = {}
    by_inner: dict[str, list[Job]] = {}  # the path below the folder's own name
    by_tail: dict[tuple[str, ...], list[Job]] = {}
    for job in jobs:
        key = photo_key(job)
        by_path.setdefault(key, []).append(job)
        if len(inner := PurePosixPath(key).parts[1:]):
            by_inner.setdefault(PurePosixPath(*inner).as_posix(), []).append(job)
        parts = (Path(os.path.abspath(job.root)).name, *PurePosixPath(key).parts)  # "." has a name too
        for k in range(1, len(parts) + 1):
            by_tail.setdefault(parts[-k:], []).append(job)
    hints: dict[int, tuple[Hint, ...]] = {}
    unmatched: list[str] = []
    ambiguous: list[str] = []
    for key, points in hints_file.photos.items():
        norm = PurePosixPath(key.replace("\\", "/"))
        found = by_path.get(norm.as_posix()) or by_inner.get(norm.as_posix()) or by_tail.get(norm.parts, [])
        if not found:
            unmatched.append(key)
        elif len(found) > 1:
            ambiguous.append(key)
        else:
            index = found[0].index
            hints[index] = hints.get(index, ()) + points
    return HintMatch(hints, unmatched, ambiguous)
