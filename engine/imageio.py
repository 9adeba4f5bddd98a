"""Decoding any photo a person may have, and writing outputs atomically.

Every failure is an ``ImageError`` with a one-line reason; nothing here prints.
"""

from __future__ import annotations

import errno
import os
import secrets
import warnings
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
from PIL import Image, ImageFile, ImageOps, UnidentifiedImageError

IMAGE_EXTENSIONS = frozenset({".jpg", ".jpeg", ".png", ".tif", ".tiff", ".webp", ".bmp"})
FORMATS = {"png": ".png", "jpg": ".jpg", "webp": ".webp", "tiff": ".tif"}
PIL_FORMAT = {".jpg": "JPEG", ".jpeg": "JPEG", ".png": "PNG", ".webp": "WEBP", ".tif": "TIFF", ".tiff": "TIFF",
              ".bmp": "BMP"}
MAX_PIXELS = 200_000_000  # a header claiming more is refused before anything is allocated
PARTIAL_MARK = ".colorizer-partial"  # temporary outputs carry this in their name until renamed

Image.MAX_IMAGE_PIXELS = None  # we check the size ourselves, with a clearer message
ImageFile.LOAD_TRUNCATED_IMAGES = False


class ImageError(Exception):
    """A photo that cannot be read or written; the message is one line for the user."""


class OutputUnwritable(ImageError):
    """Writing failed for a reason no other photo will escape (disk full, read-only folder)."""


@dataclass
class DecodedImage:
    """An upright photo. ``pixels``: H x W grey or H x W x 3 RGB, uint8 or uint16."""

    pixels: np.ndarray
    alpha: np.ndarray | None
    is_colour: bool
    exif: bytes | None
    icc: bytes | None
    format: str

    @property
    def size(self) -> tuple[int, int]:
        return self.pixels.shape[1], self.pixels.shape[0]


def has_colour(rgb: np.ndarray) -> bool:
    """Real colour, not a grey or toned (sepia, cyanotype) print: ab must vary across the photo."""
    small = cv2.resize(rgb, (64, 64), interpolation=cv2.INTER_AREA) if min(rgb.shape[:2]) > 64 else rgb
    f = small.astype(np.float32) / (65535.0 if rgb.dtype == np.uint16 else 255.0)
    lab = cv2.cvtColor(f, cv2.COLOR_RGB2Lab)
    return float(np.sqrt(lab[..., 1].var() + lab[..., 2].var())) > 6.0


def _sixteen_bit_rgb(path: Path) -> np.ndarray | None:
    """Pillow reads 48/64-bit PNG and TIFF as 8-bit; OpenCV keeps all 16 bits."""
    data = cv2.imread(str(path), cv2.IMREAD_UNCHANGED | cv2.IMREAD_IGNORE_ORIENTATION)
    if data is None or data.dtype != np.uint16 or data.ndim != 3:
        return None
    code = cv2.COLOR_BGRA2RGBA if data.shape[2] == 4 else cv2.COLOR_BGR2RGB
    return cv2.cvtColor(data, code)


def decode(path: Path, max_pixels: int = MAX_PIXELS) -> DecodedImage:
    path = Path(path)
    try:
        if path.stat().st_size == 0:
            raise ImageError("empty file")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Image.open(path) as im:
                w, h = im.size
                if w <= 0 or h <= 0:
                    raise ImageError(f"invalid dimensions {w}x{h}")
                if w * h > max_pixels:
                    raise ImageError(f"image too large: {w}x{h} ({w * h / 1e6:.0f} MP, limit {max_pixels / 1e6:.0f} MP)")
                fmt = im.format or "?"
                rawmode = im.tile[0][3] if im.tile and isinstance(im.tile[0][3], str) else ""
                wide = fmt in ("PNG", "TIFF") and im.mode in ("RGB", "RGBA") and ";16" in str(rawmode)
                im.load()
                exif = im.info.get("exif")
                icc = im.info.get("icc_profile")
                orientation = im.getexif().get(0x0112, 1)
                im = ImageOps.exif_transpose(im) if orientation != 1 else im
                if orientation != 1:
                    exif = _exif_upright(im)
                pixels, alpha = _to_array(im)
        if wide:
            deep = _sixteen_bit_rgb(path)
            if deep is not None and deep.shape[:2] == pixels.shape[:2]:
                pixels, alpha = (deep[..., :3], deep[..., 3]) if deep.shape[2] == 4 else (deep, alpha)
    except ImageError:
        raise
    except UnidentifiedImageError:
        raise ImageError("not an image, or a format this app cannot read") from None
    except PermissionError:
        raise ImageError("permission denied") from None
    except FileNotFoundError:
        raise ImageError("file not found") from None
    except IsADirectoryError:
        raise ImageError("is a folder, not a file") from None
    except (OSError, SyntaxError, ValueError, EOFError, MemoryError, Image.DecompressionBombError) as err:
        raise ImageError(f"truncated or corrupt image ({_short(err)})") from None
    colour = pixels.ndim == 3 and has_colour(pixels)
    return DecodedImage(np.ascontiguousarray(pixels), alpha, colour, exif, icc, fmt)


