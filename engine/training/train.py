"""Training: ``python main.py train PHOTOS`` turns a folder of colour photos into weights.

Loss: cross-entropy over quantized ab bins with soft targets and class rebalancing
(vivid colour instead of the brownish mean), plus smooth-L1 on the refined annealed-mean
read-out (keeps colours in place and neutral things neutral).

A hinted model (``--hint-channels 3``) also reads colour hints drawn from each crop's true colours
(``hints.sample_hints``); its stem's hint inputs start at zero and are trained from the first step.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import queue
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from .. import color
from ..atomic import atomic_write
from ..devices import cpu_has_fast_bf16
from ..model import CVUNet, ModelConfig, init_encoder_from_imagenet, with_hint_channels, with_hint_decoder
from ..progress import ProgressBar
from ..readout import Readout, spread_of
from ..weights import load_imagenet, load_model, save_weights, stored_config, weights_meta
from .card import write_model_card
from .dataset import PhotoSet, fixed_batch, load_photos, make_batch, make_hints
from .degrade import DegradeSettings
from .groups import balanced_weights, group_keys, group_shares

log = logging.getLogger(__name__)

FIRST_TRAINED_BLOCK = 5  # encoder blocks from here (stride 16 and 32) are fine-tuned; earlier stay frozen


@dataclass
class TrainSettings:
    data: Path
    out: Path
    work: Path
    steps: int = 6000
    batch: int = 12
    size: int = 224
    lr: float = 1e-3
    encoder_lr_scale: float = 0.5
    freeze_steps: int = 600
    reg_weight: float = 5.0
    reg_beta: float = 0.05  # smooth-L1 beta on ab/110: larger is closer to L2 (PSNR), smaller to L1
    rebalance: float = 0.5  # 1.0: no class rebalancing
    seed: int = 0
    max_minutes: float | None = None
    resume: bool = False
    init: Path | None = None
    val_every: int = 250
    ema_decay: float = 0.0  # e.g. 0.998: ship a moving average of the weights over ~1/(1-decay) steps
    tune_fraction: float = 0.0  # e.g. 0.1: photos held out of training to choose the snapshot and read-out on
    colour_target: float = 0.85  # with tuning photos: the read-out keeps this share of the originals' colour
    crop_min: float = 0.3  # smallest crop, as a share of the photo's shorter side
    gamma_jitter: float = 0.0  # e.g. 0.2: log-gamma jitter on L
    degrade_share: float = 0.0  # crops given as old-print scans of themselves (degrade.py); targets stay clean
    degrade_strength: float = 1.0  # DegradeSettings.strength for those
    balance_groups: bool = False  # draw photos by MANIFEST group (groups.balanced_weights), the one-source food capped
    extra_data: Path | None = None  # e.g. the cut-outs: more training photos, drawn at their own share
    extra_share: float = 0.1  # the extra folder's share of all samples
    threads: int | None = None
    hint_channels: int = 0  # 3: a model that also reads colour hints (ab and mask)
    encoder: str = "lite0"  # the ImageNet encoder of a fresh model ("lite0" or "lite2"); --init keeps its own
    hint_decoder: bool = False  # the hint map also goes straight into the decoder (ModelConfig.hint_decoder)
    hint_p_none: float = 0.5  # share of training crops given no hints
    hint_geometric_p: float = 1 / 8  # otherwise a geometric number of hint points, mean 1/p
    first_trained_block: int = FIRST_TRAINED_BLOCK  # encoder blocks from here on are fine-tuned
    autocast: str = ""  # "bf16": the forward under CPU bf16 autocast (where the CPU runs bf16 natively)
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


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


@torch.inference_mode()
def predict_moments(model: CVUNet, L: np.ndarray, temperature: float | None = None,
                    batch: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """(ab, ab variance) of N x 1 x S x S L crops: ab upsampled to full size (N,S,S,2), the variance at the
    logits' quarter size (N,1,S/4,S/4), as the runtimes read it: the read-out before the doubt pull and the
    chroma gain, and what the pull reads.
    """
    readout = model.readout if temperature is None else replace(model.readout, temperature=temperature)
    abs_, variances = [], []
    for i in range(0, len(L), batch):
        x = torch.from_numpy(L[i : i + batch]).contiguous(memory_format=torch.channels_last)
        logits, ab = model.forward_train(x, readout.temperature)
        variance = readout.variance(logits, model.bins)
        abs_.append(_full_size(ab, x.shape[-2:]))
        variances.append(variance.float().numpy())
    return np.concatenate(abs_), np.concatenate(variances)


def _full_size(y: torch.Tensor, size: torch.Size) -> np.ndarray:
    return F.interpolate(y.float(), size=size, mode="bilinear", align_corners=False).permute(0, 2, 3, 1).numpy()


def pulled(ab: np.ndarray, variance: np.ndarray, readout: Readout) -> np.ndarray:
    """The ab (N,S,S,2) with the read-out's doubt pull (``Readout.doubt`` at ab's size), before its gain."""
    if not readout.doubt_pull:
        return ab
    return ab * readout.doubt(torch.from_numpy(variance), ab.shape[1:3]).permute(0, 2, 3, 1).numpy()


def predict_ab(model: CVUNet, L: np.ndarray, temperature: float | None = None, batch: int = 8) -> np.ndarray:
    """Predicted ab (N,S,S,2, with the model's doubt pull, before the chroma gain), upsampled to full size."""
    ab, variance = predict_moments(model, L, temperature, batch)
    return pulled(ab, variance, model.readout)


@dataclass
class Reference:
    """What quality_of compares against, worked out once per set of crops (it is called ~70 times on one)."""

    truth: list[np.ndarray]
    psnr_grey: float
    colourfulness: float

    @classmethod
    def of(cls, L: np.ndarray, ab: np.ndarray) -> Reference:
        truth = [color.join_lab(L[i, 0], ab[i].transpose(1, 2, 0)) for i in range(len(L))]
        grey = np.mean([color.psnr(color.grey_rgb(L[i, 0]), truth[i]) for i in range(len(L))])
        return cls(truth, float(grey), float(np.mean([color.colourfulness(x) for x in truth])))


def quality_of(L: np.ndarray, ab_pred: np.ndarray, ref: Reference) -> dict[str, float]:
    """Mean PSNR (RGB) of colorized and of grey crops, and colourfulness against the originals'."""
    pred = [color.join_lab(L[i, 0], ab_pred[i]) for i in range(len(L))]
    p = float(np.mean([color.psnr(pred[i], ref.truth[i]) for i in range(len(L))]))
    cf = float(np.mean([color.colourfulness(x) for x in pred])) / max(ref.colourfulness, 1e-6)
    return {"psnr": p, "psnr_grey": ref.psnr_grey, "gain_db": p - ref.psnr_grey, "colourfulness_ratio": cf}


def quality(model: CVUNet, L: np.ndarray, ab: np.ndarray) -> dict[str, float]:
    """quality_of the model's own read-out (its temperature and chroma gain)."""
    return quality_of(L, predict_ab(model, L) * model.readout.chroma_gain, Reference.of(L, ab))


TEMPERATURES = (0.32, 0.38, 0.45, 0.55, 0.7, 1.0)
PULLS = (0.0, 1.0, 2.0, 4.0, 8.0)  # doubt pulls tried on the tuning photos (0: none)
GAINS = tuple(round(1.0 + 0.05 * i, 2) for i in range(11))  # 1.0 .. 1.5


def choose_readout(model: CVUNet, L: np.ndarray, ab: np.ndarray, colour_target: float,
                   temperatures: tuple[float, ...] = TEMPERATURES, gains: tuple[float, ...] = GAINS,
                   pulls: tuple[float, ...] | None = None) -> tuple[dict[str, float], list[dict[str, float]]]:
    """The (temperature, doubt pull, chroma gain) row with the best PSNR among those keeping colour_target
    of the colour. ``pulls`` None: the model's own doubt pull only.

    Measured on photos the model did not train on: on its training photos it is sure of itself and
    vivid, elsewhere it is less sure and more muted, and the read-out must suit the photos it has not seen.
    With no row colourful enough, the most colourful one, marked ``vivid: 0``.
    """
    ref = Reference.of(L, ab)
    rows = []
    for t in temperatures:
        raw, variance = predict_moments(model, L, t)
        for pull in (model.readout.doubt_pull,) if pulls is None else pulls:
            out = pulled(raw, variance, Readout(temperature=t, doubt_pull=pull))
            for g in gains:
                rows.append({"temperature": t, "doubt_pull": pull, "chroma_gain": g, **quality_of(L, out * g, ref)})
    vivid = [r for r in rows if r["colourfulness_ratio"] >= colour_target]
    if vivid:
        return {**max(vivid, key=lambda r: r["psnr"]), "vivid": 1.0}, rows
    return {**max(rows, key=lambda r: r["colourfulness_ratio"]), "vivid": 0.0}, rows


SPREAD_HINTS = 10  # simulated hints per tuning crop when choosing the hint spread
SPREADS = [(0.0, 10.0, 0.05, 0.0)] + [(r, lt, f, e) for r in (0.1, 0.2, 0.3, 0.45, 0.6) for lt in (5.0, 10.0, 20.0)
                                      for f in (0.02, 0.05, 0.2)
                                      for e in (0.0, 5.0, 10.0, 20.0, 40.0)]  # (reach, lightness, floor, colour)


def choose_spread(model: CVUNet, L: np.ndarray, ab: np.ndarray,
                  seed: int = 0) -> tuple[dict[str, float], list[dict[str, float]]]:
    """The hint spread (``hints.HintSpread``) with the best PSNR on the tuning crops, each given
    SPREAD_HINTS simulated hints (as ``evaluate --hints`` draws them): (the best, every row tried).
    """
    truths = [color.join_lab(L[i, 0], ab[i].transpose(1, 2, 0)) for i in range(len(L))]
    return choose_spread_on_photos(model, [color.to_uint8(t) for t in truths], L.shape[-1], seed, truths)


def choose_spread_on_photos(model: CVUNet, photos: list[np.ndarray], size: int, seed: int = 0,
                            truths: list[np.ndarray] | None = None, gains: tuple[float, ...] = (1.0,),
                            colour_target: float | None = None) -> tuple[dict[str, float], list[dict[str, float]]]:
    """choose_spread on whole photos of any size (uint8 RGB), each at the working ``size``; ``truths``
    (float RGB 0..1) when the photos are rounded copies of them.

    ``gains``: hinted-photo chroma gains (``HintSpread.gain``) tried with every spread. With a
    ``colour_target``, the best PSNR among the rows keeping that share of the originals' colourfulness
    (none does: the most colourful); without, the best PSNR. The network runs once per photo; the
    spreads are tried on its output (they only post-process it).
    """
    from ..colorizer import Colorizer, pack, pack_hints, prepare, spread_on_half, unpack
    from ..hints import HintSpread, simulate_hints
    from ..options import ColorizeSettings

    colorizer = Colorizer.create(ColorizeSettings(device="cpu", precision="fp32", size=size, batch_size=8),
                                 model=model)
    truths = truths if truths is not None else [p.astype(np.float32) / 255.0 for p in photos]
    original = float(np.mean([color.colourfulness(p) for p in photos]))
    items = [prepare(p, size) for p in photos]
    hints = [simulate_hints(p, SPREAD_HINTS, seed + i) for i, p in enumerate(photos)]
    raw: list[np.ndarray] = []
    i = 0
    while i < len(items):  # batches of up to 8 photos of one working shape (the tuning crops: all of them)
        j = i + 1
        while j < len(items) and j - i < 8 and items[j].small.shape == items[i].small.shape:
            j += 1
        raw += list(colorizer.infer(pack(items[i:j]), pack_hints(items[i:j], hints[i:j])))
        i = j
    rows = []
    for gain in gains:
        for reach, lightness, floor, colour in SPREADS:
            spread = HintSpread(reach, lightness, floor, gain, colour)
            outs = [color.join_lab(item.L, unpack(spread_on_half(raw[i], item, hints[i], spread), item))
                    for i, item in enumerate(items)]
            rows.append({"reach": reach, "lightness": lightness, "floor": floor, "gain": gain, "colour": colour,
                         "psnr": float(np.mean([color.psnr(o, t) for o, t in zip(outs, truths, strict=True)])),
                         "colourfulness_ratio": float(np.mean([color.colourfulness(color.to_uint8(o)) for o in outs]))
                         / max(original, 1e-6)})
    vivid = rows if colour_target is None else [r for r in rows if r["colourfulness_ratio"] >= colour_target]
    best = (max(vivid, key=lambda r: r["psnr"]) if vivid
            else max(rows, key=lambda r: r["colourfulness_ratio"]))
    none = next(r["psnr"] for r in rows if r["reach"] == 0.0 and r["gain"] == 1.0) if 1.0 in gains else rows[0]["psnr"]
    target = {} if colour_target is None else {"colour_target": colour_target, "vivid": float(bool(vivid))}
    return {**best, "hints": SPREAD_HINTS, "gain_over_no_spread_db": round(best["psnr"] - none, 3), **target}, rows


def tuning_score(model: CVUNet, L: np.ndarray, ab: np.ndarray, colour_target: float) -> tuple[float, float]:
    """How good a snapshot is on the tuning photos: dB over grey at the colour target; (score, gain).

    One that cannot reach the colour target at any gain scores 100 dB less, so it is never chosen
    over one that can.
    """
    best, _ = choose_readout(model, L, ab, colour_target, (model.readout.temperature,))
    return best["gain_db"] - (0.0 if best["vivid"] else 100.0), best["chroma_gain"]


def choose_readout_on_training_photos(model: CVUNet, L: np.ndarray,
                                      ab: np.ndarray) -> tuple[dict[str, float], list[dict[str, float]]]:
    """Without tuning photos: choose_readout's temperature at gain 1, then a gain for full colour.

    The temperature keeps 0.85 of the colour; the gain then makes the output on these training photos
    as colourful as they are. The model is at its most confident on the photos it learned; on unseen
    ones it is more muted, so this gain is at most what they need (and never above 1.5x).
    """
    best, rows = choose_readout(model, L, ab, 0.85, (0.25, *TEMPERATURES), gains=(1.0,))
    ratio = best["colourfulness_ratio"]
    gain = round(float(min(1.5, max(1.0, 1.0 / max(ratio, 1e-6)))), 3)
    return {"temperature": best["temperature"], "chroma_gain": gain,
            "training_colourfulness_ratio_before": round(ratio, 3)}, rows


class WeightAverage:
    """An exponential moving average of the weights.

    With a few hundred photos the weights wander from step to step (held-out scores move by a few
    tenths of a dB between checkpoints); their average is steadier than any one of them.
    """

    def __init__(self, model: CVUNet, decay: float) -> None:
        self.decay = decay
        self.shadow = {k: v.detach().clone() for k, v in model.state_dict().items()}
        self.updates = 0

    @torch.no_grad()
    def update(self, model: CVUNet) -> None:
        self.updates += 1
        d = min(self.decay, (1 + self.updates) / (10 + self.updates))
        for k, v in model.state_dict().items():
            if v.dtype.is_floating_point:
                self.shadow[k].mul_(d).add_(v.detach(), alpha=1 - d)
            else:
                self.shadow[k].copy_(v)

    def averaged(self, model: CVUNet) -> CVUNet:
        avg = copy.deepcopy(model)
        avg.load_state_dict(self.shadow)
        return avg.eval()


class BatchPrefetcher:
    """Builds batches in a background thread; each step's batch depends only on (seed, step)."""

    def __init__(self, photos: PhotoSet, s: TrainSettings, start: int, weights: np.ndarray | None = None) -> None:
        self.q: queue.Queue[tuple[int, np.ndarray, np.ndarray, np.ndarray | None]] = queue.Queue(maxsize=3)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(photos, s, start, weights), daemon=True)
        self.thread.start()

    def _run(self, photos: PhotoSet, s: TrainSettings, start: int, weights: np.ndarray | None) -> None:
        step = start
        while not self.stop.is_set():
            rng = np.random.default_rng([s.seed, step])
            L, ab = make_batch(photos, s.batch, s.size, rng, crop_min=s.crop_min, gamma=s.gamma_jitter,
                                weights=weights, degrade_share=s.degrade_share,
                                degrade_rng=np.random.default_rng([s.seed, step, 2]),
                                degrade_settings=DegradeSettings(strength=s.degrade_strength))
            hints = None
            if s.hint_channels:  # a generator of their own: the crops stay those of an unhinted run
                hints = make_hints(ab, np.random.default_rng([s.seed, step, 1]), s.hint_p_none, s.hint_geometric_p)
            while not self.stop.is_set():
                try:
                    self.q.put((step, L, ab, hints), timeout=0.2)
                    break
                except queue.Full:
                    continue
            step += 1

    def get(self) -> tuple[int, np.ndarray, np.ndarray, np.ndarray | None]:
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


