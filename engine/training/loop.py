"""The training's steps: the loss, the batches, what trains when, and the loop with its validations.

Loss: cross-entropy over quantized ab bins with soft targets and class rebalancing
(vivid colour instead of the brownish mean), plus smooth-L1 on the refined annealed-mean
read-out (keeps colours in place and neutral things neutral). With a teacher (``distill_losses``)
the targets are the teacher's outputs on the clean crop instead of the true colours.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from .. import color
from ..atomic import atomic_write
from ..model import CVUNet
from ..progress import ProgressBar
from .average import WeightAverage
from .checkpoint import Progress, save_checkpoint
from .dataset import PhotoSet, make_batch, make_hints
from .degrade import DegradeSettings
from .settings import FIRST_TRAINED_BLOCK, TrainSettings
from .tuning import quality, tuning_score

log = logging.getLogger(__name__)


def soft_targets(ab: torch.Tensor, centres: torch.Tensor, sigma: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Gaussian soft-encoding of ab (N,2,H,W) over bins -> (N,Q,H,W) probabilities, nearest index."""
    d2 = ((ab[:, None] - centres[None, :, :, None, None]) ** 2).sum(2)  # N,Q,H,W
    return torch.softmax(-d2 / (2 * sigma**2), dim=1), d2.argmin(1)


def losses(model: CVUNet, L: torch.Tensor, ab: torch.Tensor, class_w: torch.Tensor,
           reg_weight: float, reg_beta: float = 0.05, hints: torch.Tensor | None = None,
           bf16: bool = False) -> tuple[torch.Tensor, dict[str, float]]:
    with torch.autocast(L.device.type, dtype=torch.bfloat16, enabled=bf16):  # "cuda" too (the GPU check)
        logits, ab_pred = model.forward_train(L, hints=hints)
    ab4 = F.avg_pool2d(ab, 4)
    target, nearest = soft_targets(ab4, model.bins, color.BIN_STEP / 2)
    ce_map = -(target * torch.log_softmax(logits.float(), dim=1)).sum(1)
    ce = (ce_map * class_w[nearest]).mean()
    ab2 = F.avg_pool2d(ab, 2)
    reg = F.smooth_l1_loss(ab_pred.float() / color.AB_RANGE, ab2 / color.AB_RANGE, beta=reg_beta)
    total = ce + reg_weight * reg
    return total, {"ce": float(ce.detach()), "reg": float(reg.detach())}


def distill_losses(model: CVUNet, teacher: CVUNet, L: torch.Tensor, clean_L: torch.Tensor, reg_weight: float,
                   reg_beta: float = 0.05, hints: torch.Tensor | None = None,
                   bf16: bool = False, temperature: float = 1.0) -> tuple[torch.Tensor, dict[str, float]]:
    """The student on ``L`` (an old print's scan, or the clean crop) against the frozen teacher on ``clean_L``
    (its logits divided by ``temperature``: below 1 a sharper, more colourful target).

    Why no true colour: a fine-tune on the true colours of old-print scans also learned the training sources'
    colours, and gained nothing on photos from other packages (docs/experiments, v7); the teacher's answer for
    the clean crop teaches only to see an old print as its clean photo. KL divergence on the ab-bin logits,
    smooth-L1 on the refined ab.
    """
    if temperature <= 0:
        raise ValueError(f"teacher temperature {temperature}: must be above 0")
    with torch.no_grad(), torch.autocast(L.device.type, dtype=torch.bfloat16, enabled=bf16):
        t_logits, t_ab = teacher.forward_train(clean_L, hints=hints)
    with torch.autocast(L.device.type, dtype=torch.bfloat16, enabled=bf16):
        logits, ab_pred = model.forward_train(L, hints=hints)
    t_log = torch.log_softmax(t_logits.float() / temperature, dim=1)
    kl = (t_log.exp() * (t_log - torch.log_softmax(logits.float(), dim=1))).sum(1).mean()
    reg = F.smooth_l1_loss(ab_pred.float() / color.AB_RANGE, t_ab.float() / color.AB_RANGE, beta=reg_beta)
    return kl + reg_weight * reg, {"kl": float(kl.detach()), "reg": float(reg.detach())}


Batch = tuple[int, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]  # step, L, ab, hints, clean L


