"""Choose a trained model's read-out again, on photos from sources its training never saw.

Why: the training's read-out step chooses the temperature, doubt pull and chroma gain on tuning photos held
out by file name, so they come from the same packages as the training photos. On those the model's colours
are right often enough that a vivid read-out pays. On photos from other sources it is as sure of itself and
wrong far more often (docs/experiments: 72 photos from 15 unseen packages scored 1 dB under grey), so a
read-out chosen there is the one that fits the photos people bring. The rule here is the model-v2 issue's
"never worse than grey": the most colourful read-out whose mean PSNR gain over the grey photo on these
photos is at least ``min_gain_db``. The weights are not touched; only the read-out (``readout.Readout``:
its settings and the hint spread) changes.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import torch

from .. import color
from ..colorizer import pack, prepare
from ..model import CVUNet
from ..options import WORKING_SIZE
from ..readout import Readout, spread_of
from ..weights import load_model, save_weights, stored_config, weights_meta
from .card import write_model_card
from .dataset import load_photos
from .tuning import choose_spread_on_photos

log = logging.getLogger(__name__)

READOUT_TEMPERATURES = (0.45, 0.7, 1.0, 1.4)
READOUT_PULLS = (0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
READOUT_GAINS = tuple(round(0.5 + 0.1 * i, 1) for i in range(8))  # 0.5 .. 1.2 (a wider grid: docs/experiments)
READOUT_HINT_GAINS = (1.0, 1.1, 1.2, 1.3, 1.4, 1.5)  # on a hinted photo's own colour, before the hints' corrections


@dataclass(frozen=True)
class ReadoutSettings:
    """What ``readout`` reads and writes; the rule's margin; the working size the photos are measured at."""

    weights: Path
    photos: Path  # colour photos from sources the training never saw (e.g. tools/external_photos)
    out: Path
    min_gain_db: float = 0.0  # the chosen read-out is at least this much better than grey on them
    size: int = WORKING_SIZE  # whole photos, as the app colours them
    hint_colour_target: float | None = None  # e.g. 0.85: a hint gain too, keeping this much colour at 10 hints
    hints_only: bool = False  # keep the automatic read-out; choose the hint spread alone
    spread_rule: str = "local"  # how the hint spread is chosen (``tuning.SPREAD_RULES``)


def on_grid_edge(chosen: dict[str, float]) -> list[str]:
    """The settings of a chosen row that sit at the top of their grid (a rule that favours colour pushes there)."""
    tops = {"temperature": max(READOUT_TEMPERATURES), "doubt_pull": max(READOUT_PULLS),
            "chroma_gain": max(READOUT_GAINS)}
    return [k for k, top in tops.items() if chosen.get(k) == top]


def most_colourful_not_below(rows: list[dict[str, float]], min_gain_db: float) -> dict[str, float]:
    """The most colourful row whose gain over grey is at least ``min_gain_db`` (ties: the better PSNR).

    With no row good enough, the one with the best gain, marked ``met: 0``: the rule cannot hold, and the
    least bad read-out is what is left.
    """
    ok = [r for r in rows if r["gain_db"] >= min_gain_db]
    if ok:
        return {**max(ok, key=lambda r: (round(r["colourfulness_ratio"], 3), r["gain_db"])), "met": 1.0}
    return {**max(rows, key=lambda r: r["gain_db"]), "met": 0.0}


