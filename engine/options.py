"""Everything the GUI and the CLI pass into the engine or read back from it: settings, jobs and
results as plain dataclasses, with the names of every choice. No torch here, so the GUI can
build and validate requests without loading the model's libraries.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path

import numpy as np

from .messages import counted

ENGINES = ("optimized", "baseline", "openvino")  # openvino: the optional extra, CPU only
DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = ("auto", "fp32", "fp16", "bf16")  # auto: the fastest precision the device runs well
FORMATS = ("keep", "png", "jpg", "webp", "tiff")
IF_EXISTS = ("skip", "overwrite", "new_name")
COLOUR_INPUTS = ("colorize", "skip")  # photos already in colour: colorize from their luminance, or skip
IN_COLOUR = "in colour: colorized from its lightness, its own colours not kept"  # a colour input's note
ALREADY_IN_COLOUR = "already in colour"  # why --colour-inputs skip skipped a photo
MIN_WORK = 64  # tiny photos are worked at least this large
# The longer side the model colours a photo at. 256, not 512: on photos from sources the training never saw, clean
# and as old-print scans, and on large photos as on small ones, 256 gave more colour skill (docs/experiments, "Which
# working size"); the training crops are 224 px views of a third to all of a photo, the scale the network knows.
WORKING_SIZE = 256
MAX_BATCH = 64
MAX_WORK = 4096
MAX_STRENGTH = 2.0  # colour strength: 0 grey, 1 the model's own colour, 2 twice its chroma


def engine_device(engine: str, device: str) -> str:
    """The device setting an engine runs under: the OpenVINO engine's "auto" is the CPU, and CUDA is refused."""
    if engine != "openvino" or device == "cpu":
        return device
    if device == "cuda":
        raise ValueError("the OpenVINO engine runs on the CPU only: use --device cpu, or the optimized engine")
    return "cpu"


class Status(StrEnum):
    """Where one photo stands. A ``str``, so it compares, prints and pickles as its name."""

    QUEUED = "queued"  # the GUI's queue only: not yet sent
    WORKING = "working"  # the GUI's queue only: in the batch running now
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"  # the batch stopped before this photo was written


@dataclass(frozen=True)
class Agreement:
    """How close a runtime's ab (Lab units, -110..110) stays to the fp32 baseline's on the same L.

    ``p999``: 99.9% of the output's ab values are within this of the baseline's (the robust figure,
    what a viewer could notice). ``max_abs``: no value is further than this (one pixel decides it;
    reduced precision flips a few pixels near the edge between two colour bins).
    """

    p999: float
    max_abs: float


# The documented agreement of the optimized runtime with the baseline, per precision (here, torch-free, so
# the GUI can show it next to a comparison). Measured with the shipped weights on the sample photos
# (512 px, batch 1 and 8), then given a margin:
# - fp32 differs only in summation order: measured max 1.2e-3, p99.9 7e-4 (AVX2 and AMX CPUs).
# - bf16 keeps 8 significant bits through ~60 layers; the trained read-out (a softmax at a temperature
#   below 1) amplifies that where two colours are nearly equally likely. Model v1 (temperature 0.55): max
#   31.4, p99.9 up to 17.1 over a batch. Model v2 (temperature 0.45, sharper): max 45.5 (49.3 without its
#   doubt pull), p99.9 26.1 at batch 1 and 18.6 at batch 8, mean 1.7, on an AMX Xeon. Untrained models (the
#   tests' random_model) agree ~100x closer, their softmax being flat: a test of bf16 drift must run the
#   shipped weights.
# - fp16 (CUDA) keeps 11 significant bits, rounding 8x finer than bf16: bf16's bounds / 4 (not measured here).
AGREEMENT: dict[str, Agreement] = {
    "fp32": Agreement(p999=1.5e-3, max_abs=3e-3),
    "bf16": Agreement(p999=34.0, max_abs=64.0),
    "fp16": Agreement(p999=8.5, max_abs=16.0),
}


