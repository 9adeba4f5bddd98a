"""Decoding any photo a person may have, and writing outputs atomically.

Every failure is an ``ImageError`` with a one-line reason; nothing here prints.
"""

from __future__ import annotations

import errno
import os
import stat
import struct
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
from PIL import Image, ImageFile, PngImagePlugin, UnidentifiedImageError

from . import atomic
from .messages import short_reason
from .partials import partial_name

IMAGE_EXTENSIONS = frozenset({".jpg", ".jpeg", ".png", ".tif", ".tiff", ".webp", ".bmp", ".gif", ".jp2", ".j2k",
                              ".jpf", ".jpx"})
FORMATS = {"png": ".png", "jpg": ".jpg", "webp": ".webp", "tiff": ".tif"}
# A colorized GIF would be dithered to 256 colours: with the format kept it is written as PNG.
KEPT_AS = {".gif": ".png"}
# TIFF compressions Pillow writes for any RGB photo: a source's own is kept (an LZW scan stays LZW).
TIFF_COMPRESSIONS = frozenset({"tiff_lzw", "tiff_adobe_deflate", "tiff_deflate", "packbits", "raw"})
CV_TIFF_COMPRESSION = {"raw": 1, "tiff_lzw": 5, "tiff_adobe_deflate": 8, "tiff_deflate": 32946, "packbits": 32773}
PIL_FORMAT = {".jpg": "JPEG", ".jpeg": "JPEG", ".png": "PNG", ".webp": "WEBP", ".tif": "TIFF", ".tiff": "TIFF",
              ".jp2": "JPEG2000", ".j2k": "JPEG2000", ".jpf": "JPEG2000", ".jpx": "JPEG2000",
              ".bmp": "BMP"}
MAX_PIXELS = 200_000_000  # a header claiming more is refused before anything is allocated
MARK = "Colorizer"  # in each JPEG and 8-bit PNG written: what tells an earlier run's output beside the photos

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
    note: str = ""  # what the user should know, e.g. only the first frame of an animated GIF was read
    compression: str | None = None  # a TIFF's own compression (Pillow's name), kept when written

    @property
    def size(self) -> tuple[int, int]:
        return self.pixels.shape[1], self.pixels.shape[0]


def has_colour(rgb: np.ndarray) -> bool:
    """Real colour, not a grey or toned (sepia, cyanotype) print: ab must vary across the photo."""
    small = cv2.resize(rgb, (64, 64), interpolation=cv2.INTER_AREA) if min(rgb.shape[:2]) > 64 else rgb
    f = small.astype(np.float32) / (65535.0 if rgb.dtype == np.uint16 else 255.0)
    lab = cv2.cvtColor(f, cv2.COLOR_RGB2Lab)
    return float(np.sqrt(lab[..., 1].var() + lab[..., 2].var())) > 6.0


def made_here(path: Path) -> bool:
    """Whether the file carries the mark ``encode`` writes (a JPEG's comment, a PNG's Software text): an output of
    this app, told from a photo by its header alone. False for other formats and for unreadable files.
    """
    try:
        with warnings.catch_warnings(), open(path, "rb") as fh, Image.open(fh) as im:
            warnings.simplefilter("ignore")
            return _marked(im)
    except (OSError, ValueError, UnidentifiedImageError, Image.DecompressionBombError):
        return False


def _marked(im: Image.Image) -> bool:
    return im.info.get("comment") == MARK.encode() or im.info.get("Software") == MARK


def _sixteen_bit_rgb(path: Path) -> np.ndarray | None:
    """Pillow reads 48/64-bit PNG and TIFF as 8-bit; OpenCV keeps all 16 bits. As stored, not turned upright.

    Read through numpy: ``cv2.imread`` cannot open names that are not valid UTF-8.
    """
    data = cv2.imdecode(np.fromfile(path, dtype=np.uint8), cv2.IMREAD_UNCHANGED | cv2.IMREAD_IGNORE_ORIENTATION)
    if data is None or data.dtype != np.uint16 or data.ndim != 3:
        return None
    code = cv2.COLOR_BGRA2RGBA if data.shape[2] == 4 else cv2.COLOR_BGR2RGB
    return cv2.cvtColor(data, code)


def _rawmode(im: ImageFile.ImageFile) -> str:
    """The first tile's raw mode (``"RGB;16B"``); a string for PNG, the first item of a tuple for TIFF."""
    if not im.tile:
        return ""
    args = im.tile[0][3]
    raw = args[0] if isinstance(args, tuple) and args else args
    return raw if isinstance(raw, str) else ""


def _narrowed_to_8_bits(im: ImageFile.ImageFile) -> bool:
    """A PNG or TIFF with 16 bits a sample in a mode Pillow keeps only 8 bits of (RGB, RGBA, grey + alpha).

    Asked of the file (PNG's raw mode, TIFF's BitsPerSample), not of Pillow's tile layout alone, which
    has changed between versions. 16-bit grey without alpha (``I;16``) is kept whole by Pillow.
    """
    if im.format not in ("PNG", "TIFF") or im.mode not in ("RGB", "RGBA", "LA"):
        return False
    if ";16" in _rawmode(im):
        return True
    if im.format == "TIFF":
        bits = getattr(im, "tag_v2", {}).get(258)
        bits = bits if isinstance(bits, tuple) else (bits,)
        return bool(bits) and all(isinstance(b, int) and b == 16 for b in bits)
    return False


