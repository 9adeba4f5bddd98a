"""What the UI thread hands the worker: frozen snapshots, so later edits in the window cannot
change a batch that is already running. Plain data: no Qt, and from the engine only its
torch-free ``engine.options`` and ``engine.hints``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.hints import Hint
from engine.options import ColorizeSettings, ExportOptions
from gui.model.models import SHIPPED


@dataclass(frozen=True)
class QueuedPhoto:
    """One queue row as the worker sees it; ``key`` maps results back to the row; ``hints``: its colour hints;
    ``replaces``: the output its last run wrote, which running it again may replace (never another file).
    """

    key: int
    path: Path
    root: Path
    hints: tuple[Hint, ...] = ()
    replaces: Path | None = None
    number: int | None = None  # its place in the queue, from 1: a name pattern's {index}, the same on every run


@dataclass(frozen=True)
class BatchRequest:
    """A whole batch. Result ``index`` i belongs to ``photos[i]``."""

    photos: tuple[QueuedPhoto, ...]
    model: ColorizeSettings
    export: ExportOptions
    compare: bool = False
    preview_size: int = 800
    model_name: str = SHIPPED  # the Engine panel's model, by name (``model.weights`` is its file)
    look_paths: tuple[Path, ...] = ()  # "auto": the photos whose look chooses the model (the queue); () = ``photos``
