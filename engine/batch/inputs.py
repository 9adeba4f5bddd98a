"""Finding the photos to colorize in the files and folders a user gave."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from ..imageio import IMAGE_EXTENSIONS
from ..options import Job
from ..partials import PARTIAL_MARK


def collect_inputs(paths: Iterable[Path], *, keep_folder_names: bool = False) -> tuple[list[Job], list[str]]:
    """Files as given, folders walked recursively (symlink loops broken), duplicates dropped.

    Each job's root is the folder it was found in (its output mirrors the path below it); with
    ``keep_folder_names`` it is that folder's parent, so the folder's own name leads the path: the app's
    folders, added one at a time, then write into folders of their own names instead of mixing in the
    output's root. Returns the jobs and one-line problems with the given paths.
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
            if keep_folder_names:
                p = Path(os.path.abspath(p))  # "." has a name too
            root = p.parent if keep_folder_names else p
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
                        add(Path(folder) / name, root)
        elif p.is_file():
            add(p, p.parent)
        elif p.exists():
            problems.append(f"{p}: not a regular file")
        else:
            problems.append(f"{p}: no such file or folder")
    return jobs, problems
