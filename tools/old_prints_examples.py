"""The README's before-and-after of old-print scans: for named photos, the scan (``degrade.py``, seed 0) | the shipped
model's colours from it | old-prints' (what "auto" gives a folder of such scans) | the original, one row each.

    python tools/old_prints_examples.py ../shared/photos/train matplotlib_grace-hopper.jpg \
        gcompris_wanimal-scarlet-macaw.jpg gcompris_cat-windmill6.jpg --out docs/degraded-before-after.jpg
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.colorizer import Colorizer  # noqa: E402
from engine.imageio import decode  # noqa: E402
from engine.named_models import BUNDLED, OLD_PRINTS  # noqa: E402
from engine.options import ColorizeSettings  # noqa: E402
from engine.training.evaluate import degraded_copies  # noqa: E402

WIDTH = 300  # of each column


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("names", nargs="+")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    shipped = Colorizer.create(ColorizeSettings(batch_size=1))
    old = Colorizer.create(ColorizeSettings(batch_size=1, weights=BUNDLED[OLD_PRINTS]))
    rows = []
    for name in a.names:
        rgb = decode(a.folder / name).pixels
        scan = degraded_copies([(name, rgb)], 0)[0][0]
        columns = [scan, shipped.colorize(scan), old.colorize(scan), rgb]
        h = round(rgb.shape[0] * WIDTH / rgb.shape[1])
        rows.append(np.hstack([cv2.resize(c, (WIDTH, h), interpolation=cv2.INTER_AREA) for c in columns]))
    gap = np.full((6, 4 * WIDTH, 3), 255, np.uint8)
    sheet = np.vstack([part for row in rows for part in (row, gap)][:-1])
    cv2.imwrite(str(a.out), cv2.cvtColor(sheet, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 88])
    print(f"{a.out}: {len(rows)} photos, {sheet.shape[1]}x{sheet.shape[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
