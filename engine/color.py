"""CIELAB conversions and the quantized ab bins the model predicts over.

L is 0..100 and a, b roughly -110..110 (OpenCV's float conventions, sRGB, D65).
"""

from __future__ import annotations

import math

import cv2
import numpy as np

AB_RANGE = 110.0
BIN_STEP = 15.0


def rgb_to_lab(rgb: np.ndarray) -> np.ndarray:
    """HxWx3 RGB (uint8, uint16 or float in 0..1) -> HxWx3 float32 Lab."""
    return cv2.cvtColor(to_float01(rgb), cv2.COLOR_RGB2Lab)


def lab_to_rgb(lab: np.ndarray) -> np.ndarray:
    """HxWx3 float32 Lab -> HxWx3 float32 RGB clipped to 0..1."""
    rgb = cv2.cvtColor(np.ascontiguousarray(lab, dtype=np.float32), cv2.COLOR_Lab2RGB)
    return np.clip(rgb, 0.0, 1.0, out=rgb)


def to_float01(img: np.ndarray) -> np.ndarray:
    if img.dtype == np.uint8:
        return img.astype(np.float32) * (1.0 / 255.0)
    if img.dtype == np.uint16:
        return img.astype(np.float32) * (1.0 / 65535.0)
    return np.ascontiguousarray(img, dtype=np.float32)


def _grey_lut(levels: int) -> np.ndarray:
    """L of every grey level, computed by the same conversion as colour photos (so they agree)."""
    g = np.linspace(0.0, 1.0, levels, dtype=np.float32)
    return cv2.cvtColor(np.repeat(g[None, :, None], 3, axis=2), cv2.COLOR_RGB2Lab)[0, :, 0].copy()


_LUTS: dict[int, np.ndarray] = {}
STRIP_PIXELS = 1 << 20  # full-resolution colour work goes in strips of about this many pixels


def strips(h: int, w: int, pixels: int = STRIP_PIXELS) -> list[tuple[int, int]]:
    """Row ranges [(r0, r1), ...] covering h rows, each about ``pixels`` pixels."""
    rows = max(1, pixels // max(1, w))
    return [(r0, min(h, r0 + rows)) for r0 in range(0, h, rows)]


def lightness(img: np.ndarray) -> np.ndarray:
    """L (HxW float32, 0..100) of a grayscale (HxW) or RGB (HxWx3) image."""
    if img.ndim == 2:
        if img.dtype in (np.uint8, np.uint16):
            levels = 256 if img.dtype == np.uint8 else 65536
            if levels not in _LUTS:
                _LUTS[levels] = _grey_lut(levels)
            return _LUTS[levels][img]
        f = to_float01(img)
        return cv2.cvtColor(np.repeat(f[..., None], 3, axis=2), cv2.COLOR_RGB2Lab)[..., 0].copy()
    H, W = img.shape[:2]
    L = np.empty((H, W), np.float32)
    for r0, r1 in strips(H, W):  # a whole Lab copy would be 12 bytes a pixel
        L[r0:r1] = rgb_to_lab(img[r0:r1])[..., 0]
    return L


def join_lab(L: np.ndarray, ab: np.ndarray) -> np.ndarray:
    """Full-resolution L (HxW) with ab (HxWx2) -> RGB float32 0..1."""
    lab = np.empty(L.shape + (3,), np.float32)
    lab[..., 0] = L
    lab[..., 1:] = ab
    return lab_to_rgb(lab)


def grey_rgb(L: np.ndarray) -> np.ndarray:
    """The grey photo of a lightness map: RGB float32 0..1 with R = G = B."""
    return join_lab(L, np.zeros(L.shape + (2,), np.float32))


def to_uint8(rgb: np.ndarray) -> np.ndarray:
    """Float RGB 0..1 -> uint8, rounded."""
    return np.clip(rgb * 255.0 + 0.5, 0, 255).astype(np.uint8)


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    """PSNR of two RGB images in 0..1 (99 dB for identical images)."""
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return 99.0 if mse == 0 else 10 * math.log10(1.0 / mse)


def ab_grid() -> np.ndarray:
    """All candidate bin centres (K, 2) on a BIN_STEP grid over [-AB_RANGE, AB_RANGE]^2."""
    n = int(AB_RANGE // BIN_STEP)
    # Symmetric about 0, so that neutral grey is a bin centre of its own.
    ticks = np.arange(-n, n + 1, dtype=np.float32) * BIN_STEP
    a, b = np.meshgrid(ticks, ticks, indexing="ij")
    return np.stack([a.ravel(), b.ravel()], axis=1)


def fit_bins(ab_samples: np.ndarray, min_count: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Keep the grid bins real photos use. Returns (centres (Q,2), prior (Q,) summing to 1)."""
    grid = ab_grid()
    idx = nearest_bin(ab_samples.reshape(-1, 2), grid)
    counts = np.bincount(idx, minlength=len(grid))
    keep = counts >= min_count
    centres = grid[keep]
    prior = counts[keep].astype(np.float64)
    return centres, (prior / prior.sum()).astype(np.float32)


def nearest_bin(ab: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Index of the nearest bin centre for each ab pair (N,2)."""
    out = np.empty(len(ab), np.int64)
    for start in range(0, len(ab), 65536):
        chunk = ab[start : start + 65536]
        d = ((chunk[:, None, :] - centres[None, :, :]) ** 2).sum(-1)
        out[start : start + 65536] = d.argmin(1)
    return out


def rebalance_weights(prior: np.ndarray, mix: float = 0.5) -> np.ndarray:
    """Class weights that lift rare (saturated) colours: w ~ 1/((1-mix) p + mix/Q), E_p[w] = 1."""
    q = len(prior)
    w = 1.0 / ((1.0 - mix) * prior + mix / q)
    return (w / (prior * w).sum()).astype(np.float32)


def colourfulness(rgb: np.ndarray) -> float:
    """Hasler and Suesstrunk (2003) colourfulness of an RGB image (0..255 scale)."""
    x = to_float01(rgb).astype(np.float64) * 255.0
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    rg = r - g
    yb = 0.5 * (r + g) - b
    return float(np.hypot(rg.std(), yb.std()) + 0.3 * np.hypot(rg.mean(), yb.mean()))