def readout_rows(model: CVUNet, photos: list[np.ndarray], size: int,
                 temperatures: tuple[float, ...] = READOUT_TEMPERATURES, pulls: tuple[float, ...] = READOUT_PULLS,
                 gains: tuple[float, ...] = READOUT_GAINS) -> list[dict[str, float]]:
    """Mean PSNR, gain over grey and colourfulness ratio of every (temperature, pull, gain) on whole photos.

    Each photo at the working size, the network once per temperature, the pull and gain as the runtimes
    apply them (the pull at the logits' size, upsampled; the gain on top), compared at the working size.
    """
    keys = [(t, p, g) for t in temperatures for p in pulls for g in gains]
    psnr = {k: 0.0 for k in keys}
    colour = {k: 0.0 for k in keys}
    grey = original = 0.0
    with torch.no_grad():
        for rgb in photos:
            item = prepare(rgb, size)
            h, w = item.small.shape
            small = cv2.resize(rgb, (w, h), interpolation=cv2.INTER_AREA) if (h, w) != rgb.shape[:2] else rgb
            truth = small.astype(np.float32) / 255.0
            grey += color.psnr(color.grey_rgb(item.small), truth)
            original += color.colourfulness(small)
            x = torch.from_numpy(pack([item]))
            for t, (logits, ab) in zip(temperatures, model.forward_temperatures(x, temperatures), strict=True):
                variance = Readout(temperature=t).variance(logits, model.bins)
                for p in pulls:
                    pulled = ab * Readout(temperature=t, doubt_pull=p).doubt(variance, ab.shape[-2:]) if p else ab
                    half = pulled[0, :, : (h + 1) // 2, : (w + 1) // 2].permute(1, 2, 0).numpy()
                    full = cv2.resize(np.ascontiguousarray(half), (w, h), interpolation=cv2.INTER_LINEAR)
                    for g in gains:
                        out = color.join_lab(item.small, full.reshape(h, w, 2) * g)
                        psnr[(t, p, g)] += color.psnr(out, truth)
                        colour[(t, p, g)] += color.colourfulness(color.to_uint8(out))
    n = len(photos)
    return [{"temperature": t, "doubt_pull": p, "chroma_gain": g, "psnr": psnr[(t, p, g)] / n,
             "psnr_grey": grey / n, "gain_db": (psnr[(t, p, g)] - grey) / n,
             "colourfulness_ratio": colour[(t, p, g)] / max(original, 1e-6)} for t, p, g in keys]


def choose_readout_elsewhere(s: ReadoutSettings) -> dict[str, Any]:
    """Write ``s.out``: the weights of ``s.weights`` with the read-out and hint spread chosen on ``s.photos``."""
    model = load_model(s.weights)
    photos = load_photos(s.photos, None)
    if not photos.images:
        raise ValueError(f"no colour photos in {s.photos}")
    before = json.loads(weights_meta(s.weights).get("card", "{}") or "{}")
    readout: dict[str, Any]
    if s.hints_only:  # the automatic read-out stays as it is
        if not model.config.hint_channels:
            raise ValueError("these weights take no colour hints: there is no hint spread to choose")
        c = model.readout
        chosen = {"temperature": c.temperature, "doubt_pull": c.doubt_pull, "chroma_gain": c.chroma_gain}
        rows = before.get("readout_search", [])
        readout = {k: v for k, v in (before.get("readout") or {}).items() if k != "hint_spread"}
        readout["hint_spread_chosen_again_on"] = str(s.photos)
        log.info("keeping the read-out; choosing the hint spread on %d photos from %s", len(photos.images), s.photos)
    else:
        log.info("choosing the read-out on %d photos from %s", len(photos.images), s.photos)
        rows = readout_rows(model, photos.images, s.size)
        chosen = most_colourful_not_below(rows, s.min_gain_db)
        model.readout = replace(model.readout, temperature=chosen["temperature"], doubt_pull=chosen["doubt_pull"],
                                chroma_gain=chosen["chroma_gain"])
        readout = {
            "chosen_on": "photos from other sources", "folder": str(s.photos), "photos": len(photos.images),
            "names": photos.names, "min_gain_db": s.min_gain_db,
            **{k: round(v, 3) for k, v in chosen.items()},
        }
        if "readout_before" not in before:  # a second run keeps what the training chose, not the first re-choice
            before["readout_before"] = before.get("readout")
            before["validation_256px_centre_crops_before"] = before.get("validation_256px_centre_crops")
        before.pop("validation_256px_centre_crops", None)  # measured with the old read-out
        readout["on_grid_edge"] = on_grid_edge(chosen)
        if readout["on_grid_edge"]:
            log.warning("the chosen read-out is on the edge of the grid (%s): a wider grid might choose otherwise",
                        ", ".join(readout["on_grid_edge"]))
    if model.config.hint_channels:
        gains = (1.0,) if s.hint_colour_target is None else READOUT_HINT_GAINS
        spread, spread_rows = choose_spread_on_photos(model, photos.images, s.size, gains=gains,
                                                      colour_target=s.hint_colour_target, rule=s.spread_rule,
                                                      names=photos.names)
        model.readout = replace(model.readout, spread=spread_of(spread))
        readout["hint_spread"] = {**spread, "search": spread_rows}
    card = before
    card.update({
        "model": stored_config(model),
        "readout": readout,
        "readout_search": [{k: round(v, 3) for k, v in r.items()} for r in rows],
        "readout_settings": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(s).items()},
    })
    card.setdefault("name", "Colorizer CV_UNet")
    save_weights(model, s.out, meta={"card": json.dumps(card)})
    if "data" in card and "settings" in card:
        write_model_card(card, s.out)
    log.info("read-out: temperature %s, doubt pull %s, chroma gain %s: %+.2f dB over grey, colourfulness %.2f",
             chosen["temperature"], chosen["doubt_pull"], chosen["chroma_gain"], readout.get("gain_db", float("nan")),
             readout.get("colourfulness_ratio", float("nan")))
    return card
