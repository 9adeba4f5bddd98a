"""Property: whatever bytes a file holds, ``decode`` returns a sane photo or raises ``ImageError``
with a one-line reason; never any other exception, never a hang.

Valid small PNG / JPEG / WebP / TIFF / BMP files (grey, colour, alpha, 16-bit) are mutated by byte
flips, overwrites, insertions, deletions and truncation. ``max_pixels`` is lowered to 4 MP so that
a mutated header claiming a large size is refused quickly instead of being decoded (the size check
itself is the same code path).
"""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import cv2
import numpy as np
import pytest
from helpers import colour_photo, grey_photo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

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
