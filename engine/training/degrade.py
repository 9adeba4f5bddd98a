"""A degradation model of old photos and their scans: a clean colour photo in, the grey (or toned) scan an
archive would hold out, for training on old prints and for measuring on them (``evaluate --degrade``).

The steps follow the life of a print, each drawn per photo from a documented range and applied with its own
probability, from one seeded generator (the same seed, the same scan):

1. the print is monochrome: the photo's own lightness (the target keeps the clean photo's colour);
2. the print process: softness (lens, enlarger, slight motion), film grain, a halftone screen (newspaper and
   magazine prints), faded contrast with lifted blacks and compressed highlights, toning (sepia, selenium,
   cyanotype: a 3-channel file of a monochrome photo);
3. ageing: uneven exposure and vignetting, paper texture, dust, scratches, creases;
4. the scan: down- and up-sampling, JPEG at low to medium quality.

Every range is a scale at 1024 px on the longer side (the training photos' size) and is scaled to the photo.
``DegradeSettings.strength`` scales every range's upper part at once (0: clean, 1: the ranges as documented).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import cv2
import numpy as np

from ..color import lab_to_rgb, lightness

Rng = np.random.Generator
Step = Callable[[np.ndarray, Rng, float], np.ndarray]  # (H x W x 3 float32 0..1, rng, pixel scale) -> image

# Tones of monochrome prints as (a, b) at full strength, in Lab units; a toned print's chroma grows with its
# midtones and falls to nothing in the blacks and whites (as a toner bleaching into the paper's white does).
TONES: dict[str, tuple[float, float]] = {
    "sepia": (7.0, 24.0),  # sulphide / sepia toner: warm brown
    "warm": (3.0, 12.0),  # warm-tone paper, faint sepia
    "selenium": (4.0, -3.0),  # selenium toner: purple-brown shadows
    "cyanotype": (-6.0, -30.0),  # iron blue prints
    "cold": (-2.0, -8.0),  # cold-tone paper, blue-black
}


@dataclass(frozen=True)
class DegradeSettings:
    """Each step's probability (per photo) and one strength for all ranges (0 clean .. 1 as documented)."""

    strength: float = 1.0
    soften: float = 0.8
    grain: float = 0.8
    halftone: float = 0.08
    fade: float = 0.7
    tone: float = 0.5
    exposure: float = 0.6
    texture: float = 0.4
    dust: float = 0.5
    scratches: float = 0.3
    creases: float = 0.1
    resample: float = 0.5
    jpeg: float = 0.6
    order: tuple[str, ...] = field(default=("soften", "grain", "halftone", "fade", "tone", "exposure", "texture",
                                            "dust", "scratches", "creases", "resample", "jpeg"))


def _draw(rng: Rng, lo: float, hi: float, strength: float) -> float:
    """A value from [lo, lo + strength * (hi - lo)]: strength 0 draws ``lo`` (the mildest end)."""
    return float(lo + rng.random() * strength * (hi - lo))


def soften(img: np.ndarray, rng: Rng, px: float, strength: float = 1.0) -> np.ndarray:
    """Lens, enlarger and scanner softness: a Gaussian of sigma 0.3 to 2.5 px, and in 1 of 4 a slight motion blur
    3 to 9 px long at any angle (a hand-held camera).
    """
    sigma = _draw(rng, 0.3, 2.5, strength) * px
    out = cv2.GaussianBlur(img, (0, 0), max(sigma, 0.1))
    if rng.random() < 0.25:
        length = max(1, int(round(_draw(rng, 3, 9, strength) * px)))
        kernel = np.zeros((2 * length + 1, 2 * length + 1), np.float32)
        angle = rng.uniform(0, np.pi)
        for t in np.linspace(-length, length, 4 * length + 1):
            kernel[int(round(length + t * np.sin(angle))), int(round(length + t * np.cos(angle)))] = 1
        out = cv2.filter2D(out, -1, kernel / kernel.sum())
    return out


def grain(img: np.ndarray, rng: Rng, px: float, strength: float = 1.0) -> np.ndarray:
    """Film grain: noise of standard deviation 0.01 to 0.08 (of the full range), in clumps 0.6 to 2.5 px across,
    strongest in the midtones (silver grain shows least in the paper's white and the deepest blacks).
    """
    amount = _draw(rng, 0.01, 0.08, strength)
    size = _draw(rng, 0.6, 2.5, strength) * px
    h, w = img.shape[:2]
    noise: np.ndarray = rng.standard_normal((h, w)).astype(np.float32)
    if size > 0.7:
        noise = np.asarray(cv2.GaussianBlur(noise, (0, 0), size / 2), np.float32)
        noise = noise / max(float(noise.std()), 1e-6)
    y = img.mean(axis=2, keepdims=True)
    return img + amount * noise[..., None] * (0.4 + 2.4 * y * (1 - y))