@dataclass(frozen=True)
class ColorizeSettings:
    """The engine settings as the user chose them; validated by ``validated`` (and ``Colorizer.create``)."""

    engine: str = "optimized"
    device: str = "auto"
    precision: str = "auto"
    batch_size: int = 4
    size: int = WORKING_SIZE
    compile: bool = False
    weights: Path | None = None
    by_look: bool = False  # "auto": the model chosen per folder by its photos' look (``engine.batch.model_choice``)

    def validated(self) -> ColorizeSettings:
        if self.engine not in ENGINES:
            raise ValueError(f"unknown engine {self.engine!r}: use one of {', '.join(ENGINES)}")
        if self.device not in DEVICES:
            raise ValueError(f"unknown device {self.device!r}: use one of {', '.join(DEVICES)}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"unknown precision {self.precision!r}: use one of {', '.join(PRECISIONS)}")
        if not 1 <= self.batch_size <= MAX_BATCH:
            raise ValueError(f"batch size must be between 1 and {MAX_BATCH}")
        if not MIN_WORK <= self.size <= MAX_WORK:
            raise ValueError(f"working size must be between {MIN_WORK} and {MAX_WORK}")
        if self.by_look and self.weights is not None:
            raise ValueError("a model chosen by the photos' look and a weights file: give one of them")
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
    strength: float = 1.0  # the predicted chroma is scaled by this when written: 0 grey, 1 the model's own

    def validated(self) -> ExportOptions:
        if self.format not in FORMATS:
            raise ValueError(f"unknown format {self.format!r}: use one of {', '.join(FORMATS)}")
        if self.if_exists not in IF_EXISTS:
            raise ValueError(f"if_exists must be one of {IF_EXISTS}")
        if self.colour_inputs not in COLOUR_INPUTS:
            raise ValueError(f"colour_inputs must be one of {COLOUR_INPUTS}")
        if not 1 <= self.jpeg_quality <= 100:
            raise ValueError("JPEG quality must be between 1 and 100")
        if not 0.0 <= self.strength <= MAX_STRENGTH:  # also refuses NaN
            raise ValueError(f"colour strength must be between 0 and {MAX_STRENGTH:g}")
        problem = pattern_problem(self.name_pattern)
        if problem:
            raise ValueError(problem)
        return self


@dataclass(frozen=True)
class Job:
    """One input photo; ``root`` is the folder it was found in (for mirroring subfolders). ``replaces``: the
    output this photo's own earlier run wrote (the app's Run Again), which its new output may replace
    whatever ``if_exists`` says: a second run of the same photo must not leave a "(1)" copy beside the first.
    """

    index: int
    path: Path
    root: Path
    replaces: Path | None = None
    number: int | None = None  # its {index} in a name pattern: the app's queue row, the same on every run; else index+1


@dataclass
class Preview:
    """A small copy for the GUI: L and the predicted ab, so colour strength can change without the model."""

    L: np.ndarray  # h x w float32
    ab: np.ndarray  # h x w x 2 float32


@dataclass
class PhotoResult:
    index: int
    source: Path
    status: Status  # DONE, FAILED, SKIPPED or CANCELLED
    message: str = ""
    output: Path | None = None
    width: int = 0
    height: int = 0
    decode_ms: float = 0.0
    infer_ms: float = 0.0
    encode_ms: float = 0.0
    compare_infer_ms: float | None = None  # the baseline's model time for this photo (its share of the batch)
    max_abs_diff: float | None = None  # this photo's largest |ab| difference between the two engines
    p999_abs_diff: float | None = None  # ... and its 99.9th percentile
    preview: Preview | None = None
    looks_old: bool | None = None  # the input reads as an old print's scan (``engine.print_look``; None: not looked at)
    renamed: bool = False  # ``output`` is a "(n)" name, the photo's own being taken
    in_colour: bool = False  # the input was in colour (not toned): colorized from its lightness, its colours not kept
    existing: Path | None = None  # SKIPPED as its output exists: that file (to look at; never the photo's "own")


@dataclass
class BatchSummary:
    """A batch's counts and times. ``wall_s`` includes the time held paused (``paused_s``) and the
    comparison engine's time (``compare_infer_s``); the rates below leave out what is not the batch's own work.
    """

    total: int
    done: int = 0
    failed: int = 0
    skipped: int = 0
    cancelled: bool = False
    stopped_reason: str | None = None
    wall_s: float = 0.0
    paused_s: float = 0.0  # held between photos by a pause
    infer_s: float = 0.0
    engine: str = ""  # e.g. "optimized bf16, batch 4"
    precision: str = ""  # the precision the engine ran in ("auto" resolved)
    compare_engine: str | None = None  # e.g. "baseline fp32, batch 4" when comparing
    compare_infer_s: float = 0.0  # the comparison engine's model time
    compared_infer_s: float = 0.0  # the engine's own model time on the batches the comparison also ran
    max_abs_diff: float | None = None  # largest |ab| difference between the two engines over the batch
    p999_abs_diff: float | None = None  # its 99.9th percentile over every ab value compared
    chosen_model: str = ""  # "auto": the model the photos' look chose (a bundled model's name) ...
    model_choice: str = ""  # ... the model and why, as the window's Model row says it ...
    chosen_weights: Path | None = None  # ... and its weights (None: the shipped model)
    folder_models: dict[Path, str] = field(default_factory=dict)  # ... each queue folder's model by its look (a
    # comparison runs the chosen one for every photo)
    results: list[PhotoResult] = field(default_factory=list)

    @property
    def active_s(self) -> float:
        """Wall time less the time held paused."""
        return max(0.0, self.wall_s - self.paused_s)

    @property
    def photos_per_s(self) -> float:
        return self.done / self.active_s if self.active_s > 0 else 0.0

    @property
    def model_busy_share(self) -> float:
        """Share of the batch's own time (not paused, not running the comparison) the model was computing."""
        own = self.active_s - self.compare_infer_s
        return min(1.0, self.infer_s / own) if own > 0 else 0.0

    @property
    def mean_ms_per_photo(self) -> float:
        return 1000 * self.active_s / self.done if self.done else 0.0

    @property
    def compare_speedup(self) -> float | None:
        """Total baseline model time over total model time of this engine, on the same photos."""
        if not self.compare_infer_s or not self.compared_infer_s:
            return None
        return self.compare_infer_s / self.compared_infer_s

    def add(self, result: PhotoResult) -> None:
        """Count one reported photo. Its preview is not kept: a summary of 10,000 photos must stay small."""
        self.results.append(replace(result, preview=None) if result.preview is not None else result)
        if result.status == Status.DONE:
            self.done += 1
        elif result.status == Status.FAILED:
            self.failed += 1
        elif result.status == Status.SKIPPED:
            self.skipped += 1

    @property
    def looks_old(self) -> int:
        """Photos done whose input reads as an old print's scan."""
        return sum(bool(r.looks_old) for r in self.results if r.status == Status.DONE)

    @property
    def looked(self) -> int:
        """Photos done that were looked at for that (``engine.print_look.looks_due``)."""
        return sum(r.looks_old is not None for r in self.results if r.status == Status.DONE)

    @property
    def renamed(self) -> int:
        """Photos done whose output went under a "(n)" name, their own being taken."""
        return sum(r.renamed for r in self.results if r.status == Status.DONE)

    def outcome_text(self) -> str:
        """", 3 under a new name, 2 failed, 1 skipped, cancelled": what went other than planned (empty when all
        went well); outputs written under a new name are said, since the person may look for them under their own.
        """
        text = f", {self.renamed} under a new name" if self.renamed else ""
        text += f", {self.failed} failed" if self.failed else ""
        text += f", {self.skipped} skipped" if self.skipped else ""
        untried = sum(r.status == Status.CANCELLED for r in self.results)
        text += f", {untried} not tried" if untried and self.stopped_reason else ""  # a cancel says itself
        return text + (", cancelled" if self.cancelled else "")

    def comparison(self) -> str | None:
        """What was compared, e.g. "optimized bf16, batch 4 vs baseline fp32, batch 4"."""
        return f"{self.engine} vs {self.compare_engine}" if self.compare_engine else None

    def line(self) -> str:
        if not self.done:  # nothing coloured: no speed to give ("0 photos in 0.08 s (0.00 photos/s)")
            return "No photo colorized" + self.outcome_text()
        own = self.active_s  # the time the rate is over: "100 photos in 11.0 s (9.09 photos/s), 14.5 s paused"
        wall = f"{own:.1f}" if own >= 1 else f"{own:.2f}"  # never "1 photo in 0.0 s"
        text = (f"{counted(self.done, 'photo')} in {wall} s ({self.photos_per_s:.2f} photos/s), "
                f"model busy {100 * self.model_busy_share:.0f}%") + self.outcome_text()
        if self.paused_s > 0:
            text += f", {self.paused_s:.1f} s paused (not counted)"
        return text
