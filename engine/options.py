"""Everything the GUI and the CLI pass into the engine or read back from it: settings, jobs and
results as plain dataclasses, with the names of every choice. No torch here, so the GUI can
build and validate requests without loading the model's libraries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ENGINES = ("optimized", "baseline")
DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = ("auto", "fp32", "fp16", "bf16")  # auto: the fastest precision the device runs well
FORMATS = ("keep", "png", "jpg", "webp", "tiff")
IF_EXISTS = ("skip", "overwrite", "new_name")
COLOUR_INPUTS = ("colorize", "skip")  # photos already in colour: colorize from their luminance, or skip
MIN_WORK = 64  # tiny photos are worked at least this large
MAX_WORK = 4096


@dataclass(frozen=True)
class ColorizeSettings:
    """The engine settings as the user chose them; validated by ``validated`` (and ``Colorizer.create``)."""

    engine: str = "optimized"
    device: str = "auto"
    precision: str = "auto"
    batch_size: int = 4
    size: int = 512
    compile: bool = False
    weights: Path | None = None

    def validated(self) -> ColorizeSettings:
        if self.engine not in ENGINES:
            raise ValueError(f"unknown engine {self.engine!r}: use one of {', '.join(ENGINES)}")
        if self.device not in DEVICES:
            raise ValueError(f"unknown device {self.device!r}: use one of {', '.join(DEVICES)}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"unknown precision {self.precision!r}: use one of {', '.join(PRECISIONS)}")
        if not 1 <= self.batch_size <= 64:
            raise ValueError("batch size must be between 1 and 64")
        if not MIN_WORK <= self.size <= MAX_WORK:
            raise ValueError(f"working size must be between {MIN_WORK} and {MAX_WORK}")
        return self


def pattern_problem(pattern: str) -> str | None:
    """Why a file-name pattern cannot be used, or None."""
    if not pattern.strip():
        return "the file-name pattern is empty"
    try:
        pattern.format(stem="x", index=0)
    except (KeyError, IndexError, ValueError, AttributeError):
        return f"bad file-name pattern {pattern!r}: use {{stem}} and {{index}}"
    return None


@dataclass(frozen=True)
class ExportOptions:
    """Where and how outputs are written.

    ``name_pattern`` may use {stem} (the input's name without extension) and {index}.
    """

    output_dir: Path = Path("colorized")
    format: str = "keep"  # keep | png | jpg | webp | tiff
    jpeg_quality: int = 92
    mirror_subfolders: bool = True
    name_pattern: str = "{stem}"
    if_exists: str = "new_name"  # skip | overwrite | new_name
    keep_metadata: bool = True
    colour_inputs: str = "colorize"  # colorize | skip

    def validated(self) -> ExportOptions:
        if self.format not in FORMATS:
            raise ValueError(f"unknown format {self.format!r}: use one of {', '.join(FORMATS)}")
        if self.if_exists not in IF_EXISTS:
            raise ValueError(f"if_exists must be one of {IF_EXISTS}")
        if self.colour_inputs not in COLOUR_INPUTS:
            raise ValueError(f"colour_inputs must be one of {COLOUR_INPUTS}")
        if not 1 <= self.jpeg_quality <= 100:
            raise ValueError("JPEG quality must be between 1 and 100")
        problem = pattern_problem(self.name_pattern)
        if problem:
            raise ValueError(problem)
        return self


@dataclass(frozen=True)
class Job:
    """One input photo; ``root`` is the folder it was found in (for mirroring subfolders)."""

    index: int
    path: Path
    root: Path


@dataclass
class Preview:
    """A small copy for the GUI: L and the predicted ab, so colour strength can change without the model."""

    L: np.ndarray  # h x w float32
    ab: np.ndarray  # h x w x 2 float32


@dataclass
class PhotoResult:
    index: int
    source: Path
    status: str  # "done" | "failed" | "skipped" | "cancelled"
    message: str = ""
    output: Path | None = None
    width: int = 0
    height: int = 0
    decode_ms: float = 0.0
    infer_ms: float = 0.0
    encode_ms: float = 0.0
    compare_infer_ms: float | None = None
    max_abs_diff: float | None = None
    preview: Preview | None = None


@dataclass
class BatchSummary:
    total: int
    done: int = 0
    failed: int = 0
    skipped: int = 0
    cancelled: bool = False
    stopped_reason: str | None = None
    wall_s: float = 0.0
    infer_s: float = 0.0
    compare_infer_s: float = 0.0
    max_abs_diff: float | None = None
    results: list[PhotoResult] = field(default_factory=list)

    @property
    def photos_per_s(self) -> float:
        return self.done / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def model_busy_share(self) -> float:
        return min(1.0, self.infer_s / self.wall_s) if self.wall_s > 0 else 0.0

    @property
    def mean_ms_per_photo(self) -> float:
        return 1000 * self.wall_s / self.done if self.done else 0.0

    @property
    def compare_speedup(self) -> float | None:
        return self.compare_infer_s / self.infer_s if self.compare_infer_s and self.infer_s else None

    def line(self) -> str:
        text = (f"{self.done} photos in {self.wall_s:.1f} s ({self.photos_per_s:.2f} photos/s), "
                f"model busy {100 * self.model_busy_share:.0f}%")
        if self.failed:
            text += f", {self.failed} failed"
        if self.skipped:
            text += f", {self.skipped} skipped"
        if self.cancelled:
            text += ", cancelled"
        return text
