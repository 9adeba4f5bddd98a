"""Grayscale photo in, colour photo out, at the photo's own size.

The network runs at a working size (longer side ``size``, aspect kept, padded to a multiple
of 32); its ab output is upsampled to the photo's size and joined with the photo's own
full-resolution L, so detail and sharpness come from the original.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace
from pathlib import Path

import cv2
import numpy as np
import torch

from .color import join_lab, lightness
from .devices import best_precision, resolve_device
from .model import MULTIPLE, CVUNet
from .runtime import ENGINES, Runtime, make_runtime
from .weights import load_model

log = logging.getLogger(__name__)

MIN_WORK = 64  # tiny photos are worked at least this large


@dataclass(frozen=True)
class ColorizeSettings:
    """What the user chose; validated by ``Colorizer.create``."""

    engine: str = "optimized"
    device: str = "auto"
    precision: str = "auto"  # auto: the fastest precision this device runs well
    batch_size: int = 4
    size: int = 512
    compile: bool = False
    weights: Path | None = None

    def validated(self) -> ColorizeSettings:
        if self.engine not in ENGINES:
            raise ValueError(f"unknown engine {self.engine!r}: use one of {', '.join(ENGINES)}")
        if self.precision not in ("auto", "fp32", "fp16", "bf16"):
            raise ValueError(f"unknown precision {self.precision!r}")
        if not 1 <= self.batch_size <= 64:
            raise ValueError("batch size must be between 1 and 64")
        if not MIN_WORK <= self.size <= 4096:
            raise ValueError(f"working size must be between {MIN_WORK} and 4096")
        return self


@dataclass(frozen=True)
class Prepared:
    """One photo ready for the network: its full-size L and its working-size L."""

    L: np.ndarray  # H x W float32, 0..100, full resolution
    small: np.ndarray  # h x w float32 at the working size

    @property
    def shape(self) -> tuple[int, int]:
        return self.L.shape[0], self.L.shape[1]


def working_shape(h: int, w: int, size: int) -> tuple[int, int]:
    """Longer side = size (never upscaling a photo beyond its own size, but at least MIN_WORK)."""
    target = max(min(size, max(h, w)), MIN_WORK)
    s = target / max(h, w)
    return max(1, round(h * s)), max(1, round(w * s))


def padded(n: int) -> int:
    return max(MULTIPLE, math.ceil(n / MULTIPLE) * MULTIPLE)


def prepare(image: np.ndarray, size: int) -> Prepared:
    """image: H x W grey or H x W x 3 RGB, uint8/uint16/float 0..1."""
    L = lightness(image)
    h, w = working_shape(L.shape[0], L.shape[1], size)
    interp = cv2.INTER_AREA if h < L.shape[0] else cv2.INTER_LINEAR
    small = cv2.resize(L, (w, h), interpolation=interp) if (h, w) != L.shape else L
    return Prepared(L, np.ascontiguousarray(small, dtype=np.float32))


def pack(items: list[Prepared]) -> np.ndarray:
    """N x 1 x H x W canvas: each working-size L top-left, mirrored into the padding."""
    H = padded(max(p.small.shape[0] for p in items))
    W = padded(max(p.small.shape[1] for p in items))
    batch = np.empty((len(items), 1, H, W), np.float32)
    for i, p in enumerate(items):
        h, w = p.small.shape
        border = cv2.BORDER_REFLECT_101 if min(h, w) > 1 else cv2.BORDER_REPLICATE
        if h > 1 and w > 1 and (H - h >= h or W - w >= w):
            border = cv2.BORDER_REPLICATE  # a reflection cannot be wider than the image
        batch[i, 0] = cv2.copyMakeBorder(p.small, 0, H - h, 0, W - w, border)
    return batch


def unpack(ab_half: np.ndarray, item: Prepared) -> np.ndarray:
    """The network's half-size ab for one photo -> H x W x 2 at the photo's full size."""
    h, w = item.small.shape
    crop = ab_half[:, : (h + 1) // 2, : (w + 1) // 2].transpose(1, 2, 0)
    H, W = item.shape
    return cv2.resize(np.ascontiguousarray(crop), (W, H), interpolation=cv2.INTER_LINEAR).reshape(H, W, 2)


class Colorizer:
    """The numpy-facing engine: build once with ``create``, then ``colorize`` many photos."""

    def __init__(self, runtime: Runtime, settings: ColorizeSettings, model: CVUNet) -> None:
        self.runtime = runtime
        self.settings = settings
        self.model = model

    @classmethod
    def create(cls, settings: ColorizeSettings = ColorizeSettings(), model: CVUNet | None = None) -> Colorizer:
        settings = settings.validated()
        device = resolve_device(settings.device)
        precision = best_precision(device) if settings.precision == "auto" else settings.precision
        if settings.engine == "baseline":
            precision = "fp32"
        model = model if model is not None else load_model(settings.weights)
        runtime = make_runtime(settings.engine, model, device, precision, compile=settings.compile)
        return cls(runtime, replace(settings, device=device.type, precision=precision), model)

    @property
    def description(self) -> str:
        return f"{self.runtime.name} {self.runtime.precision} on {self.runtime.device.type}"

    def infer(self, canvas: np.ndarray) -> np.ndarray:
        """The network on a packed canvas (N x 1 x H x W) -> half-size ab (N x 2 x H/2 x W/2)."""
        with torch.inference_mode():
            return self.runtime.run(canvas)

    def predict(self, items: list[Prepared]) -> list[np.ndarray]:
        """Full-size ab (H x W x 2 float32) for each prepared photo, in one network call."""
        if not items:
            return []
        ab = self.infer(pack(items))
        return [unpack(ab[i], p) for i, p in enumerate(items)]

    def colorize(self, image: np.ndarray) -> np.ndarray:
        """A grey (H x W) or RGB (H x W x 3) photo -> H x W x 3 uint8 RGB colour version."""
        item = prepare(image, self.settings.size)
        ab = self.predict([item])[0]
        return to_uint8(join_lab(item.L, ab))


def to_uint8(rgb: np.ndarray) -> np.ndarray:
    return np.clip(rgb * 255.0 + 0.5, 0, 255).astype(np.uint8)
