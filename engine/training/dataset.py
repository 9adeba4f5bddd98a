"""Training data: colour photos in memory, random multi-scale crops, a fixed validation split."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from ..color import colourfulness, lightness, rgb_to_lab
from ..hints import HINT_CHANNELS, sample_hints
from ..imageio import IMAGE_EXTENSIONS
from .degrade import DegradeSettings, degrade

log = logging.getLogger(__name__)

GREY_COLOURFULNESS = 6.0  # below this a photo is (nearly) grey: nothing to learn colour from
MAX_SIDE = 1024  # photos are kept in memory no larger than this


VALIDATION_FRACTION = 0.1
TUNING_FRACTION = 0.1  # what `evaluate --split tuning` means: the share used by `train --tune-fraction 0.1`


def split_of(name: str, val_fraction: float = VALIDATION_FRACTION, tune_fraction: float = 0.0) -> str:
    """"validation", "tuning" or "train": a fixed split by file name, so a photo always lands on the same side.

    Validation photos are only ever measured. Tuning photos are held out of training too, so that the
    read-out settings (temperature, chroma gain) are chosen on photos the model has never learned.
    """
    h = int.from_bytes(hashlib.sha1(name.encode("utf-8")).digest()[:4], "big") / 2**32
    if h < val_fraction:
        return "validation"
    return "tuning" if h < val_fraction + tune_fraction else "train"


def is_validation(name: str, fraction: float = VALIDATION_FRACTION) -> bool:
    return split_of(name, fraction) == "validation"


@dataclass
class PhotoSet:
    names: list[str]
    images: list[np.ndarray]  # HxWx3 uint8 RGB


def find_photos(folder: Path) -> list[Path]:
    return sorted(p for p in Path(folder).rglob("*") if p.suffix.lower() in IMAGE_EXTENSIONS and p.is_file())


def load_photos(folder: Path, split: str | None, val_fraction: float = VALIDATION_FRACTION,
                tune_fraction: float = 0.0) -> PhotoSet:
    """Decode the colour photos of one part of the split (None: all), skipping grey ones."""
    names, images = [], []
    for path in find_photos(folder):
        rel = path.relative_to(folder).as_posix()
        if split is not None and split_of(rel, val_fraction, tune_fraction) != split:
            continue
        rgb = read_colour_photo(path)
        if isinstance(rgb, str):
            log.log(logging.WARNING if rgb == UNREADABLE else logging.INFO, "skipping %s %s", rgb, rel)
            continue
        names.append(rel)
        images.append(rgb)
    return PhotoSet(names, images)


UNREADABLE, NEARLY_GREY, TOO_SMALL = "unreadable", "nearly grey", "too small"
MIN_TRAINING_SIDE = 16  # a thinner photo cannot give a training crop (under 8 px the crop draw fails)


def read_colour_photo(path: Path, data: bytes | None = None) -> np.ndarray | str:
    """A colour photo (``data``: its file's bytes, already read) as RGB uint8, its longer side at most MAX_SIDE;
    or why it cannot teach colour.

    Read through numpy, not ``cv2.imread``: OpenCV's own file opening crashes on names that are not UTF-8.
    """
    try:
        raw = np.frombuffer(data, np.uint8) if data is not None else np.fromfile(path, np.uint8)
        bgr = cv2.imdecode(raw, cv2.IMREAD_COLOR)
    except (OSError, ValueError, cv2.error):
        return UNREADABLE
    if bgr is None:
        return UNREADABLE
    if min(bgr.shape[:2]) < MIN_TRAINING_SIDE:
        return TOO_SMALL
    rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
    scale = MAX_SIDE / max(rgb.shape[:2])
    if scale < 1:
        rgb = cv2.resize(rgb, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    small = cv2.resize(rgb, (64, 64), interpolation=cv2.INTER_AREA)
    return NEARLY_GREY if colourfulness(small) < GREY_COLOURFULNESS else rgb


def random_crop(img: np.ndarray, size: int, rng: np.random.Generator,
                scale: tuple[float, float] = (0.3, 1.0)) -> np.ndarray:
    """A square crop covering a random share of the shorter side, resized to size x size."""
    return random_crop_scaled(img, size, rng, scale)[0]


def random_crop_scaled(img: np.ndarray, size: int, rng: np.random.Generator,
                       scale: tuple[float, float] = (0.3, 1.0)) -> tuple[np.ndarray, float]:
    """``random_crop``, and how many crop pixels a pixel of the photo at 1024 px becomes (``degrade``'s scale)."""
    h, w = img.shape[:2]
    side = int(min(h, w) * np.sqrt(rng.uniform(scale[0] ** 2, scale[1] ** 2)))
    side = max(min(side, h, w), 8)
    y = int(rng.integers(0, h - side + 1))
    x = int(rng.integers(0, w - side + 1))
    crop = img[y : y + side, x : x + side]
    interp = cv2.INTER_AREA if side > size else cv2.INTER_LINEAR
    crop = cv2.resize(crop, (size, size), interpolation=interp)
    if rng.random() < 0.5:
        crop = crop[:, ::-1]
    return np.ascontiguousarray(crop), max(h, w) / 1024.0 * size / side


def center_crop(img: np.ndarray, size: int) -> np.ndarray:
    h, w = img.shape[:2]
    side = min(h, w)
    y, x = (h - side) // 2, (w - side) // 2
    return cv2.resize(img[y : y + side, x : x + side], (size, size), interpolation=cv2.INTER_AREA)


def jitter_lightness(L: np.ndarray, rng: np.random.Generator, gamma: float = 0.0) -> np.ndarray:
    """Exposure and contrast (and, if asked, gamma) jitter on L only: old scans vary in all, colours do not."""
    contrast = rng.uniform(0.8, 1.2)
    exposure = rng.uniform(-8.0, 8.0)
    if gamma > 0:  # drawn only when asked, so a run without it sees exactly the batches it always did
        L = 100.0 * (np.clip(L, 0.0, 100.0) / 100.0) ** float(np.exp(rng.uniform(-gamma, gamma)))
    return np.clip((L - 50.0) * contrast + 50.0 + exposure, 0.0, 100.0)


def pick_photo(n: int, rng: np.random.Generator, weights: np.ndarray | None = None) -> int:
    """One photo index: uniform, or by per-photo probabilities (groups.balanced_weights).

    Uniform draws use ``rng.integers`` as they always did, so a run without weights sees the same batches.
    """
    if weights is None:
        return int(rng.integers(n))
    return int(rng.choice(n, p=weights))


def make_batch(photos: PhotoSet, batch: int, size: int, rng: np.random.Generator,
               augment: bool = True, crop_min: float = 0.3, gamma: float = 0.0,
               weights: np.ndarray | None = None, degrade_share: float = 0.0,
               degrade_rng: np.random.Generator | None = None,
               degrade_settings: DegradeSettings | None = None,
               clean_L: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(L: B x 1 x S x S, ab: B x 2 x S x S) float32 from random photos (drawn by ``weights`` if given).

    ``degrade_share`` of the crops give the network an old-print scan of themselves (``degrade``, drawn from
    ``degrade_rng``: the crops stay those of a run without it); the target is always the clean crop's ab.
    ``clean_L`` (B x 1 x S x S), if given, gets each crop's clean L, neither degraded nor jittered: a teacher's input.
    """
    Ls = np.empty((batch, 1, size, size), np.float32)
    abs_ = np.empty((batch, 2, size, size), np.float32)
    for i in range(batch):
        img = photos.images[pick_photo(len(photos.images), rng, weights)]
        crop, px = random_crop_scaled(img, size, rng, (crop_min, 1.0))
        lab = rgb_to_lab(crop)
        L = lab[..., 0]
        if clean_L is not None:
            clean_L[i, 0] = L
        if degrade_share > 0 and degrade_rng is not None and degrade_rng.random() < degrade_share:
            scan, _ = degrade(crop, degrade_rng, degrade_settings or DegradeSettings(), px=px)
            L = lightness(scan)
        Ls[i, 0] = jitter_lightness(L, rng, gamma) if augment else L
        abs_[i] = lab[..., 1:].transpose(2, 0, 1)
    return Ls, abs_


def make_hints(ab: np.ndarray, rng: np.random.Generator, p_none: float = 0.5,
               geometric_p: float = 1 / 8) -> np.ndarray:
    """Hint maps (B x 3 x S x S) for a batch's true ab (B x 2 x S x S), drawn as ``hints.sample_hints`` does.

    Its own generator (not the batch's), so a hinted run sees exactly the crops an unhinted one does.
    """
    out = np.empty((len(ab), HINT_CHANNELS, *ab.shape[2:]), np.float32)
    for i in range(len(ab)):
        out[i] = sample_hints(ab[i], rng, p_none, geometric_p)
    return out


def fixed_batch(photos: PhotoSet, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Centre crops of every photo: the same validation batch at every evaluation."""
    labs = [rgb_to_lab(center_crop(img, size)) for img in photos.images]
    L = np.stack([lab[..., 0] for lab in labs])[:, None]
    ab = np.stack([lab[..., 1:].transpose(2, 0, 1) for lab in labs])
    return L.astype(np.float32), ab.astype(np.float32)
