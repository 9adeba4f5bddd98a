"""Measurement (not a decision): the doubt View > Show Where Unsure stripes against the colour error under it.

    python docs/experiments/unsure/unsure_calibration.py PHOTOS [SPLIT]

Each photo turned grey and colorized by the shipped model (working size 256, fp32); ``Colorizer.doubt`` and the ab
error against the original at every fourth pixel; the doubt's percentiles, and the mean ab error and share of
pixels more than 20 ab off in each tenth of the doubt.
"""

import sys
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from engine.color import rgb_to_lab  # noqa: E402
from engine.colorizer import Colorizer  # noqa: E402
from engine.options import ColorizeSettings  # noqa: E402
from engine.training.evaluate import load_folder  # noqa: E402


def main() -> None:
    photos, _ = load_folder(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "validation")
    c = Colorizer.create(ColorizeSettings(device="cpu", precision="fp32"))
    doubts, errors = [], []
    for _name, rgb in photos:
        grey = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
        out = c.colorize(grey)
        err = np.hypot(*(rgb_to_lab(rgb)[..., 1:] - rgb_to_lab(out)[..., 1:]).transpose(2, 0, 1))
        doubts.append(c.doubt(grey)[::4, ::4].ravel())
        errors.append(err[::4, ::4].ravel())
    D, E = np.concatenate(doubts), np.concatenate(errors)
    print("photos", len(photos), "pixels", D.size)
    print("doubt percentiles 10/25/50/75/90/95:", np.percentile(D, [10, 25, 50, 75, 90, 95]).round(3))
    edges = np.percentile(D, np.arange(0, 101, 10))
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        m = (D >= lo) & (D <= hi)
        off = 100 * (E[m] > 20).mean()
        print(f"doubt {lo:.2f}-{hi:.2f}: mean ab error {E[m].mean():5.1f}, share >20 ab {off:4.1f}%")


if __name__ == "__main__":
    main()
