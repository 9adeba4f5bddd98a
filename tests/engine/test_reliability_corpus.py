"""A scan archive of every kind, built here (no binary fixtures), through the pipeline and the CLI.

Every photo it must take is colorized at its upright size (alpha kept, 16 bits kept); every file
it must refuse fails alone with a one-line reason naming it, and the batch goes on.

"Unreadable" as root: ``chmod 000`` does not stop root from reading, so the corpus holds files
that fail for everyone instead: a broken symlink named like a photo (gone.jpg) and a FIFO
(pipe.png, which would block a naive reader forever). ``locked.jpg`` is chmod 000: refused
when the tests run as a normal user, colorized when they run as root (who can read it).
"""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
import textwrap
import zlib
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import pytest
from helpers import ROOT, colour_photo, grey_photo, random_model
from PIL import Image

from engine.batch.inputs import collect_inputs
from engine.batch.pipeline import BatchPipeline
from engine.colorizer import Colorizer
from engine.messages import printable
from engine.options import ColorizeSettings, ExportOptions
from engine.weights import save_weights

NON_UTF8 = os.fsdecode(b"Gro\xdfvater 1931.png")  # a Latin-1 name from an old disk: not valid UTF-8
LONG = "L" * 240 + ".png"  # near NAME_MAX: the temporary name must still fit


@dataclass(frozen=True)
class Take:
    size: tuple[int, int]  # upright (width, height)
    alpha: bool = False
    deep: bool = False  # 16 bits per channel kept
    colour: bool = False  # already in colour
    note: str = ""  # words the done photo's message holds
    compression: str | None = None  # the output TIFF's compression, as the source's


def _save(path: Path, im: Image.Image, fmt: str | None = None, **kw) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:  # through open(): works for names cv2 cannot take
        im.save(f, format=fmt or {".jpg": "JPEG", ".jpeg": "JPEG", ".png": "PNG", ".webp": "WEBP",
                                  ".bmp": "BMP", ".tif": "TIFF"}[path.suffix.lower()], **kw)


def _write_cv(path: Path, arr: np.ndarray) -> None:
    ok, buf = cv2.imencode(path.suffix, arr)
    assert ok
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buf.tobytes())


def _png_bytes(arr: np.ndarray) -> bytes:
    b = io.BytesIO()
    Image.fromarray(arr).save(b, "PNG")
    return b.getvalue()


def _jpeg_bytes(arr: np.ndarray) -> bytes:
    b = io.BytesIO()
    Image.fromarray(arr).save(b, "JPEG", quality=90)
    return b.getvalue()


def bomb_png() -> bytes:
    """A valid 1x1 PNG whose IHDR claims 100000 x 100000 (with a correct CRC)."""
    data = bytearray(_png_bytes(np.zeros((1, 1), np.uint8)))
    assert data[12:16] == b"IHDR"
    data[16:24] = struct.pack(">II", 100_000, 100_000)
    data[29:33] = struct.pack(">I", zlib.crc32(bytes(data[12:29])))
    return bytes(data)


