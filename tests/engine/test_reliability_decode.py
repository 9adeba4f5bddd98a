"""Property: whatever bytes a file holds, ``decode`` returns a sane photo or raises ``ImageError``
with a one-line reason; never any other exception, never a hang.

Valid small PNG / JPEG / WebP / TIFF / BMP files (grey, colour, alpha, 16-bit) are mutated by byte
flips, overwrites, insertions, deletions and truncation. ``max_pixels`` is lowered to 4 MP so that
a mutated header claiming a large size is refused quickly instead of being decoded (the size check
itself is the same code path).
"""

from __future__ import annotations

import io
import os
import struct
import tempfile
import zlib
from pathlib import Path

import cv2
import numpy as np
import pytest
from helpers import colour_photo, grey_photo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image, ImageFile, ImageOps

from engine import imageio
from engine.imageio import DecodedImage, ImageError, decode


def _pil(im: Image.Image, fmt: str, **kw) -> bytes:
    b = io.BytesIO()
    im.save(b, fmt, **kw)
    return b.getvalue()


def _seeds() -> dict[str, tuple[str, bytes]]:
    g = Image.fromarray(grey_photo(12, 16, 1))
    c = Image.fromarray(colour_photo(12, 16, 2))
    la = Image.merge("LA", (g, g.transpose(Image.Transpose.FLIP_LEFT_RIGHT)))
    ok, png16 = cv2.imencode(".png", grey_photo(12, 16, 3).astype(np.uint16) * 257)
    ok2, tif16 = cv2.imencode(".tif", np.dstack([grey_photo(12, 16, 4).astype(np.uint16) * 257] * 3))
    assert ok and ok2
    exif = Image.Exif()
    exif[0x0112] = 6
    return {
        "grey png": (".png", _pil(g, "PNG")),
        "la png": (".png", _pil(la, "PNG")),
        "palette png": (".png", _pil(c.quantize(8), "PNG", transparency=0)),
        "16-bit png": (".png", png16.tobytes()),
        "jpeg": (".jpg", _pil(g, "JPEG", quality=80)),
        "exif jpeg": (".jpg", _pil(c, "JPEG", quality=80, exif=exif)),
        "cmyk jpeg": (".jpg", _pil(g.convert("CMYK"), "JPEG")),
        "webp": (".webp", _pil(c, "WEBP", quality=80)),
        "tiff": (".tif", _pil(g, "TIFF")),
        "48-bit tiff": (".tif", tif16.tobytes()),
        "bmp": (".bmp", _pil(c, "BMP")),
    }


SEEDS = _seeds()

mutation = st.one_of(
    st.tuples(st.just("flip"), st.floats(0, 1, exclude_max=True), st.integers(1, 255)),
    st.tuples(st.just("set"), st.floats(0, 1, exclude_max=True), st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("insert"), st.floats(0, 1), st.binary(min_size=1, max_size=64)),
    st.tuples(st.just("delete"), st.floats(0, 1, exclude_max=True), st.integers(1, 64)),
    st.tuples(st.just("truncate"), st.floats(0, 1), st.just(0)),
)


def mutate(data: bytes, ops: list[tuple]) -> bytes:
    b = bytearray(data)
    for kind, where, arg in ops:
        i = min(int(where * len(b)), max(len(b) - 1, 0))
        if kind == "flip" and b:
            b[i] ^= arg
        elif kind == "set" and b:
            b[i : i + len(arg)] = arg
        elif kind == "insert":
            b[i:i] = arg
        elif kind == "delete":
            del b[i : i + arg]
        elif kind == "truncate":
            del b[int(where * len(b)) :]
    return bytes(b)


@pytest.fixture(scope="module")
def scratch():
    with tempfile.TemporaryDirectory() as d:
        yield Path(d)


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.sampled_from(sorted(SEEDS)), ops=st.lists(mutation, min_size=1, max_size=4))
def test_decode_of_mutated_bytes_returns_a_sane_photo_or_a_one_line_image_error(scratch, seed, ops):
    ext, data = SEEDS[seed]
    path = scratch / f"mutated{ext}"
    path.write_bytes(mutate(data, ops))
    try:
        img = decode(path, max_pixels=4_000_000)
    except ImageError as err:
        text = str(err)
        assert text.strip() and "\n" not in text and "\r" not in text and len(text) < 300, text
        return
    assert isinstance(img, DecodedImage)
    p = img.pixels
    assert p.dtype in (np.uint8, np.uint16)
    assert p.ndim == 2 or (p.ndim == 3 and p.shape[2] == 3)
    assert p.shape[0] >= 1 and p.shape[1] >= 1 and p.shape[0] * p.shape[1] <= 4_000_000
    assert p.flags.c_contiguous
    if img.alpha is not None:
        assert img.alpha.shape == p.shape[:2]
    assert isinstance(img.is_colour, bool)


