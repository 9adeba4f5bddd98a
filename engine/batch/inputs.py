"""Finding the photos to colorize in the files and folders a user gave."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from ..imageio import IMAGE_EXTENSIONS, PARTIAL_MARK
from ..options import Job


def collect_inputs(paths: Iterable[Path]) -> tuple[list[Job], list[str]]:
    """Files as given, folders walked recursively (symlink loops broken), duplicates dropped.

    Returns the jobs and one-line problems with the given paths.
    """
    jobs: list[Job] = []
    problems: list[str] = []
    seen: set[str] = set()

    def add(path: Path, root: Path) -> None:
        key = os.path.realpath(path)
        if key not in seen:
            seen.add(key)
            jobs.append(Job(len(jobs), path, root))

    def unreadable(err: OSError) -> None:
        problems.append(f"{err.filename or p}: cannot read this folder ({err.strerror or err})")

    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            visited: set[tuple[int, int]] = set()
            for folder, dirs, files in os.walk(p, followlinks=True, onerror=unreadable):
                try:
                    st = os.stat(folder)
                except OSError as err:
                    unreadable(err)
                    dirs[:] = []
                    continue
                if (st.st_dev, st.st_ino) in visited:  # a symlink back to a folder already walked
                    dirs[:] = []
                    continue
                visited.add((st.st_dev, st.st_ino))
                dirs.sort()
                for name in sorted(files):
                    if Path(name).suffix.lower() in IMAGE_EXTENSIONS and not name.endswith(PARTIAL_MARK):
                        add(Path(folder) / name, p)
        elif p.is_file():
            add(p, p.parent)
        elif p.exists():
            problems.append(f"{p}: not a regular file")
        else:
            problems.append(f"{p}: no such file or folder")
    return jobs, problems