def _exif_upright(im: Image.Image) -> bytes | None:
    exif = im.getexif()
    exif[0x0112] = 1
    try:
        return exif.tobytes()
    except Exception:
        return None


def _to_array(im: Image.Image) -> tuple[np.ndarray, np.ndarray | None]:
    mode = im.mode
    if mode in ("I;16", "I;16L", "I;16B", "I;16N"):
        return np.asarray(im, dtype=np.uint16).copy(), None
    if mode == "I":
        return np.clip(np.asarray(im), 0, 65535).astype(np.uint16), None
    if mode == "F":
        a = np.asarray(im, dtype=np.float32)
        hi = 1.0 if a.max() <= 1.0 else 255.0 if a.max() <= 255.0 else 65535.0
        return np.clip(a / hi * 255.0, 0, 255).astype(np.uint8), None
    if mode == "1":
        im = im.convert("L")
        mode = "L"
    if mode == "P":
        im = im.convert("RGBA" if "transparency" in im.info else "RGB")
        mode = im.mode
    if mode == "PA":
        im = im.convert("RGBA")
        mode = "RGBA"
    if mode == "L":
        return np.asarray(im).copy(), None
    if mode == "LA":
        a = np.asarray(im)
        return a[..., 0].copy(), a[..., 1].copy()
    if mode == "RGBA":
        a = np.asarray(im)
        return a[..., :3].copy(), a[..., 3].copy()
    if mode != "RGB":
        im = im.convert("RGB")  # CMYK, YCbCr, LAB, HSV...
    return np.asarray(im).copy(), None


def _short(err: BaseException) -> str:
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return text[:120]


def output_extension(source: Path, choice: str) -> str:
    if choice == "keep":
        ext = source.suffix.lower()
        return ext if ext in IMAGE_EXTENSIONS else ".png"
    if choice not in FORMATS:
        raise ValueError(f"unknown format {choice!r}: use keep, {', '.join(FORMATS)}")
    return FORMATS[choice]


def partial_name(final: Path) -> Path:
    return final.with_name(f".{final.name}.{secrets.token_hex(4)}{PARTIAL_MARK}")


def clean_partials(folder: Path) -> int:
    """Delete temporary files a killed run left behind; returns how many."""
    removed = 0
    if not folder.is_dir():
        return 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            if name.endswith(PARTIAL_MARK):
                try:
                    os.unlink(os.path.join(root, name))
                    removed += 1
                except OSError:
                    pass
    return removed


def encode(final: Path, rgb: np.ndarray, *, quality: int = 92, alpha: np.ndarray | None = None,
           exif: bytes | None = None, icc: bytes | None = None) -> None:
    """Write ``rgb`` (H x W x 3 uint8/uint16) to ``final`` via a temporary name and a rename.

    A crash, kill or cancel leaves either the complete file or no file under ``final``.
    """
    ext = final.suffix.lower()
    tmp = partial_name(final)
    try:
        if rgb.dtype == np.uint16 and ext in (".png", ".tif", ".tiff"):
            data = np.dstack([rgb, alpha]) if alpha is not None and alpha.dtype == np.uint16 else rgb
            bgr = cv2.cvtColor(data, cv2.COLOR_RGBA2BGRA if data.shape[2] == 4 else cv2.COLOR_RGB2BGR)
            ok, buf = cv2.imencode(ext, bgr)
            if not ok:
                raise ImageError(f"could not encode {ext}")
            with open(tmp, "wb") as f:
                f.write(buf.tobytes())
                f.flush()
                os.fsync(f.fileno())
        else:
            if rgb.dtype == np.uint16:
                rgb = (rgb >> 8).astype(np.uint8)
            if alpha is not None and alpha.dtype == np.uint16:
                alpha = (alpha >> 8).astype(np.uint8)
            im = Image.fromarray(rgb, "RGB")
            if alpha is not None and ext in (".png", ".webp", ".tif", ".tiff"):
                im.putalpha(Image.fromarray(alpha, "L"))
            kwargs: dict = {}
            if ext in (".jpg", ".jpeg", ".webp"):
                kwargs["quality"] = int(quality)
            if exif and ext in (".jpg", ".jpeg", ".webp", ".png", ".tif", ".tiff"):
                kwargs["exif"] = exif
            if icc:
                kwargs["icc_profile"] = icc
            with open(tmp, "wb") as f:
                im.save(f, format=PIL_FORMAT[ext], **kwargs)
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, final)
    except OSError as err:
        _unlink_quietly(tmp)
        if err.errno == errno.ENOSPC:
            raise OutputUnwritable("disk full: cannot write the output") from None
        if err.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            raise OutputUnwritable(f"output folder is not writable ({os.strerror(err.errno)})") from None
        raise ImageError(f"could not write the output ({_short(err)})") from None
    except BaseException:
        _unlink_quietly(tmp)
        raise


def _unlink_quietly(p: Path) -> None:
    try:
        os.unlink(p)
    except OSError:
        pass