@pytest.mark.parametrize("seed", sorted(SEEDS))
def test_every_seed_decodes_unmutated(scratch, seed):
    ext, data = SEEDS[seed]
    path = scratch / f"seed{ext}"
    path.write_bytes(data)
    img = decode(path)
    assert img.size == ((12, 16) if seed == "exif jpeg" else (16, 12))  # EXIF orientation 6: upright


@pytest.mark.parametrize("seed", sorted(SEEDS))
def test_every_truncation_point_is_an_image_error_or_a_photo(scratch, seed):
    """Every prefix at a 7-byte stride (deterministic, complementing the random search)."""
    ext, data = SEEDS[seed]
    path = scratch / f"prefix{ext}"
    for n in range(0, len(data), 7):
        path.write_bytes(data[:n])
        try:
            decode(path, max_pixels=4_000_000)
        except ImageError as err:
            assert "\n" not in str(err) and str(err).strip()


# --- Bit depth and orientation ------------------------------------------------------------------
# Every EXIF orientation must come out upright, at 8 and 16 bits, grey and RGB, PNG and TIFF, with
# the input's bit depth kept. Each file stores an upright image U turned the way orientation o says
# it was stored; decoding must give U back exactly (lossless formats), in U's dtype.

H, W = 4, 6  # not square: orientations 5 to 8 swap the sides


def _upright_image(deep: bool, colour: bool) -> np.ndarray:
    """Every pixel distinct; 16-bit values whose low byte varies, so a detour through 8 bits shows."""
    v = np.arange(H * W, dtype=np.int64).reshape(H, W)
    if deep:
        v = v * 2711 + 300
        top = 65535
    else:
        v = v * 10 + 5
        top = 255
    dtype = np.uint16 if deep else np.uint8
    if not colour:
        return v.astype(dtype)
    return np.dstack([v, top - v, (v * 3) % (top + 1)]).astype(dtype)


def _stored(upright: np.ndarray, orientation: int) -> np.ndarray:
    """How a camera stores an upright image for this EXIF orientation (the inverse of turning it upright)."""
    return {
        1: lambda a: a,
        2: lambda a: a[:, ::-1],
        3: lambda a: a[::-1, ::-1],
        4: lambda a: a[::-1],
        5: lambda a: a.swapaxes(0, 1),
        6: lambda a: np.rot90(a, 1),  # stored turned 90 degrees anticlockwise: shown turned clockwise
        7: lambda a: np.rot90(a, 2).swapaxes(0, 1),
        8: lambda a: np.rot90(a, -1),
    }[orientation](upright).copy()


def _exif_tiff_bytes(orientation: int) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = orientation
    data = exif.tobytes()
    return data[6:] if data.startswith(b"Exif\x00\x00") else data


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _png_with_exif(png: bytes, orientation: int) -> bytes:
    """Insert an eXIf chunk right after IHDR (OpenCV cannot write one)."""
    assert png[12:16] == b"IHDR"
    end = 8 + 8 + 13 + 4
    return png[:end] + _png_chunk(b"eXIf", _exif_tiff_bytes(orientation)) + png[end:]


def _png16_grey_alpha(grey: np.ndarray, alpha: np.ndarray) -> bytes:
    """A 16-bit grey + alpha PNG, written by hand (OpenCV writes no 2-channel PNG, Pillow no 16-bit LA)."""
    h, w = grey.shape
    la = np.dstack([grey, alpha]).astype(">u2")
    raw = b"".join(b"\x00" + la[y].tobytes() for y in range(h))
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, 4, 0, 0, 0))
            + _png_chunk(b"IDAT", zlib.compress(raw)) + _png_chunk(b"IEND", b""))


