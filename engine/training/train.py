"""Training: ``python main.py train PHOTOS`` turns a folder of colour photos into weights.

This module puts a run together: the photos, the model and its optimizer, the steps (``loop``), the
checkpoint (``checkpoint``), the shipped snapshot and read-out (``tuning``) and the card (``card``).

A hinted model (``--hint-channels 3``) also reads colour hints drawn from each crop's true colours
(``hints.sample_hints``); its stem's hint inputs start at zero and are trained from the first step.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .. import color
from ..devices import BF16_PAYS, cpu_bf16_pays, cpu_bf16_speedup, cpu_has_fast_bf16
from ..model import CVUNet, ModelConfig, init_encoder_from_imagenet, with_hint_channels, with_hint_decoder
from ..progress import ProgressBar
from ..weights import load_imagenet, load_model, save_weights, stored_config, weights_meta
from .average import WeightAverage
from .card import TEACHER_READOUT, write_model_card
from .checkpoint import Progress, resume
from .dataset import PhotoSet, fixed_batch, load_photos
from .groups import balanced_weights, group_keys, group_shares
from .loop import BatchPrefetcher, Crops, Trainer, make_optimizer
from .settings import TrainSettings
from .tuning import choose_shipped_readout, matching_gain, quality

log = logging.getLogger(__name__)


def build_model(s: TrainSettings, train: PhotoSet) -> tuple[CVUNet, np.ndarray]:
    """A fresh model (ImageNet encoder, bins fitted to the photos) or the --init one; and the prior."""
    rng = np.random.default_rng(s.seed)
    samples = []
    for img in train.images:
        step_y, step_x = max(1, img.shape[0] // 96), max(1, img.shape[1] // 96)
        small = color.rgb_to_lab(np.ascontiguousarray(img[::step_y, ::step_x]))
        samples.append(small[..., 1:].reshape(-1, 2))
    ab = np.concatenate(samples)
    if s.init is not None:
        model = load_model(s.init)
        if s.hint_channels and model.config.hint_channels != s.hint_channels:
            model = with_hint_channels(model, s.hint_channels)  # the start's weights, hint inputs zero
        if s.hint_decoder and not model.config.hint_decoder:
            model = with_hint_decoder(model)  # the decoder's new hint inputs start at zero too
        centres = model.bins.numpy()
    else:
        centres, _ = color.fit_bins(ab)
        model = CVUNet(ModelConfig(num_bins=len(centres), encoder=s.encoder, hint_channels=s.hint_channels,
                                   hint_decoder=s.hint_decoder))
        model.bins.copy_(torch.from_numpy(centres))
        init_encoder_from_imagenet(model, load_imagenet(s.encoder).state_dict())
    idx = color.nearest_bin(ab[rng.permutation(len(ab))[:200_000]], centres)
    prior = np.bincount(idx, minlength=len(centres)).astype(np.float64) + 1.0
    return model, (prior / prior.sum()).astype(np.float32)


ONE_SOURCE_CAP = {"ifct": 0.15}  # the one-source food photos' largest share of samples


def training_mix(s: TrainSettings, train_set: PhotoSet) -> tuple[PhotoSet, np.ndarray | None, dict[str, Any]]:
    """The photos batches are drawn from, their sampling probabilities (None: uniform) and what the card says.

    With ``balance_groups``, photos are drawn by MANIFEST group (see groups.balanced_weights); with
    ``extra_data``, that folder's training side is added at ``extra_share`` of the samples. Its validation
    side (the same split by name), and with ``tune_fraction`` its tuning side, stay out, so that
    `evaluate --split validation` can measure what the extra photos taught. The bins and the class prior
    stay those of the main photos.
    """
    keys = group_keys(train_set.names, s.data)
    n = len(train_set.images)
    w = balanced_weights(keys, ONE_SOURCE_CAP) if s.balance_groups else np.full(n, 1.0 / n)
    info: dict[str, Any] = {"balance_groups": s.balance_groups, "cap": ONE_SOURCE_CAP if s.balance_groups else {},
                            "group_photos": dict(sorted(Counter(keys).items())), "group_shares": group_shares(keys, w)}
    if s.extra_data is None:
        log.info("sampling: %s", info)
        return train_set, (w if s.balance_groups else None), info
    if not 0.0 < s.extra_share < 1.0:
        raise ValueError(f"extra share {s.extra_share}: must be between 0 and 1")
    extra = load_photos(s.extra_data, "train", tune_fraction=s.tune_fraction)
    if not extra.images:
        raise ValueError(f"no usable colour photos on the training side of {s.extra_data}")
    mix = PhotoSet(train_set.names + [f"extra:{name}" for name in extra.names], train_set.images + extra.images)
    weights = np.concatenate([w * (1.0 - s.extra_share), np.full(len(extra.images), s.extra_share / len(extra.images))])
    info.update({"extra_folder": str(s.extra_data), "extra_photos": len(extra.images), "extra_share": s.extra_share})
    log.info("sampling: %s", info)
    return mix, weights / weights.sum(), info


@dataclass
class PhotoSets:
    """A training folder's three sides, split by file name (``dataset.split_of``)."""

    train: PhotoSet
    tuning: PhotoSet
    validation: PhotoSet

    @classmethod
    def of(cls, s: TrainSettings) -> PhotoSets:
        sets = cls(load_photos(s.data, "train", tune_fraction=s.tune_fraction),
                   load_photos(s.data, "tuning", tune_fraction=s.tune_fraction), load_photos(s.data, "validation"))
        if not sets.train.images:
            raise ValueError(f"no usable colour photos in {s.data}")
        log.info("%d training photos, %d tuning photos, %d validation photos", len(sets.train.images),
                 len(sets.tuning.images), len(sets.validation.images))
        return sets

    def crops(self) -> Crops:
        """Held-out tuning photos choose the snapshot to ship and its read-out; with none (a tiny folder),
        the last snapshot is shipped and the read-out is chosen on training photos.
        """
        val = fixed_batch(self.validation, 256) if self.validation.images else None
        tuning = bool(self.tuning.images)
        readout_set = self.tuning if tuning else PhotoSet(self.train.names[:48], self.train.images[:48])
        return Crops(val, fixed_batch(readout_set, 256), tuning)


