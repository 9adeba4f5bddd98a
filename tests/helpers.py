"""Shared test helpers (plain functions, no fixtures: tests/conftest.py belongs to the GUI tests)."""

from __future__ import annotations

import sys
from pathlib import Path

import cv2
import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))

from engine.color import lightness  # noqa: E402
from engine.model import CVUNet, ModelConfig  # noqa: E402


def random_model(seed: int = 0, bins: int = 40, encoder: str = "lite0") -> CVUNet:
    """An untrained CV_UNet with non-trivial BatchNorm statistics, bins and refinement.

    Random BN stats make folding bugs visible; a non-zero refinement exercises that path.
    """
    torch.manual_seed(seed)
    m = CVUNet(ModelConfig(num_bins=bins, encoder=encoder)).eval()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.copy_(torch.rand(mod.running_mean.shape, generator=g) - 0.5)
                mod.running_var.copy_(torch.rand(mod.running_var.shape, generator=g) + 0.5)
                mod.weight.copy_(torch.rand(mod.weight.shape, generator=g) + 0.5)
                mod.bias.copy_(torch.rand(mod.bias.shape, generator=g) * 0.4 - 0.2)
        m.bins.copy_(torch.randn(bins, 2, generator=g) * 40)
        m.refine.conv2.weight.normal_(0, 0.05, generator=g)
    return m


def grey_photo(h: int, w: int, seed: int = 0) -> np.ndarray:
    """A smooth grey 'photo' (gradients and shapes, not noise) as H x W uint8."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    img = 128 + 60 * np.sin(x / max(w, 1) * 6 + rng.random() * 3) * np.cos(y / max(h, 1) * 4)
    cv2.circle(img, (w // 2, h // 2), max(1, min(h, w) // 4), float(rng.integers(0, 255)), -1)
    return np.clip(img, 0, 255).astype(np.uint8)


def colour_photo(h: int, w: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    img = np.zeros((h, w, 3), np.uint8)
    img[:] = rng.integers(40, 200, 3)
    cv2.rectangle(img, (w // 4, h // 4), (3 * w // 4, 3 * h // 4), [int(v) for v in rng.integers(0, 255, 3)], -1)
    cv2.circle(img, (w // 3, h // 3), max(1, min(h, w) // 6), [int(v) for v in rng.integers(0, 255, 3)], -1)
    return img


def write_grey(path: Path, h: int, w: int, seed: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    assert cv2.imwrite(str(path), grey_photo(h, w, seed))
    return path


def drag_event(kind, pos, *args):
    """A QDragEnterEvent / QDragMoveEvent / QDropEvent at ``pos``: PySide6 6.12 takes a QPointF, 6.11 a QPoint."""
    from PySide6.QtCore import QPoint, QPointF

    try:
        return kind(QPointF(pos), *args)
    except TypeError:
        return kind(QPoint(int(pos.x()), int(pos.y())), *args)


SAMPLES = sorted((ROOT / "resources" / "samples").glob("*.jpg"))  # the sample photos that come with the app


def old_scan(image: np.ndarray, seed: int, tint=(1.0, 0.88, 0.7)) -> np.ndarray:
    """An old print's scan made here, not by degrade.py: faded, soft, grainy, toned, JPEG at 70."""
    rng = np.random.default_rng(seed)
    L = 0.15 + 0.7 * lightness(image) / 100.0
    L = cv2.GaussianBlur(L.astype(np.float32), (0, 0), 1.2) + 0.04 * rng.standard_normal(L.shape).astype(np.float32)
    rgb = np.clip(L[..., None] * np.array(tint, np.float32) * 255 + 0.5, 0, 255).astype(np.uint8)
    _, enc = cv2.imencode(".jpg", rgb, [cv2.IMWRITE_JPEG_QUALITY, 70])
    return cv2.imdecode(enc, cv2.IMREAD_COLOR)
