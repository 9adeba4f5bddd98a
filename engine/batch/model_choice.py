""""auto": the model for a batch chosen by how its photos look. A box of old prints goes to the old-prints model, a
folder of modern photos to the shipped one; a folder's majority decides, since the gate misjudges a few photos one
at a time (``docs/experiments``, "auto"). A queue of several folders gets each folder's own choice, so a folder of
old prints dropped beside modern photos is not coloured by the modern photos' model; a folder too small to judge
alone follows the whole batch. A preview is a batch of one.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

import numpy as np

from ..imageio import IMAGE_EXTENSIONS, ImageError, decode
from ..messages import counted, printable
from ..named_models import BUNDLED, OLD_PRINTS, SHIPPED
from ..options import ColorizeSettings
from ..partials import PARTIAL_MARK
from ..print_look import looks_like_old_print

SAMPLE = 24  # photos looked at, evenly spaced through the batch: about 0.3 s for 1 MP photos, 5 s for 12 MP scans
OLD_SHARE = 0.5  # the share of them that must read as old prints: the batch's majority
LOOK_BUDGET = 48  # photos looked at in all when a batch spans several folders (twice one folder's sample)
FOLDER_MIN = 3  # photos of a folder looked at for it to be judged on its own: fewer follow the whole batch


@dataclass(frozen=True)
class BatchLook:
    """How many of the photos looked at read as old prints' scans, and the model that follows."""

    sampled: int
    looks_old: int

    @property
    def model(self) -> str:
        old = self.sampled > 0 and self.looks_old >= OLD_SHARE * self.sampled
        return OLD_PRINTS if old else SHIPPED

    @property
    def weights(self) -> Path | None:
        """``ColorizeSettings.weights`` for the model: None for the shipped one (the engine's default)."""
        return weights_of(self.model)

    def why(self) -> str:
        """Why this model, for the terminal and the window's summary."""
        if not self.sampled:
            return "no photo could be read before the run to choose by look"
        return (f"chosen by the photos' look: {self.looks_old} of the {self.sampled} looked at seem to be scans of "
                "old prints")

    def line(self) -> str:
        return f"model {self.model}{':' if not self.sampled else ','} {self.why()}"


def evenly(items: Sequence[Path], n: int) -> list[Path]:
    """Up to ``n`` of ``items``, spread from first to last."""
    if len(items) <= n:
        return list(items)
    step = (len(items) - 1) / (n - 1) if n > 1 else 0
    return [items[round(i * step)] for i in range(n)]


def look_of_batch(paths: Sequence[Path], sample: int = SAMPLE,
                  stop: Callable[[], bool] | None = None) -> BatchLook:
    """Reads up to ``sample`` of the photos; one that cannot be read is left out (its error comes in the batch),
    one in real colour counts as not an old print. ``stop``: asked between photos (a cancel), ends the look early.
    """
    looked = old = 0
    for path in evenly(paths, sample):
        if stop is not None and stop():
            break
        try:
            image = decode(path, refuse_outputs=True)  # an output beside the photos is not their look
        except (ImageError, OSError, MemoryError):
            continue
        looked += 1
        old += not image.is_colour and looks_like_old_print(image.pixels)
    return BatchLook(looked, old)


