"""Run Again: colorize finished photos once more, and offer it when the settings changed since their run.

Each queue row remembers the settings of the run that last took it up (``QueueModel.begin_run``);
``run_key`` is what is compared: everything that changes what is written or measured (engine
settings, export options including the colour strength, compare mode, and the photo's colour hints),
not the view.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.hints import Hint
from engine.messages import counted

from .settings import AppSettings


def run_key(s: AppSettings, hints: Sequence[Hint] = ()) -> tuple[Any, ...]:
    """The settings one photo is made with (its hints included), hashable and comparable."""
    return (s.model, s.export, s.compare, tuple(hints))


def out_of_date(done_with: Any, now: tuple[Any, ...]) -> bool:
    """Whether a photo made with the settings ``done_with`` would come out differently, or unmeasured, now:
    other engine or export settings, other hints, or compare mode asked for where it was not run (not the reverse).
    """
    if done_with is None:
        return True
    model, export, compared, *rest = done_with
    hints = rest[0] if rest else ()
    now_hints = now[3] if len(now) > 3 else ()
    return (model, export) != now[:2] or tuple(hints) != tuple(now_hints) or (now[2] and not compared)


def changed_text(stale: int, shortcut: str, what: str = "Settings") -> str:
    """The status-bar offer once settings (or a photo's hints: ``what``) changed since ``stale`` done photos
    were colorized.
    """
    return (f"{what} changed since {counted(stale, 'photo')} {'were' if stale != 1 else 'was'} colorized: "
            f"Run Again ({shortcut}) colorizes {'them' if stale != 1 else 'it'} with the new "
            f"{what.lower()}")


def nothing_to_run_text(shortcut: str) -> str:
    """What Start says when every photo is finished: not a dead end, Run Again is the way on."""
    return (f"Every queued photo is already done or skipped: Run Again ({shortcut}) colorizes them again "
            "(the selected photos, or all)")
