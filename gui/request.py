"""What the UI thread hands the worker: frozen snapshots, so later edits in the window cannot
change a batch that is already running. Plain data, no Qt and no engine imports.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ENGINES = ("optimized", "baseline")
DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = ("auto", "fp32", "fp16", "bf16")
FORMATS = ("keep", "png", "jpg", "webp", "tiff")
IF_EXISTS = ("skip", "overwrite", "new_name")
COLOUR_INPUTS = ("colorize", "skip")


@dataclass(frozen=True)
class ModelChoice:
    """The engine settings as the user chose them (mirrors ``engine.colorizer.ColorizeSettings``)."""

    engine: str = "optimized"
    device: str = "auto"
    precision: str = "auto"
    batch_size: int = 4
    size: int = 512


@dataclass(frozen=True)
class ExportChoice:
    """Where and how outputs go (mirrors ``engine.pipeline.ExportOptions``)."""

    output_dir: Path = Path("colorized")
    format: str = "keep"
    jpeg_quality: int = 92
    mirror_subfolders: bool = True
    name_pattern: str = "{stem}"
    if_exists: str = "new_name"
    keep_metadata: bool = True
    colour_inputs: str = "colorize"


def pattern_problem(pattern: str) -> str | None:
    """Why a file-name pattern cannot be used, or None. Same rule as the engine's validation."""
    if not pattern.strip():
        return "the file-name pattern is empty"
    try:
        pattern.format(stem="x", index=0)
    except (KeyError, IndexError, ValueError):
        return f"bad file-name pattern {pattern!r}: use {{stem}} and {{index}}"
    return None


@dataclass(frozen=True)
class QueuedPhoto:
    """One queue row as the worker sees it; ``key`` maps results back to the row."""

    key: int
    path: Path
    root: Path


@dataclass(frozen=True)
class BatchRequest:
    """A whole batch. Result ``index`` i belongs to ``photos[i]``."""

    photos: tuple[QueuedPhoto, ...]
    model: ModelChoice
    export: ExportChoice
    compare: bool = False
    preview_size: int = 800