def _tiff16(arr: np.ndarray, orientation: int) -> bytes:
    """An uncompressed 16-bit TIFF (grey, RGB or RGBA) with an Orientation tag, written by hand.

    Pillow cannot write 48/64-bit TIFF and OpenCV writes no orientation.
    """
    h, w = arr.shape[:2]
    spp = 1 if arr.ndim == 2 else arr.shape[2]
    pixels = np.ascontiguousarray(arr, dtype="<u2").tobytes()
    tags: list[tuple[int, int, list[int]]] = [  # (tag, type: 3 SHORT / 4 LONG, values)
        (256, 3, [w]), (257, 3, [h]), (258, 3, [16] * spp), (259, 3, [1]), (262, 3, [1 if spp == 1 else 2]),
        (273, 4, [0]), (274, 3, [orientation]), (277, 3, [spp]), (278, 3, [h]), (279, 4, [len(pixels)]),
        (284, 3, [1]),
    ]
    if spp == 4:
        tags.append((338, 3, [2]))  # ExtraSamples: unassociated alpha
    ifd_size = 2 + 12 * len(tags) + 4
    extra = bytearray()
    extra_at = 8 + ifd_size
    pixels_at = extra_at + (2 * spp if spp > 2 else 0)
    entries = b""
    for tag, kind, values in tags:
        if tag == 273:
            values = [pixels_at]
        fmt = "<" + ("H" if kind == 3 else "I") * len(values)
        packed = struct.pack(fmt, *values)
        if len(packed) <= 4:
            entries += struct.pack("<HHI", tag, kind, len(values)) + packed.ljust(4, b"\x00")
        else:
            entries += struct.pack("<HHII", tag, kind, len(values), extra_at + len(extra))
            extra += packed
    assert extra_at + len(extra) == pixels_at
    ifd = struct.pack("<H", len(tags)) + entries + struct.pack("<I", 0)
    return b"II*\x00" + struct.pack("<I", 8) + ifd + bytes(extra) + pixels


def _pillow_bytes(arr: np.ndarray, fmt: str, orientation: int, alpha: np.ndarray | None = None) -> bytes:
    im = Image.fromarray(arr)
    if alpha is not None:
        im.putalpha(Image.fromarray(alpha))
    exif = Image.Exif()
    exif[0x0112] = orientation
    return _pil(im, fmt, exif=exif)


def _oriented_file(stored: np.ndarray, ext: str, orientation: int, alpha: np.ndarray | None = None) -> bytes:
    """``stored`` (and ``alpha``) in ``ext`` with EXIF orientation ``orientation``, at ``stored``'s depth."""
    deep = stored.dtype == np.uint16
    colour = stored.ndim == 3
    if not deep:
        return _pillow_bytes(stored, "PNG" if ext == ".png" else "TIFF", orientation, alpha)
    if ext == ".tif":
        return _tiff16(np.dstack([stored, alpha]) if alpha is not None else stored, orientation)
    if not colour:
        if alpha is not None:
            return _png_with_exif(_png16_grey_alpha(stored, alpha), orientation)
        return _pillow_bytes(stored, "PNG", orientation)  # Pillow writes 16-bit grey (I;16) itself
    data = np.dstack([stored, alpha]) if alpha is not None else stored
    ok, buf = cv2.imencode(".png", cv2.cvtColor(data, cv2.COLOR_RGBA2BGRA if alpha is not None else cv2.COLOR_RGB2BGR))
    assert ok
    return _png_with_exif(buf.tobytes(), orientation)


ORIENTATIONS = range(1, 9)


@pytest.mark.parametrize("orientation", ORIENTATIONS)
def test_the_tests_stored_images_are_what_pillow_turns_upright(orientation):
    """The table in ``_stored`` agrees with Pillow's own reading of EXIF orientation (the reference)."""
    upright = _upright_image(deep=False, colour=True)
    data = _pillow_bytes(_stored(upright, orientation), "PNG", orientation)
    with Image.open(io.BytesIO(data)) as im:
        assert np.array_equal(np.asarray(ImageOps.exif_transpose(im)), upright)


@pytest.mark.parametrize("ext", [".png", ".tif"])
@pytest.mark.parametrize("colour", [False, True], ids=["grey", "rgb"])
@pytest.mark.parametrize("deep", [False, True], ids=["8bit", "16bit"])
@pytest.mark.parametrize("orientation", ORIENTATIONS)
def test_every_orientation_decodes_upright_at_the_inputs_bit_depth(tmp_path, orientation, deep, colour, ext):
    upright = _upright_image(deep, colour)
    path = tmp_path / f"photo{ext}"
    path.write_bytes(_oriented_file(_stored(upright, orientation), ext, orientation))
    with Image.open(path) as im:  # the file really carries the orientation
        assert im.getexif().get(0x0112) == orientation
    img = decode(path)
    assert img.pixels.dtype == upright.dtype
    assert img.pixels.shape == upright.shape
    assert np.array_equal(img.pixels, upright)
    assert img.alpha is None
    assert img.pixels.flags.c_contiguous


