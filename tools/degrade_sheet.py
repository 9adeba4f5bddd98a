#!/usr/bin/env python3
"""A contact sheet of degraded crops, to look at the degradation model: python tools/degrade_sheet.py PHOTOS
[--out docs/degrade-sheet.jpg] [--seed 0] [--cols 6] [--rows 4] [--crop 256]

Each cell is a centre crop (the crop side at the photo's 1024 px scale) of one photo's degraded scan, labelled
with the steps drawn for it; the first column is the clean grey version of the same photo.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import cv2  # noqa: E402
import numpy as np  # noqa: E402

from engine.imageio import decode  # noqa: E402
from engine.training.degrade import DegradeSettings, degrade  # noqa: E402


def cell(img: np.ndarray, side: int) -> np.ndarray:
    h, w = img.shape[:2]
    s = min(h, w, side)
    crop = img[(h - s) // 2 : (h - s) // 2 + s, (w - s) // 2 : (w - s) // 2 + s]
    return cv2.resize(crop, (side, side), interpolation=cv2.INTER_AREA)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("photos", type=Path, help="a folder of colour photos")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "degrade-sheet.jpg")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cols", type=int, default=6)
    ap.add_argument("--rows", type=int, default=4)
    ap.add_argument("--crop", type=int, default=256)
    args = ap.parse_args(argv)
    files = sorted(p for p in args.photos.iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png"))[: args.rows]
    rng = np.random.default_rng(args.seed)
    lines = []
    for f in files:
        rgb = decode(f).pixels
        rgb = rgb if rgb.ndim == 3 else np.dstack([rgb] * 3)
        clean, _ = degrade(rgb, rng, DegradeSettings(strength=0.0))
        row = [cell(clean, args.crop)]
        for _ in range(args.cols - 1):
            scan, steps = degrade(rgb, rng)
            c = cell(scan, args.crop).copy()
            for k, text in enumerate([", ".join(steps[i : i + 3]) for i in range(0, len(steps), 3)]):
                cv2.putText(c, text, (4, 14 + 13 * k), cv2.FONT_HERSHEY_SIMPLEX, 0.38, (255, 255, 0), 1, cv2.LINE_AA)
            row.append(c)
        lines.append(np.concatenate(row, axis=1))
    sheet = np.concatenate(lines, axis=0)
    cv2.imwrite(str(args.out), cv2.cvtColor(sheet, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 88])
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
