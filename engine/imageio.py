"""Decoding any photo a person may have, and writing outputs atomically.

Every failure is an ``ImageError`` with a one-line reason; nothing here prints.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
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
    """Writing failed for a reason no other photo will escape (disk full, read-only folder).

    ``errno`` is the operating system's error number (``errno.ENOSPC``, ``errno.EROFS``...) or None.
    """

    def __init__(self, message: str, errno: int | None = None) -> None:
        super().__init__(message)
        self.errno = errno

    @property
    def whole_disk(self) -> bool:
        """Full or read-only: no other photo can be written either (unlike one unwritable folder)."""
        return self.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS)


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
    """Pillow reads 48/64-bit PNG and TIFF as 8-bit; OpenCV keeps all 16 bits.

    Read through numpy: ``cv2.imread`` cannot open names that are not valid UTF-8.
    """
    data = cv2.imdecode(np.fromfile(path, dtype=np.uint8), cv2.IMREAD_UNCHANGED | cv2.IMREAD_IGNORE_ORIENTATION)
    if data is None or data.dtype != np.uint16 or data.ndim != 3:
        return None
    code = cv2.COLOR_BGRA2RGBA if data.shape[2] == 4 else cv2.COLOR_BGR2RGB
    return cv2.cvtColor(data, code)


def decode(path: Path, max_pixels: int = MAX_PIXELS) -> DecodedImage:
    """Read one photo, upright. Any failure is an ``ImageError`` with a one-line reason.

    The header's dimensions are checked against ``max_pixels`` before any pixel is allocated.
    """
    path = Path(path)
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            # A pipe would block forever, a device would never end.
            raise ImageError("not a regular file (a folder, pipe, device or socket)")
        if st.st_size == 0:
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
                im = ImageOps.exif_transpose(im) if orientation != 1 else im  # type: ignore[assignment]
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
    except MemoryError:
        raise ImageError("not enough memory to decode this photo") from None
    except OSError as err:
        if err.errno in (errno.EIO, errno.ELOOP, errno.ENAMETOOLONG, errno.ENXIO, errno.ESTALE):
            raise ImageError(f"unreadable file ({short_reason(err)})") from None
        raise ImageError(f"truncated or corrupt image ({short_reason(err)})") from None
    except Exception as err:  # noqa: BLE001 - damaged files make Pillow raise almost anything
        raise ImageError(f"truncated or corrupt image ({short_reason(err)})") from None
    try:
        colour = pixels.ndim == 3 and has_colour(pixels)
    except (cv2.error, MemoryError) as err:
        raise ImageError(f"could not read the colours ({short_reason(err)})") from None
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


def short_reason(err: BaseException, limit: int = 120) -> str:
    """An exception as a one-line reason for the user: its message, or its type when it has none."""
    return one_line(str(err), limit) or type(err).__name__


def one_line(text: str, limit: int = 200) -> str:
    """The first non-empty line of ``text``, control characters escaped, at most ``limit`` characters."""
    for line in str(text).splitlines():
        if line.strip():
            line = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in line.strip())
            return line if len(line) <= limit else line[: limit - 1] + "\u2026"
    return ""


def write_error(err: OSError, what: str = "the output") -> ImageError:
    """The ImageError for an OSError met while writing: ``OutputUnwritable`` where no photo can escape it."""
    code = err.errno
    if code in (errno.ENOSPC, errno.EDQUOT):
        return OutputUnwritable(f"disk full: cannot write {what}", code)
    if code == errno.EROFS:
        return OutputUnwritable("output folder is on a read-only disk", code)
    if code in (errno.EACCES, errno.EPERM):
        return OutputUnwritable(f"output folder is not writable ({os.strerror(code)})", code)
    return ImageError(f"could not write {what} ({short_reason(err)})")


def output_extension(source: Path, choice: str) -> str:
    if choice == "keep":
        ext = source.suffix.lower()
        return ext if ext in IMAGE_EXTENSIONS else ".png"
    if choice not in FORMATS:
        raise ValueError(f"unknown format {choice!r}: use keep, {', '.join(FORMATS)}")
    return FORMATS[choice]


_NAME_MAX = 255  # bytes in one file name on every common file system


def partial_name(final: Path) -> Path:
    """A hidden temporary name next to ``final``: ``.NAME.PID-RANDOM.colorizer-partial``.

    The writer's process id lets ``clean_partials`` leave a running writer's files alone.
    The name is shortened where needed so that it fits where ``final`` fits.
    """
    tag = f".{os.getpid()}-{secrets.token_hex(4)}{PARTIAL_MARK}"
    name = final.name
    while name and len(os.fsencode(f".{name}{tag}")) > _NAME_MAX:
        name = name[:-1]
    return final.with_name(f".{name}{tag}")


def _writer_alive(name: str) -> bool:
    """Whether the process that wrote this temporary file still runs (and is not us)."""
    stem = name[: -len(PARTIAL_MARK)]
    pid_part = stem.rsplit(".", 1)[-1].split("-", 1)[0]
    if not pid_part.isdigit():
        return False  # an older name without a process id
    pid = int(pid_part)
    if pid == os.getpid() or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it runs, as another user
        return True
    return True


def clean_partials(folder: Path) -> int:
    """Delete temporary files a killed run left behind; returns how many.

    Files of a writer that still runs (another batch writing into the same folder) are kept.
    """
    removed = 0
    if not os.path.isdir(folder):
        return 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            if name.endswith(PARTIAL_MARK) and not _writer_alive(name):
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
        raise write_error(err) from None
    except ImageError:
        _unlink_quietly(tmp)
        raise
    except MemoryError:
        _unlink_quietly(tmp)
        raise ImageError("not enough memory to write the output") from None
    except Exception as err:  # noqa: BLE001 - an encoder refusing (e.g. a size over its limit)
        _unlink_quietly(tmp)
        raise ImageError(f"could not encode the output as {ext} ({short_reason(err)})") from None
    except BaseException:
        _unlink_quietly(tmp)
        raise


def _unlink_quietly(p: Path) -> None:
    try:
        os.unlink(p)
    except OSError:
        pass
