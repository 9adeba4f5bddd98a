"""Measuring a model on fixed crops, and choosing its snapshot and read-out on the tuning photos.

Why its own module: the training measures each snapshot here (``tuning_score``, ``quality``) and
chooses the shipped read-out and hint spread here (``choose_shipped_readout``); ``readout`` reuses the
spread search on whole photos. Every colour is read out as the runtimes read it (``readout.Readout``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from .. import color
from ..model import CVUNet
from ..readout import Readout, spread_of

log = logging.getLogger(__name__)


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


def matching_gain(model: CVUNet, teacher: CVUNet, L: np.ndarray, ab: np.ndarray, steps: int = 14) -> dict[str, float]:
    """The chroma gain at which ``model`` (a student, at its read-out otherwise) is as colourful on these crops as
    ``teacher`` at its own read-out: {"chroma_gain", "colourfulness_ratio", "teacher_colourfulness_ratio"}.

    Why: a student that learned old prints gives a clean photo a little less colour than its teacher (a
    student shipped at its teacher's gain lost 0.04-0.08 of the originals' colourfulness, docs/experiments);
    colourfulness grows with the gain, so it is found by halving a bracket, and no score is looked at.
    """
    ref = Reference.of(L, ab)  # one for both: ``quality`` would build it again for the teacher
    target = quality_of(L, predict_ab(teacher, L) * teacher.readout.chroma_gain, ref)["colourfulness_ratio"]
    raw = predict_ab(model, L)
    low, high = 0.5 * model.readout.chroma_gain, 2.0 * model.readout.chroma_gain
    for _ in range(steps):
        mid = 0.5 * (low + high)
        if quality_of(L, raw * mid, ref)["colourfulness_ratio"] < target:
            low = mid
        else:
            high = mid
    gain = round(high, 3)
    reached = quality_of(L, raw * gain, ref)["colourfulness_ratio"]
    if abs(reached - target) > 0.01:  # the bracket's edge: the student is far from its teacher
        log.warning("the fitted chroma gain %.3f gives %.3f of the colour, the teacher %.3f", gain, reached, target)
    return {"chroma_gain": gain, "colourfulness_ratio": reached, "teacher_colourfulness_ratio": target}


SPREAD_HINTS = 10  # simulated hints per tuning crop when choosing the hint spread
_REACHES, _LIGHTNESS, _COLOUR = (0.1, 0.15, 0.2, 0.3, 0.45, 0.6), (5.0, 10.0, 20.0), (0.0, 5.0, 10.0, 20.0, 40.0)
_FADING = [(r, lt, f, e, 1.0) for r in _REACHES for lt in _LIGHTNESS for f in (0.02, 0.2) for e in _COLOUR]
# (reach, lightness, floor, colour, fade, restraint): no spread, the floor form, fading, fading with a restraint
SPREADS = ([(0.0, 10.0, 0.05, 0.0, 0.0, 0.0)]
           + [(r, lt, f, e, 0.0, 0.0)
              for r in _REACHES for lt in _LIGHTNESS for f in (0.02, 0.05, 0.2) for e in _COLOUR]
           + [(*s, 0.0) for s in _FADING] + [(*s, k) for k in (20.0, 40.0, 80.0) for s in _FADING])
# the best 10-hint PSNR; or near it, the least one-hint harm (``hint_locality``), or the least harm plus off-colour leak
SPREAD_RULES = ("psnr", "local", "contained")
SPREAD_SLACK_DB = 0.3  # "local": how far below the best 10-hint PSNR a spread may be


def choose_spread(model: CVUNet, L: np.ndarray, ab: np.ndarray,
                  seed: int = 0) -> tuple[dict[str, float], list[dict[str, float]]]:
    """The hint spread (``hints.HintSpread``) chosen on the tuning crops by the "local" rule (the least one-hint
    harm within SPREAD_SLACK_DB of the best PSNR with SPREAD_HINTS simulated hints each): (the chosen, every row).
    """
    truths = [color.join_lab(L[i, 0], ab[i].transpose(1, 2, 0)) for i in range(len(L))]
    return choose_spread_on_photos(model, [color.to_uint8(t) for t in truths], L.shape[-1], seed, truths)


def choose_spread_on_photos(model: CVUNet, photos: list[np.ndarray], size: int, seed: int = 0,
                            truths: list[np.ndarray] | None = None, gains: tuple[float, ...] = (1.0,),
                            colour_target: float | None = None, rule: str = "local",
                            names: list[str] | None = None) -> tuple[dict[str, float], list[dict[str, float]]]:
    """choose_spread on whole photos of any size (uint8 RGB), each at the working ``size``; ``truths``
    (float RGB 0..1) when the photos are rounded copies of them.

    ``rule`` "local": each row also gets what one hint does beyond its own colour (``hint_locality``; the
    photos' ``names`` seed its hints), and the chosen row is the least harm within SPREAD_SLACK_DB of the best
    PSNR among the rows the colour target keeps; "contained": the same with an off-colour hint at each point too,
    the least harm plus off-colour leak.

    ``gains``: hinted-photo chroma gains (``HintSpread.gain``) tried with every spread. With a
    ``colour_target``, the best PSNR among the rows keeping that share of the originals' colourfulness
    (none does: the most colourful); without, the best PSNR. The network runs once per photo; the
    spreads are tried on its output (they only post-process it).
    """
    from ..colorizer import Colorizer, pack, pack_hints, prepare, spread_on_half, unpack
    from ..hints import HintSpread, simulate_hints
    from ..options import ColorizeSettings
    from .hint_locality import least_harm, one_hint_cases, one_hint_figures

    if rule not in SPREAD_RULES:
        raise ValueError(f"spread rule {rule!r}: one of {', '.join(SPREAD_RULES)}")
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
    off_colour = rule == "contained"  # an off-colour hint at each point too, and its leak weighed
    cases = [] if rule == "psnr" else [one_hint_cases(colorizer, names[i] if names else str(i), p,
                                                      off_colour=off_colour) for i, p in enumerate(photos)]
    figure_keys = ("harm", "help", "far_moved", *(("off_leak",) if off_colour else ()))
    rows = []
    for gain in gains:
        for reach, lightness, floor, colour, fade, restraint in SPREADS:
            spread = HintSpread(reach, lightness, floor, gain, colour, fade, restraint)
            outs = [color.join_lab(item.L, unpack(spread_on_half(raw[i], item, hints[i], spread), item))
                    for i, item in enumerate(items)]
            rows.append({"reach": reach, "lightness": lightness, "floor": floor, "gain": gain, "colour": colour,
                         "fade": fade, "restraint": restraint,
                         "psnr": float(np.mean([color.psnr(o, t) for o, t in zip(outs, truths, strict=True)])),
                         "colourfulness_ratio": float(np.mean([color.colourfulness(color.to_uint8(o)) for o in outs]))
                         / max(original, 1e-6)})
            if cases:
                figures = [one_hint_figures(c, spread) for c in cases]
                rows[-1].update({f"one_hint_{k}": float(np.nanmean([f[k] for f in figures]))
                                 for k in figure_keys})
    vivid = rows if colour_target is None else [r for r in rows if r["colourfulness_ratio"] >= colour_target]
    if not vivid:
        best = max(rows, key=lambda r: r["colourfulness_ratio"])
    else:
        best = (least_harm(vivid, SPREAD_SLACK_DB, off_colour=off_colour) if cases
                else max(vivid, key=lambda r: r["psnr"]))
    none = next(r["psnr"] for r in rows if r["reach"] == 0.0 and r["gain"] == 1.0) if 1.0 in gains else rows[0]["psnr"]
    target = {} if colour_target is None else {"colour_target": colour_target, "vivid": float(bool(vivid))}
    return {**best, "hints": SPREAD_HINTS, "gain_over_no_spread_db": round(best["psnr"] - none, 3),
            "off_colour": float(off_colour), **target}, rows


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


def choose_shipped_readout(model: CVUNet, L: np.ndarray, ab: np.ndarray, colour_target: float,
                           tuning: bool) -> tuple[dict[str, Any], list[dict[str, float]]]:
    """Set the read-out a training ships (``model.readout``): (what the card says of it, every row searched).

    ``tuning``: the crops are tuning photos, and the temperature, doubt pull and gain are chosen on them
    (``choose_readout``), then a hinted model's hint spread. Otherwise they are training photos: the
    temperature and gain of ``choose_readout_on_training_photos``, the model's own pull kept.
    """
    if tuning:
        tuned, rows = choose_readout(model, L, ab, colour_target, pulls=PULLS)
        temperature, gain, pull = tuned["temperature"], tuned["chroma_gain"], tuned["doubt_pull"]
        readout = {"chosen_on": "tuning photos", "temperature": temperature, "chroma_gain": gain,
                   "doubt_pull": pull, "colour_target": colour_target,
                   **{k: round(v, 3) for k, v in tuned.items()
                      if k not in ("temperature", "chroma_gain", "doubt_pull")}}
    else:
        picked, rows = choose_readout_on_training_photos(model, L, ab)
        # No pull is chosen on training photos: the model's own is kept (the gain was measured with it).
        temperature, gain, pull = picked["temperature"], picked["chroma_gain"], model.readout.doubt_pull
        readout = {"chosen_on": "training photos", **picked}
    model.readout = replace(model.readout, temperature=temperature, chroma_gain=gain, doubt_pull=pull)
    if model.config.hint_channels and tuning:
        spread, spread_rows = choose_spread(model, L, ab)
        model.readout = replace(model.readout, spread=spread_of(spread))
        readout["hint_spread"] = {**spread, "search": spread_rows}
    return readout, rows