def build_corpus(root: Path) -> tuple[dict[str, Take], dict[str, str]]:
    """Write the corpus under root. Returns (photos to take, files to refuse -> words the reason holds)."""
    take: dict[str, Take] = {}
    refuse: dict[str, str] = {}
    g = lambda h, w, s=0: grey_photo(h, w, s)  # noqa: E731

    _save(root / "grey8.png", Image.fromarray(g(36, 48, 1)))
    take["grey8.png"] = Take((48, 36))
    _write_cv(root / "grey16.png", g(33, 45, 2).astype(np.uint16) * 257 + 7)
    take["grey16.png"] = Take((45, 33), deep=True)
    _write_cv(root / "grey16.tif", g(27, 31, 3).astype(np.uint16) * 257)
    take["grey16.tif"] = Take((31, 27), deep=True)
    _write_cv(root / "rgb48.png", np.dstack([g(26, 34, 4).astype(np.uint16) * 257] * 3))  # 48-bit RGB, grey
    take["rgb48.png"] = Take((34, 26), deep=True)
    _save(root / "photo.jpg", Image.fromarray(g(40, 50, 5)), quality=90)
    take["photo.jpg"] = Take((50, 40))
    _save(root / "photo.webp", Image.fromarray(g(30, 44, 6)), quality=90)
    take["photo.webp"] = Take((44, 30))
    _save(root / "photo.bmp", Image.fromarray(g(21, 33, 7)))
    take["photo.bmp"] = Take((33, 21))
    _save(root / "bilevel.png", Image.fromarray(g(30, 40, 8)).convert("1"))
    take["bilevel.png"] = Take((40, 30))
    la = Image.merge("LA", (Image.fromarray(g(30, 40, 9)), Image.fromarray(np.tile(np.arange(40, dtype=np.uint8) * 6,
                                                                                     (30, 1)))))
    _save(root / "la.png", la)
    take["la.png"] = Take((40, 30), alpha=True)
    pal = Image.fromarray(g(28, 36, 10)).convert("RGB").quantize(16)
    _save(root / "palette.png", pal)
    take["palette.png"] = Take((36, 28))
    _save(root / "palette_trns.png", pal, transparency=0)
    take["palette_trns.png"] = Take((36, 28), alpha=True)
    _save(root / "cmyk.jpg", Image.fromarray(g(32, 40, 11)).convert("CMYK"), quality=90)
    take["cmyk.jpg"] = Take((40, 32))
    _save(root / "colour.jpg", Image.fromarray(colour_photo(40, 50, 12)), quality=95)
    take["colour.jpg"] = Take((50, 40), colour=True)
    exif = Image.Exif()
    exif[0x0112] = 6  # stored 60 wide x 30 high, shown rotated 90 degrees clockwise
    _save(root / "rotated.jpg", Image.fromarray(g(30, 60, 13)), exif=exif, quality=90)
    take["rotated.jpg"] = Take((30, 60))
    _save(root / "dot.png", Image.fromarray(np.full((1, 1), 90, np.uint8)))
    take["dot.png"] = Take((1, 1))
    _save(root / "thin.png", Image.fromarray(g(1, 500, 14)))
    take["thin.png"] = Take((500, 1))
    _save(root / "tall.jpg", Image.fromarray(g(500, 1, 15)), quality=90)
    take["tall.jpg"] = Take((1, 500))
    _save(root / "Famille Müller" / "années 50" / "Grand-mère été 1952.png", Image.fromarray(g(48, 64, 16)))
    take["Famille Müller/années 50/Grand-mère été 1952.png"] = Take((64, 48))
    _save(root / "nested" / "a" / "b" / "c" / "deep.jpg", Image.fromarray(g(40, 40, 17)), quality=90)
    take["nested/a/b/c/deep.jpg"] = Take((40, 40))
    _save(root / NON_UTF8, Image.fromarray(g(30, 30, 18)))
    take[NON_UTF8] = Take((30, 30))
    _save(root / LONG, Image.fromarray(g(20, 20, 19)))
    take[LONG] = Take((20, 20))
    _save(root / "album.jpg" / "inside.png", Image.fromarray(g(24, 24, 20)))  # a folder named like a photo
    take["album.jpg/inside.png"] = Take((24, 24))
    _save(root / "upper" / "SCAN 0001.JPG", Image.fromarray(g(30, 20, 21)), "JPEG", quality=90)
    take["upper/SCAN 0001.JPG"] = Take((20, 30))
    frames = [Image.fromarray(g(30, 40, 25)), Image.fromarray(g(30, 40, 26))]
    _save(root / "animated.gif", frames[0], "GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)
    take["animated.gif"] = Take((40, 30), note="animated GIF: colorized its first frame of 2")
    _save(root / "still.gif", Image.fromarray(g(26, 30, 27)), "GIF")
    take["still.gif"] = Take((30, 26))
    Image.fromarray(g(28, 34, 28)).save(root / "pages.tif", save_all=True, compression="tiff_lzw",  # seeks back
                                        append_images=[Image.fromarray(g(28, 34, 29))])
    take["pages.tif"] = Take((34, 28), note="multi-page TIFF: colorized its first page of 2", compression="tiff_lzw")
    _save(root / "deflate.tif", Image.fromarray(g(22, 26, 30)), compression="tiff_adobe_deflate")
    take["deflate.tif"] = Take((26, 22), compression="tiff_adobe_deflate")
    deep = Image.fromarray(g(24, 30, 32).astype(np.uint16) * 257)  # 16-bit grey, Deflate
    deep.save(root / "deep-deflate.tif", compression="tiff_adobe_deflate")
    take["deep-deflate.tif"] = Take((30, 24), deep=True, compression="tiff_adobe_deflate")
    _save(root / "scan.jp2", Image.fromarray(g(32, 24, 31)), "JPEG2000")
    take["scan.jp2"] = Take((24, 32))
    (root / "nested" / "a" / "loop").symlink_to(Path("..") / "..", target_is_directory=True)  # nested -> root
    (root / "readme.txt").write_text("not a photo: ignored, not refused")

    locked = root / "locked.jpg"
    _save(locked, Image.fromarray(g(30, 30, 22)), quality=90)
    locked.chmod(0)
    if os.access(locked, os.R_OK):  # root reads anything
        take["locked.jpg"] = Take((30, 30))
    else:
        refuse["locked.jpg"] = "permission denied"

    jpeg = _jpeg_bytes(g(64, 64, 23))
    png = _png_bytes(g(64, 64, 24))
    (root / "empty.jpg").write_bytes(b"")
    refuse["empty.jpg"] = "empty"
    (root / "notes.png").write_text("Dear diary,\nthis is text with an image extension.\n")
    refuse["notes.png"] = "not an image"
    (root / "random.jpg").write_bytes(np.random.default_rng(0).integers(0, 256, 5000, dtype=np.uint8).tobytes())
    refuse["random.jpg"] = "not an image"
    (root / "truncated.jpg").write_bytes(jpeg[: len(jpeg) // 2])
    refuse["truncated.jpg"] = "truncated"
    (root / "truncated.png").write_bytes(png[: len(png) // 2])
    refuse["truncated.png"] = "truncated"
    corrupt = bytearray(png)
    i = corrupt.index(b"IDAT") + 8
    corrupt[i : i + 40] = bytes(40)
    (root / "corrupt.png").write_bytes(bytes(corrupt))
    refuse["corrupt.png"] = "corrupt"
    (root / "bomb.png").write_bytes(bomb_png())
    refuse["bomb.png"] = "too large"
    (root / "gone.jpg").symlink_to(root / "deleted-long-ago.jpg")
    refuse["gone.jpg"] = "not found"
    os.mkfifo(root / "pipe.png")
    refuse["pipe.png"] = "not a regular file"
    (root / "bad\nname.jpg").write_bytes(b"\x00" * 100)  # a newline in the name: still one line on stderr
    refuse["bad\nname.jpg"] = "not an image"
    return take, refuse


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus") / "Scans 1950-2000"
    root.mkdir()
    take, refuse = build_corpus(root)
    return root, take, refuse


@pytest.fixture(scope="module")
def colorizer():
    return Colorizer.create(ColorizeSettings(device="cpu", size=64, batch_size=4), model=random_model())


def read_any(path: Path) -> tuple[Image.Image, np.ndarray]:
    """The output via Pillow (mode, size, fully decoded) and via OpenCV (bit depth), for any file name."""
    with Image.open(path) as im:
        im.load()  # raises on a truncated file
        im = im.copy()
    data = cv2.imdecode(np.fromfile(path, dtype=np.uint8), cv2.IMREAD_UNCHANGED)
    assert data is not None, path
    return im, data


def check_outputs(out: Path, take: dict[str, Take]) -> None:
    for rel, t in take.items():
        path = out / rel  # "keep" keeps the name as it is, "SCAN 0001.JPG" included
        if path.suffix == ".gif":
            path = path.with_suffix(".png")  # a colour GIF would be dithered to 256 colours
        assert path.is_file(), f"no output for {rel!r}"
        im, data = read_any(path)
        if t.compression is not None:
            assert im.info.get("compression") == t.compression, (rel, im.info.get("compression"))
        assert im.size == t.size, (rel, im.size, t.size)
        assert ("A" in im.getbands()) == t.alpha, (rel, im.mode)
        assert (data.dtype == np.uint16) == t.deep, (rel, data.dtype)
        if min(t.size) >= 16:  # coloured, not the grey input passed through
            rgb = np.asarray(im.convert("RGB"), dtype=np.float32) / 255.0
            lab = cv2.cvtColor(rgb, cv2.COLOR_RGB2Lab)
            assert np.hypot(lab[..., 1], lab[..., 2]).mean() > 2.0, rel


def test_pipeline_takes_every_kind_and_refuses_the_rest_one_line_each(corpus, colorizer, tmp_path):
    root, take, refuse = corpus
    jobs, problems = collect_inputs([root])
    assert problems == []
    names = {str(j.path.relative_to(root)) for j in jobs}
    assert names == set(take) | set(refuse)  # the loop walked once, readme.txt not a job, nothing twice
    results = []
    summary = BatchPipeline(colorizer, ExportOptions(tmp_path / "out")).run(jobs, on_result=results.append)
    by_name = {str(r.source.relative_to(root)): r for r in results}
    assert [r.index for r in results] == sorted(r.index for r in results)  # input order
    for rel, words in refuse.items():
        r = by_name[rel]
        assert r.status == "failed" and words in r.message, (rel, r.status, r.message)
        assert r.message.strip() and "\n" not in r.message and r.output is None
    for rel, t in take.items():
        assert by_name[rel].status == "done", (rel, by_name[rel].message)
        assert t.note in by_name[rel].message, (rel, by_name[rel].message)
    assert summary.done == len(take) and summary.failed == len(refuse) and summary.stopped_reason is None
    check_outputs(tmp_path / "out", take)
    leftovers = [p for p in (tmp_path / "out").rglob("*") if "partial" in p.name]
    assert leftovers == []


def test_colour_photos_are_skipped_when_the_user_says_so(corpus, colorizer, tmp_path):
    root, take, _ = corpus
    jobs, _ = collect_inputs([root / "colour.jpg", root / "grey8.png", root / "cmyk.jpg"])
    summary = BatchPipeline(colorizer, ExportOptions(tmp_path / "out", colour_inputs="skip")).run(jobs)
    status = {r.source.name: (r.status, r.message) for r in summary.results}
    assert status["colour.jpg"] == ("skipped", "already in colour")
    assert status["grey8.png"][0] == "done" and status["cmyk.jpg"][0] == "done"
    assert not (tmp_path / "out" / "colour.jpg").exists()


def test_cli_takes_the_corpus_names_each_refusal_on_one_line_and_exits_1(corpus, tmp_path):
    root, take, refuse = corpus
    weights = tmp_path / "model.pt"
    save_weights(random_model(), weights)
    out = tmp_path / "out dir é"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, str(ROOT / "main.py"), "colorize", str(root), "--output", str(out),
                        "--size", "64", "--weights", str(weights)],
                       capture_output=True, text=True, errors="backslashreplace", timeout=300, env=env, cwd=ROOT)
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr and "Traceback" not in p.stdout
    lines = [ln for ln in p.stderr.splitlines() if ln.strip() and ": note: " not in ln]
    notes = [ln for ln in p.stderr.splitlines() if ": note: " in ln]
    assert len(lines) == len(refuse), lines  # one line per refused file, nothing else
    noted = {rel: t.note for rel, t in take.items() if t.note}
    assert len(notes) == len(noted), notes  # and one for each photo of which only a part was colorized
    for rel, note in noted.items():
        assert f"{printable(root / rel)}: note: {note}" in notes, (rel, notes)
    for rel, words in refuse.items():
        shown = printable(root / rel)
        hits = [ln for ln in lines if ln.startswith(shown + ":")]
        assert len(hits) == 1 and words in hits[0], (rel, lines)
    assert f"{len(take)} photos in" in p.stdout and f"{len(refuse)} failed" in p.stdout
    check_outputs(out, take)


LARGE_SCRIPT = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    sys.path[:0] = [sys.argv[1], sys.argv[1] + "/tests"]
    import psutil
    from helpers import random_model
    from engine.colorizer import Colorizer
    from engine.options import ColorizeSettings
    from engine.batch.inputs import collect_inputs
    from engine.batch.pipeline import BatchPipeline
    from engine.options import ExportOptions

    colorizer = Colorizer.create(ColorizeSettings(device="cpu", size=64), model=random_model())
    jobs, _ = collect_inputs([Path(sys.argv[2])])
    BatchPipeline(colorizer, ExportOptions(Path(sys.argv[3]))).run(jobs[:0])  # warm up: threads, imports
    # The peak of this process's own memory (VmHWM): ru_maxrss would also count the parent's peak, which
    # the kernel carries across the vfork + exec that started this script.
    from engine.bench import peak_rss_bytes, reset_peak_rss
    reset_peak_rss()
    before = psutil.Process().memory_info().rss
    summary = BatchPipeline(colorizer, ExportOptions(Path(sys.argv[3]))).run(jobs)
    peak = peak_rss_bytes()
    print(json.dumps({"done": summary.done, "messages": [r.message for r in summary.results],
                      "growth_mb": (peak - before) / 2**20}))
""")


def test_a_30_megapixel_scan_is_colorized_at_full_size_in_bounded_memory(tmp_path):
    """6000 x 5000 grey (30 MP). A full-resolution float Lab copy alone is 360 MB; the work goes in
    strips, so the peak is the photo's own planes (L float32 120 MB, output 90 MB, the encoder's copy).
    """
    src = tmp_path / "in"
    src.mkdir()
    big = cv2.resize(grey_photo(500, 600, 3), (6000, 5000), interpolation=cv2.INTER_LINEAR)
    assert cv2.imwrite(str(src / "panorama scan.jpg"), big, [cv2.IMWRITE_JPEG_QUALITY, 85])
    del big
    script = tmp_path / "large.py"
    script.write_text(LARGE_SCRIPT)
    p = subprocess.run([sys.executable, str(script), str(ROOT), str(src), str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout.strip().splitlines()[-1])
    assert report["done"] == 1, report["messages"]
    with Image.open(tmp_path / "out" / "panorama scan.jpg") as im:
        assert im.size == (6000, 5000) and im.mode == "RGB"
    assert report["growth_mb"] < 800, report  # the code before strips needed 1420 MB
