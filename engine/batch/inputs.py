"""Finding the photos to colorize in the files and folders a user gave."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from ..imageio import IMAGE_EXTENSIONS
from ..options import Job
from ..partials import PARTIAL_MARK

# Folders that file servers, cameras and other systems keep beside photos: thumbnails and deleted files, not photos.
SYSTEM_FOLDERS = frozenset(name.casefold() for name in (
    "@eaDir", "#recycle", "#snapshot", "__MACOSX", "$RECYCLE.BIN", "System Volume Information"))


def _walked(name: str) -> bool:
    """A file or folder a walk looks into: not hidden ("._x.jpg" twins from a Mac, ".thumbnails") nor a system one."""
    return not name.startswith(".") and name.casefold() not in SYSTEM_FOLDERS


def collect_inputs(paths: Iterable[Path], *, keep_folder_names: bool | None = None,
                   beside: Iterable[tuple[Path, Path]] = (),
                   leave_out: Path | None = None) -> tuple[list[Job], list[str]]:
    """Files as given, folders walked recursively (symlink loops broken; hidden and system folders and files, the
    output folder ``leave_out`` and the folders the given ones write into in it, where inside one given, not looked
    into), duplicates dropped.

    Each job's root is the folder it was found in (its output mirrors the path below it); with
    ``keep_folder_names`` (by default: when several paths are given) it is that folder's parent, so the folder's
    own name leads the path and folders given together, or the app's added one at a time, write into folders of
    their own names instead of mixing in the output's root. Two folders of one name (``a/scans``, ``b/scans``)
    keep as many of their parents' names as tell them apart, from each other and from the folders of ``beside``,
    (photo, root) pairs already queued, whose output paths stay as they are. Returns the jobs and one-line problems
    with the paths.
    """
    given = [Path(p) for p in paths]
    if keep_folder_names is None:
        keep_folder_names = len(given) > 1
    roots = (_distinct_roots([Path(os.path.abspath(p)) for p in given if p.is_dir()], _first_names(beside))
             if keep_folder_names else {})
    jobs: list[Job] = []
    problems: list[str] = []
    seen: set[str] = set()
    # The output folder, and where each folder's outputs go in it ("scans/scans" where the output folder is the
    # folder itself and it keeps its name), by (device, inode): case and links aside. Never a folder given itself.
    skip = {_identity(f) for f in [leave_out, *(leave_out / Path(p).relative_to(r) for p, r in roots.items())]} \
        if leave_out is not None else set()

    def add(path: Path, root: Path) -> None:
        key = os.path.realpath(path)
        if key not in seen:
            seen.add(key)
            jobs.append(Job(len(jobs), path, root))

    def unreadable(err: OSError) -> None:
        problems.append(f"{err.filename or p}: cannot read this folder ({err.strerror or err})")

    for p in given:
        if p.is_dir():
            if keep_folder_names:
                p = Path(os.path.abspath(p))  # "." has a name too
            root = roots[p] if keep_folder_names else p
            visited: set[tuple[int, int]] = set()
            for folder, dirs, files in os.walk(p, followlinks=True, onerror=unreadable):
                try:
                    st = os.stat(folder)
                except OSError as err:
                    unreadable(err)
                    dirs[:] = []
                    continue
                if (st.st_dev, st.st_ino) in visited or (  # a symlink back to a folder already walked
                        (st.st_dev, st.st_ino) in skip and folder != str(p)):  # the outputs, inside it
                    dirs[:] = []
                    continue
                visited.add((st.st_dev, st.st_ino))
                dirs[:] = sorted(d for d in dirs if _walked(d))
                for name in sorted(files):
                    if (Path(name).suffix.lower() in IMAGE_EXTENSIONS and not name.endswith(PARTIAL_MARK)
                            and _walked(name)):
                        add(Path(folder) / name, root)
        elif p.is_file():
            add(p, p.parent)
        elif p.exists():
            problems.append(f"{p}: not a regular file")
        else:
            problems.append(f"{p}: no such file or folder")
    return jobs, problems


def _identity(folder: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(folder)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def output_folder_inside(paths: Iterable[Path], output_dir: Path, keep_folder_names: bool = False) -> Path | None:
    """The folder given that holds the output folder, or (``keep_folder_names``) the folder of its own name in the
    output folder, below it: its photos are left out of a walk. None where there is none, or nothing there yet.
    """
    for p in paths:
        if not p.is_dir():
            continue
        real = Path(os.path.realpath(p))
        for out in (output_dir, output_dir / real.name) if keep_folder_names else (output_dir,):
            out = Path(os.path.realpath(out))
            if out.is_dir() and real in out.parents:
                return Path(p)
    return None


def _first_names(pairs: Iterable[tuple[Path, Path]]) -> dict[str, Path]:
    """The folder each (photo, root) pair's output path starts with, by its name (photos given alone start none)."""
    names: dict[str, Path] = {}
    for path, root in pairs:
        try:
            parts = path.relative_to(root).parts
        except ValueError:
            continue
        if len(parts) > 1:
            names.setdefault(parts[0].casefold(), root / parts[0])
    return names


def _distinct_roots(folders: list[Path], taken: dict[str, Path]) -> dict[Path, Path]:
    """Each folder's root: its parent, or an ancestor further up where another folder, or a name ``taken`` by
    another folder, has the same last names.
    """
    depth = dict.fromkeys(folders, 1)

    def clashes(f: Path, kept: dict[Path, tuple[str, ...]], counts: Counter[tuple[str, ...]]) -> bool:
        first = Path(*f.parts[:len(f.parts) - depth[f] + 1])  # the folder its output path starts with
        if counts[kept[f]] > 1 or taken.get(kept[f][0], first) != first:
            return True
        # ("a",) beside ("a", "scans"): the first folder's own "scans/" would write where the second writes
        return any(other[:len(kept[f])] == kept[f] or kept[f][:len(other)] == other
                   for g, other in kept.items() if g != f and len(other) != len(kept[f]))

    while True:  # names told apart as a case-blind disk (Windows, macOS) would
        kept = {f: tuple(part.casefold() for part in f.parts[-depth[f]:]) for f in folders}
        counts = Counter(kept.values())
        grow = [f for f in depth if depth[f] < len(f.parts) - 1 and clashes(f, kept, counts)]
        if not grow:
            return {f: f.parents[depth[f] - 1] if len(f.parts) > 1 else f for f in folders}  # "/": itself
        for f in grow:
            depth[f] += 1
