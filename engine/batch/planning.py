"""Output paths: where each photo's colour version goes, decided before anything is written."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from ..imageio import made_here, output_extension
from ..options import ExportOptions, Job


def _safe_relative(job: Job) -> Path:
    try:
        rel = job.path.relative_to(job.root)
    except ValueError:
        rel = Path(job.path.name)
    parts = [part for part in rel.parts if part not in ("", ".", "..")]
    return Path(*parts) if parts else Path(job.path.name)


EXISTS = "output exists"  # why "skip" skips a photo
_COPY_NUMBER = re.compile(r"(.*) \(\d+\)")


class OutputPlanner:
    """Chooses output paths: inside the output folder, never an input, never twice in a batch.

    Where a photo's output folder is its own folder, an earlier run's outputs lie beside the photos and were found as
    inputs. One named as another photo's output (``x (1).jpg`` beside ``x.jpg``; ``x_colour.jpg`` with the pattern
    ``{stem}_colour``) that carries the mark this app writes in its outputs (``imageio.made_here``) is left out, and
    is that photo's output, not an input, to replace or skip. Without the mark it is a photo, never written over.
    """

    def __init__(self, export: ExportOptions, inputs: Sequence[Job]) -> None:
        self.export = export
        self.root = Path(os.path.realpath(export.output_dir))
        self.inputs = {os.path.realpath(j.path) for j in inputs}
        self.taken: set[str] = set()
        self.renamed: set[int] = set()  # job indices given a "(n)" name: their own name was taken
        self.replaced_own: dict[int, str] = {}  # job index -> "replaced its last output 'x (1).png'" (a "(n)" name)
        self._real: dict[Path, str] = {}  # folders' real paths: photos share folders
        self._where_of = {j.index: self._where(j) for j in inputs}
        self._copy_of = self._named_as_outputs(inputs)  # realpath -> the photo whose output it may be
        self._made_here: dict[str, bool] = {}
        # An output name that is a photo's own name and format (palette.png) is that photo's before another's
        # whose format changes to it (palette.gif, written as PNG): the one named so is found under its name.
        self._own_names: dict[str, tuple[int, str]] = {}
        for job in inputs:
            folder, name, ext = self._where_of[job.index]
            if ext.casefold() == job.path.suffix.casefold():
                key = os.path.realpath(folder / (name + ext))
                self._own_names.setdefault(key, (job.index, os.path.realpath(job.path)))

    def _realpath(self, folder: Path) -> str:
        if folder not in self._real:
            self._real[folder] = os.path.realpath(folder)
        return self._real[folder]

    def _where(self, job: Job) -> tuple[Path, str, str]:
        """The folder, name and extension of ``job``'s output, before any clash."""
        e = self.export
        rel = _safe_relative(job) if e.mirror_subfolders else Path(job.path.name)
        stem = Path(rel.name).stem
        number = job.index + 1 if job.number is None else job.number
        name = e.name_pattern.format(stem=stem, index=number).replace("/", "_").replace("\\", "_")
        if name in ("", ".", ".."):
            name = stem
        folder = self.root / rel.parent
        real_folder = Path(self._realpath(folder))
        if real_folder != self.root and self.root not in real_folder.parents:
            folder = self.root  # a symlinked subfolder pointing elsewhere: write at the top instead
        return folder, name, output_extension(job.path, e.format)

    def _named_as_outputs(self, jobs: Sequence[Job]) -> dict[str, str]:
        """The photos named as the output of another photo written beside itself, by real path: that photo's name."""
        beside: dict[tuple[str, str], list[str]] = {}  # (folder, output name) -> photos written beside themselves
        for job in jobs:
            out_folder, out_name, ext = self._where_of[job.index]
            real = self._realpath(out_folder)
            if real == self._realpath(job.path.parent):
                beside.setdefault((real, (out_name + ext).casefold()), []).append(os.path.realpath(job.path))
        copies: dict[str, str] = {}
        if not beside:
            return copies
        for job in jobs:
            key, here, stem = os.path.realpath(job.path), self._realpath(job.path.parent), job.path.stem
            numbered = _COPY_NUMBER.fullmatch(stem)
            for name in (stem, numbered.group(1)) if numbered else (stem,):
                others = [p for p in beside.get((here, (name + job.path.suffix).casefold()), ()) if p != key]
                if others:
                    copies[key] = Path(others[0]).name
                    break
        return copies

    def _is_copy(self, key: str) -> bool:
        """``key`` is named as another photo's output beside it and carries this app's mark (its header read once)."""
        if key not in self._copy_of:
            return False
        if key not in self._made_here:
            self._made_here[key] = made_here(Path(key))
        return self._made_here[key]

    def _is_input(self, key: str) -> bool:
        return key in self.inputs and not self._is_copy(key)

    def plan(self, job: Job) -> tuple[Path, str]:
        """(path, "") to write it there; (the output there already, ``EXISTS``) to skip the photo; (the photo, why)
        for a photo that is an earlier run's output.
        """
        e = self.export
        real = os.path.realpath(job.path)
        if self._is_copy(real):
            return job.path, f"a colour version of '{self._copy_of[real]}' beside it: an earlier run's output"
        folder, name, ext = self._where_of.get(job.index) or self._where(job)
        own_output = self._own_output(job, folder, name, ext)
        out = own_output or folder / (name + ext)
        key = os.path.realpath(out)
        owner, owner_path = self._own_names.get(key, (job.index, ""))
        clash = (self._is_input(key) or key in self.taken
                 or owner != job.index and not self._is_copy(owner_path))  # an earlier output owns nothing
        own = job.replaces is not None and os.path.realpath(job.replaces) == key
        if (out.exists() and not own) or clash:
            if e.if_exists == "skip" and not clash:
                self.taken.add(key)  # a later photo of the same name is not skipped for this one's output
                return out, EXISTS
            if e.if_exists == "new_name" or clash:
                # Replace and skip take the "(n)" name an earlier run of the same inputs gave a photo whose name
                # another photo of the run has (the plan is the same each run); "new_name", or a photo whose name
                # an input has (the output folder holds photos), only a name no file has.
                out = self._new_name(folder, name, ext, on_disk_too=e.if_exists == "new_name" or self._is_input(key))
                key = os.path.realpath(out)
                if e.if_exists == "skip" and out.exists():
                    self.taken.add(key)
                    return out, EXISTS
                self.renamed.add(job.index)
        if own_output is not None and out == own_output and own_output.stem != name and own_output.exists():
            self.replaced_own[job.index] = f"replaced its last output '{own_output.name}'"  # its "(n)": no new copy
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
        numbered = _COPY_NUMBER.fullmatch(own.stem)
        return own if own.stem == name or (numbered is not None and numbered.group(1) == name) else None

    def _new_name(self, folder: Path, name: str, ext: str, on_disk_too: bool) -> Path:
        """The first "(n)" name that is no input and no other photo's in this run (``on_disk_too``: nor a file)."""
        n = 1
        while True:
            cand = folder / f"{name} ({n}){ext}"
            key = os.path.realpath(cand)
            copy = self.export.if_exists != "new_name" and self._is_copy(key)  # an earlier run's, to replace or skip
            if not self._is_input(key) and key not in self.taken and (copy or not (on_disk_too and cand.exists())):
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
