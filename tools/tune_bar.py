"""Issue #23's bar, as a user meets it: grey copies of held-out photos through ``colorize``, shipped against
``--model NAME``, PSNR against the colour originals, paired per photo with a 90% interval.

    python tools/tune_bar.py /work/archive-21/heldout --model NAME [--json out.json]

The grey copies are written as 8-bit PNG (the photo's own lightness, as a scan of it would be); each output is
compared with its original at the original's size.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.color import psnr  # noqa: E402
from engine.intervals import bootstrap_interval  # noqa: E402
from engine.training.dataset import find_photos  # noqa: E402


def grey_copies(photos: list[Path], folder: Path) -> list[Path]:
    out = []
    for p in photos:
        bgr = cv2.imread(str(p), cv2.IMREAD_COLOR)
        target = folder / f"{p.stem}.png"
        assert cv2.imwrite(str(target), cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY))
        out.append(target)
    return out


def colorize(grey: Path, out: Path, model: str | None) -> None:
    cmd = [sys.executable, str(ROOT / "main.py"), "colorize", str(grey), "--output", str(out), "--format", "png"]
    subprocess.run(cmd + (["--model", model] if model else []), check=True)


def scores(photos: list[Path], out: Path) -> np.ndarray:
    values = []
    for p in photos:
        truth = cv2.imread(str(p), cv2.IMREAD_COLOR).astype(np.float32) / 255
        got = cv2.imread(str(out / f"{p.stem}.png"), cv2.IMREAD_COLOR).astype(np.float32) / 255
        values.append(psnr(got, truth))
    return np.array(values)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("heldout", type=Path)
    parser.add_argument("--model", required=True)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    photos = find_photos(args.heldout)
    with tempfile.TemporaryDirectory() as tmp:
        grey = Path(tmp) / "grey"
        grey.mkdir()
        grey_copies(photos, grey)
        colorize(grey, Path(tmp) / "shipped", None)
        colorize(grey, Path(tmp) / "tuned", args.model)
        shipped, tuned = scores(photos, Path(tmp) / "shipped"), scores(photos, Path(tmp) / "tuned")
    diff = tuned - shipped
    lo, hi = bootstrap_interval(lambda i: float(diff[i].mean()), len(diff))
    result = {"photos": len(photos), "model": args.model, "psnr_shipped": float(shipped.mean()),
              "psnr_tuned": float(tuned.mean()), "gain_db": float(diff.mean()), "interval": [lo, hi],
              "better_on": int((diff > 0).sum()), "worse_on": int((diff < 0).sum()),
              "per_photo": {p.name: round(float(d), 3) for p, d in zip(photos, diff, strict=True)}}
    print(f"{len(photos)} held-out photos: shipped {shipped.mean():.2f} dB, {args.model} {tuned.mean():.2f} dB: "
          f"{diff.mean():+.2f} dB (90% interval {lo:+.2f} to {hi:+.2f}), better on {result['better_on']}, "
          f"worse on {result['worse_on']}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