class BatchPrefetcher:
    """Builds batches in a background thread; each step's batch depends only on (seed, step)."""

    def __init__(self, photos: PhotoSet, s: TrainSettings, start: int, weights: np.ndarray | None = None) -> None:
        self.q: queue.Queue[Batch] = queue.Queue(maxsize=3)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(photos, s, start, weights), daemon=True)
        self.thread.start()

    def _run(self, photos: PhotoSet, s: TrainSettings, start: int, weights: np.ndarray | None) -> None:
        step = start
        while not self.stop.is_set():
            rng = np.random.default_rng([s.seed, step])
            clean = np.empty((s.batch, 1, s.size, s.size), np.float32) if s.teacher is not None else None
            L, ab = make_batch(photos, s.batch, s.size, rng, crop_min=s.crop_min, gamma=s.gamma_jitter,
                                weights=weights, degrade_share=s.degrade_share,
                                degrade_rng=np.random.default_rng([s.seed, step, 2]),
                                degrade_settings=DegradeSettings(strength=s.degrade_strength), clean_L=clean)
            hints = None
            if s.hint_channels:  # a generator of their own: the crops stay those of an unhinted run
                hints = make_hints(ab, np.random.default_rng([s.seed, step, 1]), s.hint_p_none, s.hint_geometric_p)
            while not self.stop.is_set():
                try:
                    self.q.put((step, L, ab, hints, clean), timeout=0.2)
                    break
                except queue.Full:
                    continue
            step += 1

    def get(self) -> Batch:
        return self.q.get()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)


def set_encoder_trainable(model: CVUNet, trainable: bool, first_block: int = FIRST_TRAINED_BLOCK) -> None:
    """Blocks from ``first_block`` on train when ``trainable``; the stem stays as ImageNet made it.

    A hinted model's stem weight trains from the start (its hint inputs begin at zero), but
    ``keep_stem_L`` zeroes the gradient of its L input, so only the hint inputs learn.
    """
    for i, block in enumerate(model.encoder._blocks):
        on = trainable and i >= first_block
        block.requires_grad_(on)
        block.train(on)
    for m in (model.encoder._conv_stem, model.encoder._bn0):
        m.requires_grad_(False)
        m.train(False)
    if model.config.hint_channels:
        model.encoder._conv_stem.weight.requires_grad_(True)


def keep_norm_statistics(model: torch.nn.Module) -> None:
    """BatchNorm layers normalise with the statistics they have (their scale and shift still learn).

    Why: a few hundred steps on a few dozen photos replace the running statistics of the whole training with
    those of a few batches; alone, that cost 1.6 dB on held-out photos of the same scenes (docs/experiments).
    """
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.eval()


def keep_stem_L(model: CVUNet) -> None:
    """No update for the stem's L input (its hint inputs learn): called between backward and the step."""
    grad = model.encoder._conv_stem.weight.grad
    if model.config.hint_channels and grad is not None:
        grad[:, :1].zero_()


def lr_at(step: int, s: TrainSettings) -> float:
    warm = 100
    if step < warm:
        return s.lr * (step + 1) / warm
    p = (step - warm) / max(1, s.steps - warm)
    return s.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(p, 1.0))))


def group_scales(s: TrainSettings) -> tuple[float, float, float]:
    """The learning-rate scales of ``make_optimizer``'s groups: decoder, encoder, stem."""
    return s.decoder_lr_scale, s.encoder_lr_scale, 1.0