@pytest.mark.parametrize("kind", ["rgba8 png", "rgba16 png", "la8 png", "la16 png", "rgba8 tiff", "rgba16 tiff"])
@pytest.mark.parametrize("orientation", ORIENTATIONS)
def test_alpha_turns_upright_with_its_pixels(tmp_path, orientation, kind):
    deep = "16" in kind
    upright = _upright_image(deep, colour=kind.startswith("rgba"))
    alpha = (_upright_image(deep, colour=False)[::-1] // 2).astype(upright.dtype)  # unlike any pixel plane
    ext = ".png" if kind.endswith("png") else ".tif"
    path = tmp_path / f"photo{ext}"
    path.write_bytes(_oriented_file(_stored(upright, orientation), ext, orientation, _stored(alpha, orientation)))
    img = decode(path)
    assert img.pixels.dtype == upright.dtype and img.alpha is not None and img.alpha.dtype == alpha.dtype
    assert np.array_equal(img.pixels, upright)
    assert np.array_equal(img.alpha, alpha)


def test_orientation_keeps_the_rest_of_the_exif_and_marks_the_output_upright(tmp_path):
    exif = Image.Exif()
    exif[0x0112] = 3
    exif[0x010F] = "Scanner Co"  # Make
    path = tmp_path / "photo.png"
    path.write_bytes(_pil(Image.fromarray(_upright_image(False, True)), "PNG", exif=exif))
    img = decode(path)
    assert img.exif is not None
    out = Image.Exif()
    out.load(img.exif)
    assert out.get(0x0112) == 1 and out.get(0x010F) == "Scanner Co"


def test_a_48_bit_tiff_is_colorized_into_a_16_bit_output_upright(tmp_path):
    from helpers import random_model

    from engine.batch.inputs import collect_inputs
    from engine.batch.pipeline import BatchPipeline
    from engine.colorizer import Colorizer
    from engine.options import ColorizeSettings, ExportOptions

    grey = grey_photo(24, 40, 5).astype(np.uint16) * 257 + 3
    upright = np.dstack([grey] * 3)
    src = tmp_path / "in" / "scan.tif"
    src.parent.mkdir()
    src.write_bytes(_tiff16(_stored(upright, 6), 6))  # stored 24 wide x 40 high, shown 40 x 24
    img = decode(src)
    assert img.pixels.dtype == np.uint16 and img.pixels.shape == (24, 40, 3)
    assert np.array_equal(img.pixels, upright)

    colorizer = Colorizer.create(ColorizeSettings(device="cpu", size=64, batch_size=2), model=random_model())
    jobs, problems = collect_inputs([src.parent])
    assert problems == [] and len(jobs) == 1
    summary = BatchPipeline(colorizer, ExportOptions(tmp_path / "out")).run(jobs)
    assert summary.done == 1, summary
    out = tmp_path / "out" / "scan.tif"
    data = cv2.imdecode(np.fromfile(out, dtype=np.uint8), cv2.IMREAD_UNCHANGED)
    assert data is not None and data.dtype == np.uint16 and data.shape == (24, 40, 3)


# --- Only damage is "corrupt" -----------------------------------------------------------------------


@pytest.mark.parametrize("error", [TypeError, AttributeError, NameError, KeyError])
def test_a_programming_error_inside_decoding_propagates_instead_of_being_called_corrupt(
        tmp_path, monkeypatch, error):
    path = tmp_path / "fine.png"
    path.write_bytes(_pil(Image.fromarray(grey_photo(8, 8, 1)), "PNG"))

    def broken(im):
        raise error("a bug in this program")

    monkeypatch.setattr(imageio, "_to_array", broken)
    with pytest.raises(error, match="a bug in this program"):
        decode(path)


def test_a_decoder_error_raised_inside_pillow_is_a_corrupt_image(tmp_path, monkeypatch):
    """Pillow's parsers raise KeyError or TypeError on data they did not expect: that is damage."""
    path = tmp_path / "odd.png"
    path.write_bytes(_pil(Image.fromarray(grey_photo(8, 8, 1)), "PNG"))
    code = compile("def load(self):\n    raise KeyError('unexpected tag')\n",
                   os.path.join(os.path.dirname(Image.__file__), "PngImagePlugin.py"), "exec")
    namespace: dict = {}
    exec(code, namespace)  # a function whose frame lies in Pillow, as the parser's own would
    monkeypatch.setattr(ImageFile.ImageFile, "load", namespace["load"])
    with pytest.raises(ImageError, match="truncated or corrupt image"):
        decode(path)
