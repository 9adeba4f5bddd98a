"""Run Again: colorize finished photos once more, and offer it when the settings changed since their run.

Each queue row remembers the ``RunKey`` of the run that last took it up (``QueueModel.begin_run``). What is
compared is what the written photo is made from (engine settings, export options including the colour
strength, the photo's colour hints), not how it was run: batch size, ``torch.compile``, compare mode and
what to do when an output exists change no pixel, so changing them offers nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from engine.hints import Hint
from engine.messages import part_of
from engine.options import ColorizeSettings, ExportOptions
from gui.model.settings import AppSettings


def pixels_of(model: ColorizeSettings) -> ColorizeSettings:
    """The part of the model settings that decides a photo's colours (not the batch size, nor compiling)."""
    return replace(model, batch_size=1, compile=False)


@dataclass(frozen=True)
class RunKey:
    """The settings one photo was made with, its hints included."""

    model: ColorizeSettings
    export: ExportOptions
    hints: tuple[Hint, ...] = ()
    compared: bool = False

    def made_from(self) -> tuple[ColorizeSettings, ExportOptions, tuple[Hint, ...]]:
        """The part that decides the output's pixels, name and place."""
        return pixels_of(self.model), replace(self.export, if_exists="new_name"), self.hints


def run_key(s: AppSettings, hints: Sequence[Hint] = ()) -> RunKey:
    return RunKey(s.model, s.export, tuple(hints), s.compare)


def out_of_date(done_with: RunKey | None, now: RunKey) -> bool:
    """Whether a photo made with ``done_with`` would come out differently now (other engine or export
    settings, other hints); never for a batch size, compare mode or the like.
    """
    return done_with is None or done_with.made_from() != now.made_from()


def changed_text(stale: int, shortcut: str, selected: int = 0, selected_stale: int = 0, total: int = 0) -> str:
    """The status-bar offer once settings or hints changed since ``stale`` done photos were colorized. Run Again
    takes the ``selected`` rows (``selected_stale`` of them among the stale), or with none selected all ``total``
    rows: the sentence says which, so a Run Again meant for one photo never redoes the queue. "Settings or hints":
    a photo may be out of date by either, whichever changed last.
    """
    them, was = ("them", "were") if stale != 1 else ("it", "was")
    total = max(total, stale)
    part = part_of(stale, total, "photo")
    head = f"{part[0].upper()}{part[1:]} {was} colorized with other settings or hints"
    run = f"Run Again ({shortcut})"
    if selected and not selected_stale:
        chosen = "selected photo was" if selected == 1 else "selected photos were"
        return head + f"; the {chosen} not. To redo {them}, select {them}, then {run}."
    if selected:
        chosen = "the selected photo" if selected == 1 else f"the {selected} selected photos"
        every = f"; with none selected, all {total}" if total > selected else ""
        return head + f". {run} redoes {chosen}{every}."
    if stale < total:  # what Run Again does first: a narrow window cuts the line's end
        return head + f". {run} redoes all {total}; select {them} first to redo only {them}."
    return head + f". {run} redoes {them}."


def nothing_to_run_text(shortcut: str) -> str:
    """What Start says when every photo is finished: not a dead end, Run Again is the way on."""
    return (f"Every queued photo is already done or skipped: Run Again ({shortcut}) colorizes them again "
            "(the selected photos, or all)")
