"""Output paths: where each photo's colour version goes, decided before anything is written."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from ..imageio import output_extension
from ..options import ExportOptions, Job


def _safe_relative(job: Job) -> Path:
    try:
        rel = job.path.relative_to(job.root)
    except ValueError:
        rel = Path(job.path.name)
    parts = [part for part in rel.parts if part not in ("", ".", "..")]
    return Path(*parts) if parts else Path(job.path.name)


EXISTS = "output exists"  # why "skip" skips a photo


class OutputPlanner:
    """Chooses output paths: inside the output folder, never an input, never twice in a batch."""

    def __init__(self, export: ExportOptions, inputs: Sequence[Job]) -> None:
        self.export = export
        self.root = Path(os.path.realpath(export.output_dir))
        self.inputs = {os.path.realpath(j.path) for j in inputs}
        self.taken: set[str] = set()
        self.renamed: set[int] = set()  # job indices given a "(n)" name: their own name was taken

    def plan(self, job: Job) -> tuple[Path, str]:
        """(path, "") to write it there; (the output there already, ``EXISTS``) to skip the photo."""
        e = self.export
        rel = _safe_relative(job) if e.mirror_subfolders else Path(job.path.name)
        stem = Path(rel.name).stem
        name = e.name_pattern.format(stem=stem, index=job.index + 1).replace("/", "_").replace("\\", "_")
        if name in ("", ".", ".."):
            name = stem
        ext = output_extension(job.path, e.format)
        folder = self.root / rel.parent
        real_folder = Path(os.path.realpath(folder))
        if real_folder != self.root and self.root not in real_folder.parents:
            folder = self.root  # a symlinked subfolder pointing elsewhere: write at the top instead
        own_output = self._own_output(job, folder, name, ext)
        if own_output is not None and own_output.stem != name:  # its "(n)" name of before: still a new name
            self.renamed.add(job.index)
        out = own_output or folder / (name + ext)
        key = os.path.realpath(out)
        clash = key in self.inputs or key in self.taken
        own = job.replaces is not None and os.path.realpath(job.replaces) == key
        if (out.exists() and not own) or clash:
            if e.if_exists == "skip" and not clash:
                self.taken.add(key)  # a later photo of the same name is not skipped for this one's output
                return out, EXISTS
            if e.if_exists == "new_name" or clash:
                # Replace and skip take the "(n)" name an earlier run of the same inputs gave a photo whose name
                # another photo of the run has (the plan is the same each run); "new_name", or a photo whose name
                # an input has (the output folder holds photos), only a name no file has.
                out = self._new_name(folder, name, ext, on_disk_too=e.if_exists == "new_name" or key in self.inputs)
                key = os.path.realpath(out)
                if e.if_exists == "skip" and out.exists():
                    self.taken.add(key)
                    return out, EXISTS
                self.renamed.add(job.index)
        self.taken.add(key)
        return out, ""

    @staticmethod
    def _own_output(job: Job, folder: Path, name: str, ext: str) -> Path | None:
        """The photo's own earlier output where it is this plan's name or one of its "(n)" names, in this folder."""
        if job.replaces is None:
            return None
        own = Path(job.replaces)
        if own.suffix != ext or os.path.realpath(own.parent) != os.path.realpath(folder):
            return None
        return own if own.stem == name or re.fullmatch(re.escape(name) + r" \(\d+\)", own.stem) else None

    def _new_name(self, folder: Path, name: str, ext: str, on_disk_too: bool) -> Path:
        """The first "(n)" name that is no input and no other photo's in this run (``on_disk_too``: nor a file)."""
        n = 1
        while True:
            cand = folder / f"{name} ({n}){ext}"
            key = os.path.realpath(cand)
            if key not in self.inputs and key not in self.taken and not (on_disk_too and cand.exists()):
                return cand
            n += 1


def copies_to_ask_about(export: ExportOptions, jobs: Sequence[Job], stop: Callable[[], bool] = lambda: False) -> int:
    """How many "(1)" copies of existing outputs a run would write, when that is at least half its photos (worth a
    word before it starts: a folder run a second time); 0 otherwise, and where Export replaces or skips anyway.
    The photos "skip" would skip (their own last output, which a run again replaces, is not one); only the disk.
    ``stop()`` true ends the count early (0: the window closing while a network share is read).
    """
    if export.if_exists != "new_name" or not jobs:
        return 0
    planner = OutputPlanner(replace(export, if_exists="skip"), jobs)
    taken = 0
    for job in jobs:
        if stop():
            return 0
        taken += planner.plan(job)[1] == EXISTS
    return taken if 2 * taken >= len(jobs) else 0
