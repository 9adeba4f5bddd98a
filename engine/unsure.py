"""Where a photo's colour is the model's unsure guess: what the app stripes (View > Show Where Unsure)."""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np
import torch

from .hints import Hint, hint_share
from .model import CVUNet
from .readout import unsure


def unsure_map(model: CVUNet, logits: torch.Tensor, small: np.ndarray, size: tuple[int, int],
               hints: Sequence[Hint] = ()) -> np.ndarray:
    """H x W (``size``) float32, 0 .. 1: the network's doubt (``readout.unsure`` of the ab-bin ``logits``, 1 x Q x
    H/4 x W/4 of the canvas whose working-size L is ``small``), less where the hints decide the colour
    (``hints.hint_share``): a hint is a colour the person chose, whatever the network's doubt there.
    """
    h, w = small.shape
    hq, wq = -(-h // 4), -(-w // 4)  # the photo's part of the quarter-size canvas
    r = model.readout
    with torch.inference_mode():
        quarter = unsure(r.variance(logits, model.bins), r.doubt_pull)[0, 0, :hq, :wq]
        ab = r.mean(logits, model.bins)[0, :, :hq, :wq].float() * r.spread.gain  # as the spread compares colours
    doubt = np.ascontiguousarray(quarter.numpy())
    if hints:
        Lq = cv2.resize(small, (wq, hq), interpolation=cv2.INTER_AREA).reshape(hq, wq)
        doubt *= 1.0 - hint_share(Lq, np.ascontiguousarray(ab.numpy().transpose(1, 2, 0)), hints, r.spread)
    H, W = size
    return np.clip(cv2.resize(doubt, (W, H), interpolation=cv2.INTER_LINEAR), 0.0, 1.0).astype(np.float32)