def _orientation(im: Image.Image) -> int:
    """The EXIF (or XMP) orientation, 1..8; anything else (missing, damaged) reads as 1, upright."""
    value = im.getexif().get(0x0112, 1)
    return value if isinstance(value, int) and 1 <= value <= 8 else 1


def upright(a: np.ndarray, orientation: int) -> np.ndarray:
    """Turn an array as stored upright for its EXIF orientation (1..8), as ``ImageOps.exif_transpose`` would.

    Done on the array, not the Pillow image, so 8- and 16-bit pixels and their alpha turn identically.
    """
    if orientation == 2:
        return a[:, ::-1]
    if orientation == 3:
        return a[::-1, ::-1]
    if orientation == 4:
        return a[::-1]
    if orientation == 5:
        return a.swapaxes(0, 1)
    if orientation == 6:
        return np.rot90(a, -1)
    if orientation == 7:
        return np.rot90(a, 2).swapaxes(0, 1)
    if orientation == 8:
        return np.rot90(a, 1)
    return a


def _turned_like(deep: np.ndarray, orientation: int, reference: np.ndarray) -> np.ndarray | None:
    """OpenCV's 16-bit pixels turned as Pillow's upright 8-bit ``reference``, or None where they disagree.

    OpenCV ignores the EXIF orientation when told to, but turns a TIFF by its own Orientation tag
    anyway (OpenCV 5): which one happened is read off the pixels, whose high bytes are Pillow's.
    """
    for candidate in (upright(deep, orientation), deep):
        if candidate.shape[:2] != reference.shape[:2]:
            continue
        mine = candidate[..., :3] if reference.ndim == 3 else candidate[..., 0]
        step = max(1, int(np.sqrt(reference.shape[0] * reference.shape[1] / 65536)))  # a sample is enough
        diff = (mine[::step, ::step] >> 8).astype(np.int16) - reference[::step, ::step].astype(np.int16)
        if diff.size and int(np.abs(diff).max()) <= 1:
            return candidate
    return None


# What a damaged or hostile file makes the decoders raise. Anything else (TypeError, AttributeError,
# NameError...) is a bug in this program and propagates, to be logged with its traceback.
_DAMAGE_ERRORS: tuple[type[BaseException], ...] = (
    ValueError, SyntaxError, EOFError, struct.error, zlib.error, cv2.error, Image.DecompressionBombError,
)
# What a decoder's own code raises on data its parser did not expect: counted as damage only when raised
# inside the decoder (Pillow), never in this module.
_DECODER_SLIPS: tuple[type[BaseException], ...] = (LookupError, TypeError, ArithmeticError, AssertionError)
_DECODER_DIRS = (os.path.dirname(Image.__file__) + os.sep,)


def _raised_by_decoder(err: BaseException) -> bool:
    tb = err.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_filename.startswith(_DECODER_DIRS)


def _check_header(im: Image.Image, max_pixels: int, refuse_outputs: bool) -> None:
    """Before any pixel is read: sizes no photo has, or more pixels than allowed; an output of this app."""
    w, h = im.size
    if w <= 0 or h <= 0:
        raise ImageError(f"invalid dimensions {w}x{h}")
    if w * h > max_pixels:
        raise ImageError(f"image too large: {w}x{h} ({w * h / 1e6:.0f} MP, limit {max_pixels / 1e6:.0f} MP)")
    if refuse_outputs and _marked(im):
        raise MadeHere("a colour version this app wrote (it carries the app's mark): left out; colorize the photo "
                       "it was made from")


class MadeHere(ImageError):
    """The file is an output of this app (it carries ``MARK``): a colour version of a photo, not a photo to colour."""


