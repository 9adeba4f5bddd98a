"""What every bench times: the same L batch for every configuration, and the model (the weights, or a stand-in)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch


def bench_inputs(size: int, batch: int) -> np.ndarray:
    """The same L batch for every configuration: centre crops of the sample photos, else noise."""
    import cv2

    from ..color import lightness
    from ..imageio import decode
    from ..weights import RESOURCES

    photos = sorted((RESOURCES / "samples").glob("*.jpg")) + sorted((RESOURCES / "samples").glob("*.png"))
    L = np.empty((batch, 1, size, size), np.float32)
    for i in range(batch):
        if photos:
            img = decode(photos[i % len(photos)]).pixels
            h, w = img.shape[:2]
            s = min(h, w)
            img = img[(h - s) // 2 : (h - s) // 2 + s, (w - s) // 2 : (w - s) // 2 + s]
        else:
            img = (np.random.default_rng(i).random((size, size)) * 255).astype(np.uint8)
        L[i, 0] = cv2.resize(lightness(np.ascontiguousarray(img)), (size, size), interpolation=cv2.INTER_AREA)
    return L


def bench_model(weights: Path | None, encoder: str | None = None):
    from ..model import CVUNet, ModelConfig
    from ..weights import DEFAULT_WEIGHTS, load_model, read_weights

    path = weights or DEFAULT_WEIGHTS
    if encoder is not None:  # an encoder comparison: the time does not depend on the weights' values
        torch.manual_seed(0)
        bins = int(read_weights(Path(path))["config"]["num_bins"]) if Path(path).exists() else 98  # no model built
        return CVUNet(ModelConfig(num_bins=bins, encoder=encoder)).eval()
    if Path(path).exists():
        return load_model(path)
    torch.manual_seed(0)  # no trained weights yet: timing does not depend on them
    return CVUNet(ModelConfig(num_bins=98)).eval()


def model_gflops(size: int, weights: Path | None, encoder: str | None = None) -> float:
    from torch.utils.flop_counter import FlopCounterMode

    model = bench_model(weights, encoder)
    with FlopCounterMode(display=False) as fc, torch.inference_mode():
        model(torch.zeros(1, 1, size, size))
    return fc.get_total_flops() / 1e9