def halftone(img: np.ndarray, rng: Rng, px: float, strength: float = 1.0) -> np.ndarray:
    """A printed halftone screen (newspapers, magazines): dots on a grid of period 3 to 7 px at 45 degrees
    (15 to 75 in a tenth of prints), seen through the scanner's softness.
    """
    period = max(2.0, rng.uniform(3, 7) * px)
    angle = np.deg2rad(45 if rng.random() < 0.9 else rng.uniform(15, 75))
    h, w = img.shape[:2]
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    u = (xx * np.cos(angle) + yy * np.sin(angle)) * (2 * np.pi / period)
    v = (-xx * np.sin(angle) + yy * np.cos(angle)) * (2 * np.pi / period)
    screen = (np.cos(u) * np.cos(v) + 1) / 2  # 0..1
    y = img.mean(axis=2)
    ink = (y > screen).astype(np.float32)
    ink = cv2.GaussianBlur(ink, (0, 0), period / 3)
    mix = _draw(rng, 0.5, 1.0, strength)
    return img * (1 - mix) + ink[..., None] * mix


def fade(img: np.ndarray, rng: Rng, px: float, strength: float = 1.0) -> np.ndarray:
    """A faded print: blacks lifted by 0 to 0.25, highlights pulled down by 0 to 0.15, and a mid-tone gamma of
    0.8 to 1.25 (an over- or under-developed print).
    """
    black = _draw(rng, 0.0, 0.25, strength)
    white = 1.0 - _draw(rng, 0.0, 0.15, strength)
    gamma = float(np.exp(rng.uniform(-1, 1) * strength * np.log(1.25)))
    return black + (white - black) * np.clip(img, 0, 1) ** gamma


def tone(img: np.ndarray, rng: Rng, px: float, strength: float = 1.0) -> np.ndarray:
    """Toning: the monochrome print given one of ``TONES`` at 0.3 to 1.0 of its strength; the file has three
    channels while the photo has one colour.
    """
    name = list(TONES)[int(rng.integers(0, len(TONES)))]
    a, b = TONES[name]
    k = _draw(rng, 0.3, 1.0, strength)
    L = lightness(np.clip(img * 255 + 0.5, 0, 255).astype(np.uint8))
    weight = np.clip(4 * (L / 100) * (1 - L / 100), 0, 1)  # midtones carry the tone
    lab = np.stack([L, a * k * weight, b * k * weight], axis=-1).astype(np.float32)
    return lab_to_rgb(lab)


def exposure(img: np.ndarray, rng: Rng, px: float, strength: float = 1.0) -> np.ndarray:
    """Uneven exposure and vignetting: a linear light falloff of up to 0.2 across the print in any direction, and
    corners darkened by 0 to 0.5 (an old lens, an uneven enlarger).
    """
    h, w = img.shape[:2]
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    xn, yn = xx / max(w - 1, 1) - 0.5, yy / max(h - 1, 1) - 0.5
    angle = rng.uniform(0, 2 * np.pi)
    slope = _draw(rng, 0.0, 0.2, strength)
    gain = 1 + slope * (xn * np.cos(angle) + yn * np.sin(angle)) * 2
    vignette = _draw(rng, 0.0, 0.5, strength)
    gain *= 1 - vignette * np.clip((xn**2 + yn**2) * 2, 0, 1) ** 1.5
    return img * gain[..., None]


def texture(img: np.ndarray, rng: Rng, px: float, strength: float = 1.0) -> np.ndarray:
    """Paper texture: a soft mottle 8 to 40 px across, multiplying the print by 1 +/- 0.01 to 0.04."""
    h, w = img.shape[:2]
    size = rng.uniform(8, 40) * px
    blurred = np.asarray(cv2.GaussianBlur(rng.standard_normal((h, w)).astype(np.float32), (0, 0), size / 2))
    mottle = blurred / max(float(blurred.std()), 1e-6)
    return img * (1 + _draw(rng, 0.01, 0.04, strength) * mottle[..., None])


def dust(img: np.ndarray, rng: Rng, px: float, strength: float = 1.0) -> np.ndarray:
    """Dust and specks: 0 to 60 round spots 0.5 to 2.5 px in radius, dark (dust on the negative prints white,
    so three in four are bright) or bright.
    """
    out = img.copy()
    h, w = img.shape[:2]
    for _ in range(int(_draw(rng, 0, 60, strength))):
        r = max(1, int(round(rng.uniform(0.5, 2.5) * px)))
        value = rng.uniform(0.85, 1.0) if rng.random() < 0.75 else rng.uniform(0.0, 0.15)
        cv2.circle(out, (int(rng.integers(0, w)), int(rng.integers(0, h))), r, (value,) * 3, -1, cv2.LINE_AA)
    return out