def decode(path: Path, max_pixels: int = MAX_PIXELS, refuse_outputs: bool = False) -> DecodedImage:
    """Read one photo, upright. A damaged or unreadable file is an ``ImageError`` with a one-line reason.

    The header's dimensions are checked against ``max_pixels`` before any pixel is allocated.
    16-bit PNG and TIFF stay 16-bit; the EXIF orientation is applied to the array at either depth.
    ``refuse_outputs``: an output of this app is a ``MadeHere``, told from its header before its pixels are read.
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
            # Through a file object, not the path: Pillow 13 memory-maps an uncompressed TIFF opened by path
            # and then scrambles grey ones with orientations 5 to 8 (it maps them at the turned size).
            with open(path, "rb") as fh, Image.open(fh) as im:
                _check_header(im, max_pixels, refuse_outputs)
                fmt = im.format or "?"
                frames = int(getattr(im, "n_frames", 1) or 1)
                note = (f"{'animated GIF' if fmt == 'GIF' else f'multi-page {fmt}'}: colorized its first "
                        f"{'frame' if fmt == 'GIF' else 'page'} of {frames}") if frames > 1 else ""
                compression = im.info.get("compression") if fmt == "TIFF" else None
                wide = _narrowed_to_8_bits(im)
                grey_alpha = im.mode == "LA" or _rawmode(im).startswith("LA")
                before = _orientation(im)
                im.load()
                # Pillow turns some formats upright while loading (TIFF in Pillow 13) and then drops the tag:
                # ``pending`` is what its pixels still need, ``orientation`` what the file says.
                pending = _orientation(im)
                orientation = pending if pending != 1 else before
                exif = im.info.get("exif")
                icc = im.info.get("icc_profile")
                if orientation != 1 and exif is not None:
                    exif = _exif_upright(im)
                pixels, alpha = _to_array(im)
                pixels = upright(pixels, pending)
                alpha = upright(alpha, pending) if alpha is not None else None
                deep = _sixteen_bit_rgb(path) if wide else None
                deep = _turned_like(deep, orientation, pixels) if deep is not None else None
                if deep is not None:
                    pixels, alpha = (deep[..., :3], deep[..., 3]) if deep.shape[2] == 4 else (deep, None)
                    if grey_alpha:
                        pixels = pixels[..., 0]
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
    except _DAMAGE_ERRORS as err:
        raise ImageError(f"truncated or corrupt image ({short_reason(err)})") from None
    except _DECODER_SLIPS as err:
        if not _raised_by_decoder(err):
            raise
        raise ImageError(f"truncated or corrupt image ({short_reason(err)})") from None
    try:
        colour = pixels.ndim == 3 and has_colour(pixels)
    except (cv2.error, MemoryError) as err:
        raise ImageError(f"could not read the colours ({short_reason(err)})") from None
    alpha = np.ascontiguousarray(alpha) if alpha is not None else None
    return DecodedImage(np.ascontiguousarray(pixels), alpha, colour, exif, icc, fmt, note,
                        compression if compression in TIFF_COMPRESSIONS else None)


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
    """The output's extension; ``keep`` keeps the source's as written (``IMG_0001.JPG`` stays ``.JPG``)."""
    if choice == "keep":
        ext = source.suffix
        if ext.lower() in KEPT_AS:
            return KEPT_AS[ext.lower()]
        return ext if ext.lower() in IMAGE_EXTENSIONS else ".png"
    if choice not in FORMATS:
        raise ValueError(f"unknown format {choice!r}: use keep, {', '.join(FORMATS)}")
    return FORMATS[choice]


def encode(final: Path, rgb: np.ndarray, *, quality: int = 92, alpha: np.ndarray | None = None,
           exif: bytes | None = None, icc: bytes | None = None, compression: str | None = None) -> None:
    """Write ``rgb`` (H x W x 3 uint8/uint16) to ``final`` via a temporary name, fsync and a rename.

    A crash, kill or cancel leaves either the complete file or no file under ``final``; the temporary
    name is ``partials.partial_name``'s, so ``partials.clean_partials`` finds what a killed run left.
    """
    ext = final.suffix.lower()
    tmp = partial_name(final)
    try:
        if rgb.dtype == np.uint16 and ext in (".png", ".tif", ".tiff"):
            if alpha is not None and alpha.dtype != np.uint16:
                alpha = alpha.astype(np.uint16) * 257
            data = np.dstack([rgb, alpha]) if alpha is not None else rgb
            bgr = cv2.cvtColor(data, cv2.COLOR_RGBA2BGRA if data.shape[2] == 4 else cv2.COLOR_RGB2BGR)
            params = [cv2.IMWRITE_TIFF_COMPRESSION, CV_TIFF_COMPRESSION[compression]] \
                if ext in (".tif", ".tiff") and compression in CV_TIFF_COMPRESSION else []
            ok, buf = cv2.imencode(ext, bgr, params)
            if not ok:
                raise ImageError(f"could not encode {ext}")
            atomic.write_bytes(final, buf.tobytes(), tmp=tmp)
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
            if ext in (".jpg", ".jpeg"):
                kwargs["comment"] = MARK.encode()
            elif ext == ".png":
                kwargs["pnginfo"] = PngImagePlugin.PngInfo()
                kwargs["pnginfo"].add_text("Software", MARK)
            if exif and ext in (".jpg", ".jpeg", ".webp", ".png", ".tif", ".tiff"):
                kwargs["exif"] = exif
            if compression and ext in (".tif", ".tiff"):
                kwargs["compression"] = compression
            if ext == ".j2k":
                kwargs["no_jp2"] = True  # a bare codestream, as the name says (written through a temporary name)
            if icc:
                kwargs["icc_profile"] = icc
            with atomic.atomic_write(final, tmp=tmp) as f:
                im.save(f, format=PIL_FORMAT[ext], **kwargs)
    except OSError as err:
        raise write_error(err) from None
    except ImageError:
        raise
    except MemoryError:
        raise ImageError("not enough memory to write the output") from None
    except Exception as err:  # noqa: BLE001 - an encoder refusing (e.g. a size over its limit)
        raise ImageError(f"could not encode the output as {ext} ({short_reason(err)})") from None