def resolve_autocast(asked: str) -> tuple[bool, str]:
    """(use bf16 autocast, why or why not), from ``TrainSettings.autocast``."""
    if asked in ("", "none", "fp32"):
        return False, "fp32 (no autocast asked for)"
    if asked != "bf16":
        raise ValueError(f"unknown autocast {asked!r}: use bf16 or none")
    if not cpu_has_fast_bf16():
        return False, "fp32: this CPU has no native bf16 (AVX-512 BF16 or AMX), where bf16 autocast would be slow"
    if not cpu_bf16_pays():
        speedup = cpu_bf16_speedup()
        measured = f"runs convolutions only {speedup:.2f}x as fast as fp32 (a probe)" if speedup else "is held off"
        return False, (f"fp32: this CPU's native bf16 {measured}, under the {BF16_PAYS}x bf16 must gain "
                       "for its coarser rounding")
    return True, "bf16 autocast on a CPU with native bf16"


def make_trainer(s: TrainSettings, sets: PhotoSets) -> tuple[Trainer, str]:
    """The model (fresh, --init or resumed), its optimizer and the crops it is measured on; why this precision."""
    model, prior = build_model(s, sets.train)
    if model.config.hint_channels != s.hint_channels:  # fine-tuning hinted weights goes on with hints
        log.info("the --init weights read %d hint channels: training with them", model.config.hint_channels)
        s.hint_channels = model.config.hint_channels
    bf16, autocast_note = resolve_autocast(s.autocast)
    log.info("training precision: %s", autocast_note)
    model = model.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
    class_w = torch.from_numpy(color.rebalance_weights(prior, s.rebalance))
    opt = make_optimizer(model, s)
    average = WeightAverage(model, s.ema_decay) if s.ema_decay > 0 else None
    checkpoint_path, best_path = s.work / "checkpoint.pt", s.work / "best.pt"
    progress = (resume(checkpoint_path, best_path, model, opt, average, s.teacher)
                if s.resume and checkpoint_path.exists() else Progress())
    crops = sets.crops()
    teacher = load_teacher(s.teacher, model)
    if teacher is not None:  # the refined ab is learned at the read-out the student ships with: the teacher's
        model.readout = teacher.readout
    return Trainer(s, model, opt, average, class_w, bf16, progress, crops, checkpoint_path, best_path,
                   time.monotonic(), teacher), autocast_note


def load_teacher(path: Path | None, student: CVUNet) -> CVUNet | None:
    """The frozen teacher (``--teacher``), which must read what the student reads and share its ab bins."""
    if path is None:
        return None
    teacher = load_model(path)
    for what in ("hint_channels", "hint_decoder", "num_bins"):
        if getattr(teacher.config, what) != getattr(student.config, what):
            raise ValueError(f"--teacher {path}: its {what} is {getattr(teacher.config, what)}, the model's "
                             f"{getattr(student.config, what)}; a teacher must read the same inputs and bins")
    if not torch.equal(teacher.bins, student.bins):
        raise ValueError(f"--teacher {path}: its ab bins differ from the model's")
    teacher.requires_grad_(False)
    return teacher.eval().to(memory_format=torch.channels_last)  # type: ignore[call-overload]