def scratches(img: np.ndarray, rng: Rng, px: float, strength: float = 1.0) -> np.ndarray:
    """Scratches: 1 to 4 thin lines (1 to 2 px) across much of the print, bright or dark, at 0.3 to 0.9 opacity."""
    out = img.copy()
    h, w = img.shape[:2]
    for _ in range(1 + int(_draw(rng, 0, 3, strength))):
        layer = np.zeros((h, w), np.float32)
        x0, x1 = rng.integers(0, w, 2)
        y0, y1 = (0, h - 1) if rng.random() < 0.7 else tuple(rng.integers(0, h, 2))
        cv2.line(layer, (int(x0), int(y0)), (int(x1), int(y1)), 1.0, max(1, int(round(rng.uniform(1, 2) * px))),
                 cv2.LINE_AA)
        alpha = (layer * _draw(rng, 0.3, 0.9, strength))[..., None]
        out = out * (1 - alpha) + alpha * (0.95 if rng.random() < 0.6 else 0.05)
    return out


def creases(img: np.ndarray, rng: Rng, px: float, strength: float = 1.0) -> np.ndarray:
    """A crease: a soft line across the print, 3 to 10 px wide, lighter (cracked emulsion) with a shaded edge."""
    h, w = img.shape[:2]
    layer: np.ndarray = np.zeros((h, w), np.float32)
    p0 = (int(rng.integers(0, w)), 0)
    p1 = (int(rng.integers(0, w)), h - 1)
    if rng.random() < 0.5:
        p0, p1 = (0, int(rng.integers(0, h))), (w - 1, int(rng.integers(0, h)))
    width = max(1, int(round(rng.uniform(3, 10) * px)))
    cv2.line(layer, p0, p1, 1.0, width, cv2.LINE_AA)
    layer = cv2.GaussianBlur(layer, (0, 0), width / 2)
    shade = np.roll(layer, max(1, width // 2), axis=1)
    amount = _draw(rng, 0.1, 0.4, strength)
    return img + amount * (layer - 0.6 * shade)[..., None]


def resample(img: np.ndarray, rng: Rng, px: float, strength: float = 1.0) -> np.ndarray:
    """A small or old scan: down by 1 to 3 times, then up to the size again (area down, bilinear or bicubic up)."""
    h, w = img.shape[:2]
    factor = 1 + _draw(rng, 0.0, 2.0, strength)
    small = (max(1, int(w / factor)), max(1, int(h / factor)))
    down = cv2.resize(img, small, interpolation=cv2.INTER_AREA)
    return cv2.resize(down, (w, h), interpolation=cv2.INTER_CUBIC if rng.random() < 0.5 else cv2.INTER_LINEAR)


def jpeg(img: np.ndarray, rng: Rng, px: float, strength: float = 1.0) -> np.ndarray:
    """JPEG at quality 90 down to 30 (a scan saved for the web, or saved again)."""
    quality = int(round(90 - _draw(rng, 0.0, 60.0, strength)))
    rgb = np.clip(img * 255 + 0.5, 0, 255).astype(np.uint8)
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, quality])
    assert ok
    decoded = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    assert decoded is not None
    return cv2.cvtColor(decoded, cv2.COLOR_BGR2RGB).astype(np.float32) / 255.0


STEPS: dict[str, Callable[..., np.ndarray]] = {
    "soften": soften, "grain": grain, "halftone": halftone, "fade": fade, "tone": tone, "exposure": exposure,
    "texture": texture, "dust": dust, "scratches": scratches, "creases": creases, "resample": resample,
    "jpeg": jpeg}


def degrade(rgb: np.ndarray, rng: Rng, settings: DegradeSettings = DegradeSettings(),
            px: float | None = None) -> tuple[np.ndarray, list[str]]:
    """An old print's scan of ``rgb`` (H x W x 3 uint8): H x W x 3 uint8, monochrome or toned, and the steps taken.

    The generator decides everything: seed it per photo for a fixed test set, per crop for training. ``px``: how
    many of this image's pixels a pixel of the photo at 1024 px is (default: this image is the whole photo; a
    training crop passes its own, so a crop's grain and blur are those of the photo it was cut from).
    """
    h, w = rgb.shape[:2]
    px = max(h, w) / 1024.0 if px is None else px
    L = lightness(rgb)
    img = np.repeat(lab_to_rgb(np.stack([L, np.zeros_like(L), np.zeros_like(L)], -1))[..., :1], 3, axis=2)
    taken = []
    for name in settings.order:
        if settings.strength > 0 and rng.random() < getattr(settings, name):
            img = np.clip(STEPS[name](img.astype(np.float32), rng, px, settings.strength), 0.0, 1.0)
            taken.append(name)
    return np.clip(img * 255 + 0.5, 0, 255).astype(np.uint8), taken