def make_optimizer(model: CVUNet, s: TrainSettings) -> torch.optim.Optimizer:
    """AdamW over the decoder, the encoder and the stem, each at its ``group_scales`` share of the rate (AdamW's
    decay scales with the rate, so a group at 0 stays exactly where it is).
    """
    stem = "encoder._conv_stem.weight"
    enc_params = [p for n, p in model.named_parameters() if n.startswith("encoder.") and n != stem]
    dec_params = [p for n, p in model.named_parameters() if not n.startswith("encoder.")]
    # The stem (trained only in a hinted model: its new hint inputs) without weight decay, so its L input stays put.
    stem_params = [p for n, p in model.named_parameters() if n == stem]
    groups: list[dict[str, Any]] = [{"params": dec_params}, {"params": enc_params},
                                    {"params": stem_params, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=s.lr, weight_decay=1e-4)


@dataclass
class Crops:
    """The fixed 256 px centre crops a training measures on.

    ``val``: the validation photos' (measured only, never used to choose), or None without any.
    ``tune``: the tuning photos' when ``tuning``, else some training photos' (for the read-out alone).
    """

    val: tuple[np.ndarray, np.ndarray] | None
    tune: tuple[np.ndarray, np.ndarray]
    tuning: bool


@dataclass
class Trainer:
    """One training run's moving parts: its steps, its validations and its checkpoints.

    ``t0`` is when this run started (``time.monotonic``); the time of earlier runs is in ``progress``.
    """

    s: TrainSettings
    model: CVUNet
    opt: torch.optim.Optimizer
    average: WeightAverage | None
    class_w: torch.Tensor
    bf16: bool
    progress: Progress
    crops: Crops
    checkpoint_path: Path
    best_path: Path  # the snapshot that did best on the tuning photos so far
    t0: float
    teacher: CVUNet | None = None  # frozen: its output on the clean crop is the target (``distill_losses``)

    def elapsed(self) -> float:
        """Seconds spent training, this run's and the earlier ones'."""
        return self.progress.elapsed_before + time.monotonic() - self.t0

    def save_checkpoint(self) -> None:
        save_checkpoint(self.checkpoint_path, self.model, self.opt, self.average, self.progress, self.elapsed(),
                        self.s)

    def run(self, prefetch: BatchPrefetcher, bar: ProgressBar, budget: float | None) -> bool:
        """Train up to ``s.steps`` (validating every ``val_every``); whether the time ``budget`` stopped it."""
        s, p = self.s, self.progress
        ema: dict[str, float] = {}
        while p.step < s.steps:
            if budget is not None and time.monotonic() - self.t0 > budget:
                return True
            got, L, ab, hints, clean = prefetch.get()
            assert got == p.step
            parts = self.step(L, ab, hints, clean)
            p.step += 1
            for k, v in parts.items():
                ema[k] = v if k not in ema else 0.98 * ema[k] + 0.02 * v
            bar.update(p.step, " ".join(f"{k} {v:.3f}" for k, v in ema.items()),
                       None if budget is None else max(0.0, budget - (time.monotonic() - self.t0)))
            if p.step % s.val_every == 0 or p.step == s.steps:
                self.validate(ema)
        return False

    def step(self, L: np.ndarray, ab: np.ndarray, hints: np.ndarray | None,
             clean: np.ndarray | None = None) -> dict[str, float]:
        """One optimizer step on a batch (``clean``: its crops' clean L, with a teacher); the loss's parts."""
        s, model = self.s, self.model
        model.train()
        set_encoder_trainable(model, self.progress.step >= s.freeze_steps, s.first_trained_block)
        if s.keep_norm_stats:
            keep_norm_statistics(model)
        elif s.decoder_lr_scale == 0:  # a decoder held where it is keeps its normalisation too
            for name, m in model.named_children():
                if name != "encoder":
                    keep_norm_statistics(m)
        lr = lr_at(self.progress.step, s)
        for g, scale in zip(self.opt.param_groups, group_scales(s), strict=True):  # the settings', also after a resume
            g["lr"] = lr * scale
        Lt = torch.from_numpy(L).contiguous(memory_format=torch.channels_last)
        abt = torch.from_numpy(ab)
        ht = None if hints is None else torch.from_numpy(hints).contiguous(memory_format=torch.channels_last)
        if self.teacher is not None:
            if clean is None:
                raise ValueError("a teacher needs each crop's clean L")
            clean_t = torch.from_numpy(clean).contiguous(memory_format=torch.channels_last)
            loss, parts = distill_losses(model, self.teacher, Lt, clean_t, s.reg_weight, s.reg_beta, ht, self.bf16,
                                         s.teacher_temperature)
        else:
            loss, parts = losses(model, Lt, abt, self.class_w, s.reg_weight, s.reg_beta, ht, self.bf16)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        keep_stem_L(model)
        self.opt.step()
        if self.average is not None:
            self.average.update(model)
        return parts

    def validate(self, ema: dict[str, float]) -> None:
        """Measure the snapshot, keep it if it is the best on the tuning photos so far (not for a student: it
        ships its last), and checkpoint.
        """
        p = self.progress
        snapshot = self.average.averaged(self.model) if self.average is not None else self.model.eval()
        minutes = round(self.elapsed() / 60, 2)
        row: dict[str, float] = {"step": p.step, "minutes": minutes, **{k: round(v, 4) for k, v in ema.items()}}
        if self.crops.val is not None:  # measured only, never used to choose
            row.update({k: round(v, 3) for k, v in quality(snapshot, *self.crops.val).items()})
        if self.crops.tuning and self.teacher is None:  # a student ships its last weights (``shipped``)
            score, gain = tuning_score(snapshot, *self.crops.tune, self.s.colour_target)
            row.update({"tuning_gain_db": round(score, 3), "tuning_chroma_gain": gain})
            if p.best is None or score > p.best["score"]:
                p.best = {"score": score, "step": p.step}
                with atomic_write(self.best_path) as f:
                    torch.save(snapshot.state_dict(), f)
        p.history.append(row)
        log.info("step %d %s", p.step, row)
        self.save_checkpoint()

    def shipped(self) -> tuple[CVUNet, int]:
        """The model to ship and its step: the best snapshot on the tuning photos, else the last (averaged).

        A student (``teacher``) ships its last: at its teacher's read-out no snapshot reaches the colour target,
        and the best dB short of it chose the greyest snapshot (0.49 of the colour against 0.55 for the last).
        """
        best = self.progress.best if self.teacher is None else None
        if best is not None:
            self.model.eval().load_state_dict(torch.load(self.best_path, map_location="cpu", weights_only=True))
            return self.model, int(best["step"])
        model = self.average.averaged(self.model) if self.average is not None else self.model.eval()
        return model, self.progress.step
