"""Check the colour-hints bar as a user meets it: grey copies in, `colorize --hints FILE` out, compared.

    python tools/hints_through_cli.py ../shared/photos/train --split validation --hints 10 [--weights W]

Writes grey PNG copies of the photos and a hints file of N simulated hints per photo (the same seeded points
as `evaluate --hints`), runs `python main.py colorize` on them in a subprocess, and prints the mean PSNR gain
over grey with its 90% interval and the colourfulness ratio, overall and per source group.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.color import colourfulness, grey_rgb, psnr, rgb_to_lab, to_uint8  # noqa: E402
from engine.hints import save_hints_file, simulate_hints  # noqa: E402
from engine.imageio import decode  # noqa: E402
from engine.intervals import bootstrap_interval  # noqa: E402
from engine.training.evaluate import hint_seed_of, load_folder  # noqa: E402
from engine.training.groups import reporting_groups  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", type=Path)
    p.add_argument("--split", default="validation")
    p.add_argument("--hints", type=int, default=10)
    p.add_argument("--weights", type=Path)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    photos, problems = load_folder(a.folder, a.split)
    for line in problems:
        print(line)
    with tempfile.TemporaryDirectory() as tmp:
        grey_dir, out_dir = Path(tmp) / "grey", Path(tmp) / "out"
        hints = {}
        for name, rgb in photos:
            path = grey_dir / Path(name).with_suffix(".png")
            path.parent.mkdir(parents=True, exist_ok=True)
            grey = to_uint8(grey_rgb(rgb_to_lab(rgb)[..., 0]))
            cv2.imwrite(str(path), cv2.cvtColor(grey, cv2.COLOR_RGB2BGR))
            if a.hints:
                hints[Path(name).with_suffix(".png").as_posix()] = simulate_hints(rgb, a.hints,
                                                                                  hint_seed_of(name, a.seed))
        cmd = [sys.executable, str(ROOT / "main.py"), "colorize", str(grey_dir), "--output", str(out_dir)]
        if a.hints:
            save_hints_file(Path(tmp) / "hints.json", hints)
            cmd += ["--hints", str(Path(tmp) / "hints.json")]
        if a.weights:
            cmd += ["--weights", str(a.weights)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        print(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr)
        if done.returncode != 0:
            return done.returncode
        gains, colour, truth_colour = [], [], []
        for name, rgb in photos:
            out = decode(out_dir / Path(name).with_suffix(".png")).pixels
            truth = rgb.astype(np.float32) / 255.0
            grey = grey_rgb(rgb_to_lab(rgb)[..., 0])
            gains.append(psnr(out.astype(np.float32) / 255.0, truth) - psnr(grey, truth))
            colour.append(colourfulness(out))
            truth_colour.append(colourfulness(rgb))
    g = np.array(gains)
    groups, _ = reporting_groups([name for name, _ in photos], a.folder)
    print(f"{len(photos)} photos, {a.hints} hints each, through `colorize`:")
    lo, hi = bootstrap_interval(lambda i: float(g[i].mean()), len(g))
    print(f"  gain over grey {g.mean():+.2f} dB (90% interval {lo:+.2f} to {hi:+.2f}), colourfulness "
          f"{np.mean(colour) / np.mean(truth_colour):.2f} of the originals'")
    for group in sorted(set(groups)):
        idx = [i for i, x in enumerate(groups) if x == group]
        print(f"  {group}: {len(idx)} photos, {g[idx].mean():+.2f} dB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