@dataclass(frozen=True)
class FolderLooks:
    """A batch's look folder by folder: ``overall`` pools every photo looked at, ``own`` holds the folders with
    enough of theirs looked at to be judged alone (the rest follow ``overall``), ``photos`` counts each folder's.
    """

    overall: BatchLook
    own: dict[Path, BatchLook] = field(default_factory=dict)
    photos: dict[Path, int] = field(default_factory=dict)

    def model_of(self, path: Path) -> str:
        return self.own.get(Path(path).parent, self.overall).model

    @cached_property
    def models(self) -> dict[str, list[Path]]:
        """Each model chosen, with its folders in the batch's order."""
        out: dict[str, list[Path]] = {}
        for folder in self.photos:
            out.setdefault(self.own.get(folder, self.overall).model, []).append(folder)
        return out

    @property
    def mixed(self) -> bool:
        return len(self.models) > 1

    @cached_property
    def main_model(self) -> str:
        """The model most of the batch's photos go to (the pooled look's on a tie)."""
        count = {m: sum(self.photos[f] for f in fs) for m, fs in self.models.items()}
        return max(count, key=lambda m: (count[m], m == self.overall.model)) if count else self.overall.model

    def look_of(self, model: str) -> BatchLook:
        """The looks behind ``model``'s folders: those judged alone, summed (the whole batch's where none was)."""
        own = [self.own[f] for f in self.models.get(model, []) if f in self.own]
        return BatchLook(sum(x.sampled for x in own), sum(x.looks_old for x in own)) if own else self.overall

    def for_photos(self, paths: Sequence[Path]) -> FolderLooks:
        """The same choices, told for ``paths`` (a run of some of the photos looked at): their folders and counts."""
        return FolderLooks(self.overall, self.own, dict(Counter(Path(p).parent for p in paths)))

    def routes(self, paths: Sequence[Path], main: str) -> dict[int, str]:
        """The model for each photo (by its position in ``paths``) whose folder's look calls for another than
        ``main``, the run's model.
        """
        return {i: m for i, p in enumerate(paths) if (m := self.model_of(p)) != main}

    def one_model_text(self, main: str, why: str, name: Callable[[str], str] = str) -> str:
        """A run that takes one model though its folders' looks differ: "shipped for every photo, as ``why`` (by
        the look: ...)".
        """
        return f"{name(main)} for every photo, as {why} (by the look: {self.breakdown(name)})"

    def breakdown(self, name: Callable[[str], str] = str) -> str:
        """Each model with its folders, photos and looks, the main one first: "shipped for 'modern' (43 photos; 2 of
        the 24 looked at read as old prints); ..."; ``name``: how a model is named (the window's "Old prints").
        """
        return "; ".join(
            f"{name(m)} for {_folders(fs)} ({counted(sum(self.photos[f] for f in fs), 'photo')}; "
            f"{self.look_of(m).looks_old} of the {self.look_of(m).sampled} looked at read as old prints)"
            for m, fs in sorted(self.models.items(), key=lambda kv: kv[0] != self.main_model))

    def why(self, name: Callable[[str], str] = str) -> str:
        """Why these models, for the terminal and the window's summary."""
        if not self.mixed:
            return self.look_of(self.main_model).why()
        return f"chosen folder by folder by the photos' look: {self.breakdown(name)}"

    def line(self) -> str:
        return self.look_of(self.main_model).line() if not self.mixed else f"model auto, {self.why()}"


def _folders(folders: list[Path]) -> str:
    """Two folders or fewer by name ('1950s', 'Grandma'; 'a/scans', 'b/scans' where one name is two folders'), more
    by their number.
    """
    names = [f.name or str(f) for f in folders]
    if len(set(names)) < len(names):
        names = [f"{f.parent.name}/{f.name}" if f.parent.name else str(f) for f in folders]
    names = [printable(n) for n in names]
    return ", ".join(f"'{n}'" for n in names) if len(names) <= 2 else counted(len(names), "folder")


def weights_of(model: str) -> Path | None:
    """``ColorizeSettings.weights`` for a bundled model's name: None for the shipped one (the engine's default)."""
    return BUNDLED[OLD_PRINTS] if model == OLD_PRINTS else None


def look_by_folder(paths: Sequence[Path], stop: Callable[[], bool] | None = None) -> FolderLooks:
    """``look_of_batch`` folder by folder (a photo's folder: the one it is in). One folder is looked at as a batch
    is (``SAMPLE`` photos); several share ``LOOK_BUDGET`` looks, at least ``FOLDER_MIN`` each, so that up to 16 are
    judged on their own (more folders: 16 of them spread through the batch, the rest following the whole batch's
    look), and the wait before a run is at most twice a one-folder batch's.
    """
    folders: dict[Path, list[Path]] = {}
    for path in paths:
        folders.setdefault(Path(path).parent, []).append(Path(path))
    each = SAMPLE if len(folders) <= 1 else max(FOLDER_MIN, min(SAMPLE, LOOK_BUDGET // len(folders)))
    looks: dict[Path, BatchLook] = {}
    for folder in evenly(list(folders), max(LOOK_BUDGET, SAMPLE) // each):
        if stop is not None and stop():
            break
        looks[folder] = look_of_batch(folders[folder], each, stop)
    overall = BatchLook(sum(x.sampled for x in looks.values()), sum(x.looks_old for x in looks.values()))
    own = {f: x for f, x in looks.items() if x.sampled >= FOLDER_MIN or (len(folders) == 1 and x.sampled)}
    return FolderLooks(overall, own, {f: len(items) for f, items in folders.items()})


def photos_in(folder: Path) -> list[Path]:
    """The photos directly in ``folder`` (not in its subfolders), by name; [] where it cannot be listed."""
    try:
        with os.scandir(folder) as entries:
            return sorted(Path(e.path) for e in entries if Path(e.name).suffix.lower() in IMAGE_EXTENSIONS
                          and PARTIAL_MARK not in e.name and e.is_file())
    except OSError:
        return []


def look_of_lightness(L: np.ndarray) -> BatchLook:
    """One photo as its own batch (the window's preview, which holds only its lightness: no tone to read)."""
    return BatchLook(1, int(looks_like_old_print(L, L)))


def chosen(settings: ColorizeSettings, look: BatchLook | str) -> ColorizeSettings:
    """``settings`` with the model ``look`` calls for (or a bundled model named), when they ask for one by look;
    unchanged otherwise.
    """
    if not settings.by_look:
        return settings
    return replace(settings, by_look=False, weights=weights_of(look if isinstance(look, str) else look.model))
