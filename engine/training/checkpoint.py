"""The training's checkpoint: what ``train --resume`` needs to go on as if it had never stopped.

A checkpoint holds the weights, the optimizer, the moving average, the torch RNG and ``Progress``
(the step, the time spent, the history and the best snapshot so far); each step's batch depends only
on (seed, step), so nothing else is needed.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from ..atomic import atomic_write
from ..model import CVUNet
from .average import WeightAverage
from .settings import TrainSettings

log = logging.getLogger(__name__)


@dataclass
class Progress:
    """How far a training has come: saved in each checkpoint and read back on resume."""

    step: int = 0
    elapsed_before: float = 0.0  # seconds spent by the runs before this one
    history: list[dict[str, float]] = field(default_factory=list)  # one row per validation
    best: dict[str, float] | None = None  # the best snapshot on the tuning photos so far: its score and step


def save_checkpoint(path: Path, model: CVUNet, opt: torch.optim.Optimizer, average: WeightAverage | None,
                    progress: Progress, elapsed: float, s: TrainSettings) -> None:
    """Write the checkpoint atomically; ``elapsed``: the seconds spent so far, these runs' and the earlier ones'."""
    extra = {"average": average.shadow, "average_updates": average.updates} if average is not None else {}
    best = {"best": json.dumps(progress.best)} if progress.best is not None else {}
    with atomic_write(path) as f:
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": progress.step, **extra,
                    "elapsed": elapsed, "history": json.dumps(progress.history),
                    "torch_rng": torch.get_rng_state(), "settings": json.dumps(asdict(s), default=str),
                    **best}, f)


def resume(path: Path, best_path: Path, model: CVUNet, opt: torch.optim.Optimizer,
           average: WeightAverage | None, teacher: Path | None = None) -> Progress:
    """Load the checkpoint into the model, optimizer, average and torch RNG; its progress.

    The best snapshot is remembered only while its weights (``best_path``) are still there.
    """
    ck = torch.load(path, map_location="cpu", weights_only=True)
    if "settings" in ck:  # the loss must mean the same after a resume as before it
        before = json.loads(ck["settings"]).get("teacher")
        if before != (None if teacher is None else str(teacher)):
            raise ValueError(f"the checkpoint in {path.parent} was trained with --teacher {before}: resume with the "
                             "same --teacher, or start afresh in another --work folder")
    model.load_state_dict(ck["model"])
    opt.load_state_dict(ck["opt"])
    if average is not None and "average" in ck:
        average.shadow, average.updates = ck["average"], ck["average_updates"]
    progress = Progress(ck["step"], ck["elapsed"], json.loads(ck["history"]))
    torch.set_rng_state(ck["torch_rng"])
    if "best" in ck and best_path.exists():
        progress.best = json.loads(ck["best"])
    log.info("resumed at step %d", progress.step)
    return progress
