"""The teach dialog's plain parts: counting the colour photos in folders quickly (by extension, nothing decoded),
the estimate, the progress and the verdict in words, and a line of ``tune --progress-json`` read back.

The thresholds are the tune's own (``engine.tune_rules``, torch-free).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal

from engine.imageio import IMAGE_EXTENSIONS
from engine.messages import counted
from engine.tune_rules import FEW_PHOTOS, MIN_PHOTOS, held_out_count
from engine.tune_rules import HELD_OUT_SHARE as HELD_OUT_SHARE  # the rules, as the tests read them here
from engine.tune_rules import MAX_HELD_OUT as MAX_HELD_OUT
from engine.tune_rules import MIN_HELD_OUT as MIN_HELD_OUT
from gui.model.models import OLD_PRINTS, SHIPPED, ModelInfo, display_name

COUNT_LIMIT = 100_000  # counting stops here: a whole disk chosen by mistake must not keep a thread busy for long


def count_photos(folders: Iterable[Path], limit: int = COUNT_LIMIT,
                 stop: Callable[[], bool] = lambda: False) -> tuple[int, bool]:
    """(image files under ``folders``, by extension, each counted once; whether counting stopped at ``limit``)."""
    seen: set[str] = set()
    for folder in folders:
        folder = Path(folder)
        if folder.is_file():
            if folder.suffix.lower() in IMAGE_EXTENSIONS:
                seen.add(str(folder.resolve()))
            continue
        for root, _dirs, files in os.walk(folder):
            if stop():
                return len(seen), False
            for name in files:
                if os.path.splitext(name)[1].lower() in IMAGE_EXTENSIONS:
                    seen.add(os.path.join(os.path.realpath(root), name))
                    if len(seen) >= limit:
                        return len(seen), True
    return len(seen), False


class PhotoCounter(QObject):
    """Counts on a plain Python thread, so a huge or slow folder never holds up the window.

    ``counted(generation, count, capped)`` arrives on the UI thread (a queued signal); an answer for folders
    changed since (an older generation) is for the caller to ignore.
    """

    counted = Signal(int, int, bool)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.generation = 0
        self._stop = threading.Event()

    def count(self, folders: list[Path]) -> int:
        """Start counting ``folders``; a count still going for older folders stops. Returns the generation."""
        self._stop.set()
        self._stop = stop = threading.Event()
        self.generation += 1
        generation = self.generation

        def work() -> None:
            n, capped = count_photos(folders, stop=stop.is_set)
            if not stop.is_set():
                try:
                    self.counted.emit(generation, n, capped)
                except RuntimeError:  # the dialog's window went away while it counted
                    pass

        threading.Thread(target=work, name="count-photos", daemon=True).start()
        return generation

    def stop(self) -> None:
        self._stop.set()


def count_text(photos: int, capped: bool) -> str:
    return f"{'At least ' if capped else ''}{counted(photos, 'photo')} found; any grey ones among them will be skipped"


def photos_problem(photos: int) -> tuple[str, bool]:
    """(what to say about this many photos, whether Start is refused); ("", False) when it is enough."""
    if photos < MIN_PHOTOS:
        return (f"{counted(photos, 'photo')} found: teaching needs at least {MIN_PHOTOS} colour photos "
                f"({FEW_PHOTOS} or more is better)", True)
    if photos < FEW_PHOTOS:
        return (f"Only {photos} photos: the tuned model may not beat the one it starts from, and the measurement at "
                f"the end will be uncertain ({FEW_PHOTOS} or more is better)", False)
    return "", False


def estimate_text(photos: int, minutes: float) -> str:
    held = held_out_count(photos)
    return (f"About {minutes:g} minute{'s' if minutes != 1 else ''} of training, then a minute or two measuring: "
            "measured at the end on about "
            f"{held} of the {photos} photos ({round(100 * held / max(1, photos))}%), held out and never trained on.")


def clock(seconds: float) -> str:
    """7:05, or 1:02:05 past an hour."""
    s = max(0, round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def step_text(event: dict[str, Any]) -> str:
    """The progress bar's text for a step event: the step (of how many, once timed) and the time left."""
    steps = event.get("steps")
    of = f" of {steps}" if steps else ""
    left = clock(float(event.get("seconds_left") or 0))
    return f"step {event.get('step', 0)}{of} · about {left} left, then measuring"


def start_models(models: Iterable[ModelInfo]) -> list[tuple[str, str]]:
    """The models a tune can start from, (name, label) each: every usable one but Auto, which is two."""
    return [(m.name, m.label) for m in models if not (m.auto or m.problem)]


def base_argument(models: Iterable[ModelInfo], base: str) -> str | None:
    """``tune --base`` for ``base``: None for the shipped model (tune's default), a bundled one by name, a taught one
    by its file (a name may also be a file's name in the tune's working folder).
    """
    if base == SHIPPED:
        return None
    info = next((m for m in models if m.name == base), None)
    return base if info is None or info.bundled else str(info.path)


def start_words(base: str) -> str:
    """The model a tune starts from, as a sentence names it: "the shipped model", "the Old prints model"."""
    if base == SHIPPED:
        return "the shipped model"
    return f"the {display_name(base)} model" if base == OLD_PRINTS else f"the model '{base}'"


def verdict_text(heldout: dict[str, Any], base: str = SHIPPED) -> str:
    """The measured gain against the model the tune started from (``base``) in words first, its figure after, e.g.
    "Better: closer to the true colours than the shipped model on 22 photos held out (+0.62 dB, 90% interval +0.31
    to +0.95)".
    """
    gain, photos = round(float(heldout.get("gain_db", 0.0)), 2) + 0.0, int(heldout.get("photos", 0))  # no "-0.00"
    interval = heldout.get("interval")
    figure = f"{gain:+.2f} dB" + (f", 90% interval {interval[0]:+.2f} to {interval[1]:+.2f}" if interval else "")
    start = start_words(base)
    verdict = heldout.get("verdict")
    if verdict == "better":
        return f"Better: closer to the true colours than {start} on {photos} photos held out ({figure})."
    if verdict == "worse":
        return (f"Worse: further from the true colours than {start} on {photos} photos held out ({figure}). "
                f"Keep {start} (Discard this one).")
    return (f"Within chance: no clear difference from {start} on {photos} photos held out ({figure}). It may be no "
            f"better than {start}.")


def parse_event(line: str) -> dict[str, Any] | None:
    """One line of ``tune --progress-json`` as its event, or None for anything else."""
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) and isinstance(event.get("event"), str) else None


LOSS_SMOOTHING = 0.9  # the weight of the past in the loss plot's smoothed line: each step's loss is one crop batch's


def smoothed(values: Iterable[float], weight: float = LOSS_SMOOTHING) -> list[float]:
    """The exponential moving average of ``values``, bias-corrected so its start is not pulled toward 0: a batch's
    loss swings with its crops, and the trend under the swing is what says whether the tune still learns.
    """
    out, mean = [], 0.0
    for n, value in enumerate(values, 1):
        mean = weight * mean + (1.0 - weight) * value
        out.append(mean / (1.0 - weight ** n))
    return out