def keep_stem_L(model: CVUNet) -> None:
    """No update for the stem's L input (its hint inputs learn): called between backward and the step."""
    grad = model.encoder._conv_stem.weight.grad
    if model.config.hint_channels and grad is not None:
        grad[:, :1].zero_()


def resolve_autocast(asked: str) -> tuple[bool, str]:
    """(use bf16 autocast, why or why not), from ``TrainSettings.autocast``."""
    if asked in ("", "none", "fp32"):
        return False, "fp32 (no autocast asked for)"
    if asked != "bf16":
        raise ValueError(f"unknown autocast {asked!r}: use bf16 or none")
    if not cpu_has_fast_bf16():
        return False, "fp32: this CPU has no native bf16 (AVX-512 BF16 or AMX), where bf16 autocast would be slow"
    return True, "bf16 autocast on a CPU with native bf16"


def lr_at(step: int, s: TrainSettings) -> float:
    warm = 100
    if step < warm:
        return s.lr * (step + 1) / warm
    p = (step - warm) / max(1, s.steps - warm)
    return s.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(p, 1.0))))


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


def train(s: TrainSettings) -> dict[str, Any]:
    """Run (or resume) a training; returns the model card."""
    if s.threads:
        torch.set_num_threads(s.threads)
    torch.manual_seed(s.seed)
    s.work.mkdir(parents=True, exist_ok=True)
    ckpt_path = s.work / "checkpoint.pt"
    train_set = load_photos(s.data, "train", tune_fraction=s.tune_fraction)
    tune_set = load_photos(s.data, "tuning", tune_fraction=s.tune_fraction)
    val_set = load_photos(s.data, "validation")
    if not train_set.images:
        raise ValueError(f"no usable colour photos in {s.data}")
    log.info("%d training photos, %d tuning photos, %d validation photos", len(train_set.images),
             len(tune_set.images), len(val_set.images))

    model, prior = build_model(s, train_set)
    if model.config.hint_channels != s.hint_channels:  # fine-tuning hinted weights goes on with hints
        log.info("the --init weights read %d hint channels: training with them", model.config.hint_channels)
        s.hint_channels = model.config.hint_channels
    bf16, autocast_note = resolve_autocast(s.autocast)
    log.info("training precision: %s", autocast_note)
    model = model.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
    class_w = torch.from_numpy(color.rebalance_weights(prior, s.rebalance))
    stem = "encoder._conv_stem.weight"
    enc_params = [p for n, p in model.named_parameters() if n.startswith("encoder.") and n != stem]
    dec_params = [p for n, p in model.named_parameters() if not n.startswith("encoder.")]
    # The stem (trained only in a hinted model: its new hint inputs) without weight decay, so its L input stays put.
    stem_params = [p for n, p in model.named_parameters() if n == stem]
    opt = torch.optim.AdamW([{"params": dec_params, "lr_scale": 1.0},
                             {"params": enc_params, "lr_scale": s.encoder_lr_scale},
                             {"params": stem_params, "lr_scale": 1.0, "weight_decay": 0.0}],
                            lr=s.lr, weight_decay=1e-4)
    step, elapsed_before, history = 0, 0.0, []
    average = WeightAverage(model, s.ema_decay) if s.ema_decay > 0 else None
    best_path = s.work / "best.pt"  # the snapshot that did best on the tuning photos so far
    best: dict[str, float] | None = None
    if s.resume and ckpt_path.exists():
        ck = torch.load(ckpt_path, map_location="cpu", weights_only=True)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        if average is not None and "average" in ck:
            average.shadow, average.updates = ck["average"], ck["average_updates"]
        step, elapsed_before, history = ck["step"], ck["elapsed"], json.loads(ck["history"])
        torch.set_rng_state(ck["torch_rng"])
        if "best" in ck and best_path.exists():
            best = json.loads(ck["best"])
        log.info("resumed at step %d", step)

    val_L, val_ab = fixed_batch(val_set, 256) if val_set.images else (None, None)
    # Held-out tuning photos choose the snapshot to ship and its read-out; with none (a tiny folder),
    # the last snapshot is shipped and the read-out is chosen on training photos.
    readout_set = tune_set if tune_set.images else PhotoSet(train_set.names[:48], train_set.images[:48])
    tune_L, tune_ab = fixed_batch(readout_set, 256)
    t0 = time.monotonic()
    budget = s.max_minutes * 60 if s.max_minutes is not None else None

    def save_checkpoint() -> None:
        extra = {"average": average.shadow, "average_updates": average.updates} if average is not None else {}
        with atomic_write(ckpt_path) as f:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step, **extra,
                        "elapsed": elapsed_before + time.monotonic() - t0, "history": json.dumps(history),
                        "torch_rng": torch.get_rng_state(), "settings": json.dumps(asdict(s), default=str),
                        **({"best": json.dumps(best)} if best is not None else {})}, f)

    first_step = step
    bar = ProgressBar(s.steps, unit="it", every=25, first=first_step)
    mix_set, mix_weights, sampling = training_mix(s, train_set)
    prefetch = BatchPrefetcher(mix_set, s, step, mix_weights)
    stopped_by_budget = False
    ema: dict[str, float] = {}
    try:
        while step < s.steps:
            if budget is not None and time.monotonic() - t0 > budget:
                stopped_by_budget = True
                break
            model.train()
            set_encoder_trainable(model, step >= s.freeze_steps, s.first_trained_block)
            lr = lr_at(step, s)
            for g in opt.param_groups:
                g["lr"] = lr * g["lr_scale"]
            got, L, ab, hints = prefetch.get()
            assert got == step
            Lt = torch.from_numpy(L).contiguous(memory_format=torch.channels_last)
            abt = torch.from_numpy(ab)
            ht = None if hints is None else torch.from_numpy(hints).contiguous(memory_format=torch.channels_last)
            loss, parts = losses(model, Lt, abt, class_w, s.reg_weight, s.reg_beta, ht, bf16)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            keep_stem_L(model)
            opt.step()
            if average is not None:
                average.update(model)
            step += 1
            for k, v in parts.items():
                ema[k] = v if k not in ema else 0.98 * ema[k] + 0.02 * v
            bar.update(step, " ".join(f"{k} {v:.3f}" for k, v in ema.items()),
                       None if budget is None else max(0.0, budget - (time.monotonic() - t0)))
            if step % s.val_every == 0 or step == s.steps:
                snapshot = average.averaged(model) if average is not None else model.eval()
                minutes = round((elapsed_before + time.monotonic() - t0) / 60, 2)
                row: dict[str, float] = {"step": step, "minutes": minutes, **{k: round(v, 4) for k, v in ema.items()}}
                if val_L is not None and val_ab is not None:  # measured only, never used to choose
                    row.update({k: round(v, 3) for k, v in quality(snapshot, val_L, val_ab).items()})
                if tune_set.images:
                    score, gain = tuning_score(snapshot, tune_L, tune_ab, s.colour_target)
                    row.update({"tuning_gain_db": round(score, 3), "tuning_chroma_gain": gain})
                    if best is None or score > best["score"]:
                        best = {"score": score, "step": step}
                        with atomic_write(best_path) as f:
                            torch.save(snapshot.state_dict(), f)
                history.append(row)
                log.info("step %d %s", step, row)
                save_checkpoint()
    finally:
        prefetch.close()
    save_checkpoint()
    bar.close(keep=True)

    selected = int(best["step"]) if best is not None else step
    if best is not None:
        model.eval().load_state_dict(torch.load(best_path, map_location="cpu", weights_only=True))
    else:
        model = average.averaged(model) if average is not None else model.eval()
    if tune_set.images:
        tuned, readout_rows = choose_readout(model, tune_L, tune_ab, s.colour_target, pulls=PULLS)
        temperature, gain, pull = tuned["temperature"], tuned["chroma_gain"], tuned["doubt_pull"]
        readout = {"chosen_on": "tuning photos", "temperature": temperature, "chroma_gain": gain,
                   "doubt_pull": pull, "colour_target": s.colour_target,
                   **{k: round(v, 3) for k, v in tuned.items()
                      if k not in ("temperature", "chroma_gain", "doubt_pull")}}
    else:
        picked, readout_rows = choose_readout_on_training_photos(model, tune_L, tune_ab)
        # No pull is chosen on training photos: the model's own is kept (the gain was measured with it).
        temperature, gain, pull = picked["temperature"], picked["chroma_gain"], model.readout.doubt_pull
        readout = {"chosen_on": "training photos", **picked}
    model.readout = replace(model.readout, temperature=temperature, chroma_gain=gain, doubt_pull=pull)
    if model.config.hint_channels and tune_set.images:
        spread, spread_rows = choose_spread(model, tune_L, tune_ab)
        model.readout = replace(model.readout, spread=spread_of(spread))
        readout["hint_spread"] = {**spread, "search": spread_rows}
    final = quality(model, val_L, val_ab) if val_L is not None and val_ab is not None else {}
    minutes = (elapsed_before + time.monotonic() - t0) / 60
    card = {
        "name": "Colorizer CV_UNet",
        "data": {"folder": str(s.data), "train_photos": len(train_set.images), "tuning_photos": len(tune_set.images),
                 "validation_photos": len(val_set.images), "sampling": sampling, "tuning_names": tune_set.names,
                 "validation_names": val_set.names},
        "steps": step, "planned_steps": s.steps, "stopped_by_time_budget": stopped_by_budget,
        "minutes": round(minutes, 1),
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(s).items()},
        "model": stored_config(model), "bins": int(model.bins.shape[0]),
        "weights": ("moving average of the weights" if average is not None else "the weights")
        + (f" at step {selected}, the best on the tuning photos" if best is not None else " at the last step"),
        "selected_step": selected,
        "readout": readout,
        "readout_search": [{k: round(v, 3) for k, v in r.items()} for r in readout_rows],
        "validation_256px_centre_crops": final, "history": history,
        "torch": torch.__version__, "threads": torch.get_num_threads(),
        "precision": {"autocast_asked": s.autocast or "none", "used": "bf16 autocast" if bf16 else "fp32",
                      "why": autocast_note},
        "hints": ({"channels": s.hint_channels, "decoder": model.config.hint_decoder, "p_none": s.hint_p_none,
                   "geometric_p": s.hint_geometric_p}
                  if s.hint_channels else None),
        "started_from": init_card(s.init),
    }
    save_weights(model, s.out, meta={"card": json.dumps(card)})
    write_model_card(card, s.out)
    return card


def init_card(init: Path | None) -> dict[str, Any] | None:
    """The model card of the weights a fine-tuning started from (its whole lineage)."""
    if init is None:
        return None
    try:
        return json.loads(weights_meta(init).get("card", "{}")) or {"weights": str(init)}
    except (ValueError, RuntimeError):
        return {"weights": str(init)}