def train(s: TrainSettings) -> dict[str, Any]:
    """Run (or resume) a training; returns the model card."""
    if s.threads:
        torch.set_num_threads(s.threads)
    torch.manual_seed(s.seed)
    s.work.mkdir(parents=True, exist_ok=True)
    sets = PhotoSets.of(s)
    trainer, autocast_note = make_trainer(s, sets)
    budget = s.max_minutes * 60 if s.max_minutes is not None else None
    bar = ProgressBar(s.steps, unit="it", every=25, first=trainer.progress.step)
    mix_set, mix_weights, sampling = training_mix(s, sets.train)
    prefetch = BatchPrefetcher(mix_set, s, trainer.progress.step, mix_weights)
    try:
        stopped_by_budget = trainer.run(prefetch, bar, budget)
    finally:
        prefetch.close()
    trainer.save_checkpoint()
    bar.close(keep=True)

    shipped = Shipped.of(trainer)
    card = model_card(s, sets, trainer, shipped, stopped_by_budget, sampling, autocast_note)
    save_weights(shipped.model, s.out, meta={"card": json.dumps(card)})
    write_model_card(card, s.out)
    return card


@dataclass
class Shipped:
    """What a training ships: the model at its selected step, its read-out (the card's account of it and
    every row searched; with a teacher, the teacher's with a fitted gain, no rows) and its quality on the validation
    crops (measured only).
    """

    model: CVUNet
    step: int
    readout: dict[str, Any]
    readout_rows: list[dict[str, float]]
    validation: dict[str, float]

    @classmethod
    def of(cls, trainer: Trainer) -> Shipped:
        """The shipped snapshot (``Trainer.shipped``) with its read-out chosen (``tuning.choose_shipped_readout``;
        a student's: its teacher's, the gain fitted by ``tuning.matching_gain``).
        """
        model, step = trainer.shipped()
        crops = trainer.crops
        rows: list[dict[str, float]] = []
        if trainer.teacher is not None:  # the teacher's read-out since ``make_trainer``, its gain fitted here
            fit = matching_gain(model, trainer.teacher, *crops.tune)
            model.readout = replace(model.readout, chroma_gain=fit["chroma_gain"])
            readout: dict[str, Any] = {"chosen_on": TEACHER_READOUT, "teacher": str(trainer.s.teacher),
                                       "temperature": model.readout.temperature,
                                       "chroma_gain": model.readout.chroma_gain,
                                       "teacher_chroma_gain": trainer.teacher.readout.chroma_gain,
                                       "doubt_pull": model.readout.doubt_pull,
                                       "colourfulness_ratio": round(fit["colourfulness_ratio"], 3),
                                       "teacher_colourfulness_ratio": round(fit["teacher_colourfulness_ratio"], 3),
                                       "fitted_on": "tuning photos" if crops.tuning else "training photos"}
        else:
            readout, rows = choose_shipped_readout(model, *crops.tune, trainer.s.colour_target, crops.tuning)
        return cls(model, step, readout, rows, quality(model, *crops.val) if crops.val is not None else {})


def model_card(s: TrainSettings, sets: PhotoSets, trainer: Trainer, shipped: Shipped, stopped_by_budget: bool,
               sampling: dict[str, Any], autocast_note: str) -> dict[str, Any]:
    """The training's record, saved in the weights and beside them (``card.write_model_card``)."""
    p, model, selected = trainer.progress, shipped.model, shipped.step
    return {
        "name": "Colorizer CV_UNet",
        "data": {"folder": str(s.data), "train_photos": len(sets.train.images),
                 "tuning_photos": len(sets.tuning.images), "validation_photos": len(sets.validation.images),
                 "sampling": sampling, "tuning_names": sets.tuning.names, "validation_names": sets.validation.names},
        "steps": p.step, "planned_steps": s.steps, "stopped_by_time_budget": stopped_by_budget,
        "minutes": round(trainer.elapsed() / 60, 1),
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(s).items()},
        "model": stored_config(model), "bins": int(model.bins.shape[0]),
        "weights": ("moving average of the weights" if trainer.average is not None else "the weights")
        + (f" at step {selected}, the best on the tuning photos" if selected != p.step else " at the last step"),
        "selected_step": selected,
        "readout": shipped.readout,
        "readout_search": [{k: round(v, 3) for k, v in r.items()} for r in shipped.readout_rows],
        "validation_256px_centre_crops": shipped.validation, "history": p.history,
        "torch": torch.__version__, "threads": torch.get_num_threads(),
        "precision": {"autocast_asked": s.autocast or "none", "used": "bf16 autocast" if trainer.bf16 else "fp32",
                      "why": autocast_note},
        "hints": ({"channels": s.hint_channels, "decoder": model.config.hint_decoder, "p_none": s.hint_p_none,
                   "geometric_p": s.hint_geometric_p}
                  if s.hint_channels else None),
        "started_from": init_card(s.init),
    }


def init_card(init: Path | None) -> dict[str, Any] | None:
    """The model card of the weights a fine-tuning started from (its whole lineage)."""
    if init is None:
        return None
    try:
        return json.loads(weights_meta(init).get("card", "{}")) or {"weights": str(init)}
    except (ValueError, RuntimeError):
        return {"weights": str(init)}
