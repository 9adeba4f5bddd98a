"""Judge two hint spreads by what one hint does beyond its own colour (``engine/training/hint_locality.py``).

    python tools/hint_locality.py FOLDER [--split validation] [--scans clean|degrade] --weights NEW OLD --json OUT
    python tools/hint_locality.py --pool OUT1.json OUT2.json ...

Each weights file colours every photo with each of 3 seeded single hints at the original's colour, under its own
hint spread; per photo: the harm (ab error added on the pixels of another colour than the hint's), the help on the
pixels of its own colour, the share of far pixels moved more than 10 ab units, and the off-colour leak (how far the
pixels of another colour move under a strong wrong colour at the same point). Prints the means, and the paired
differences NEW - OLD of the harm and the leak with their 90% intervals; ``--pool`` pools the per-photo differences
of several runs.
``--scans degrade`` colours each photo's seeded old-print scan (``evaluate --degrade``'s), judged on the clean colours.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.colorizer import Colorizer  # noqa: E402
from engine.intervals import bootstrap_interval  # noqa: E402
from engine.options import ColorizeSettings  # noqa: E402
from engine.training.evaluate import degraded_copies, load_folder  # noqa: E402
from engine.training.hint_locality import one_hint_cases, one_hint_figures  # noqa: E402

KEYS = ("harm", "help", "far_moved", "off_leak")
PAIRED = ("harm", "off_leak")  # the figures told NEW - OLD, photo by photo


def interval_line(diffs: np.ndarray) -> str:
    lo, hi = bootstrap_interval(lambda i: float(np.mean(diffs[i])), len(diffs))
    return f"{np.mean(diffs):+.2f} ({lo:+.2f} to {hi:+.2f}), lower on {int((diffs < 0).sum())} of {len(diffs)}"


def measure(a: argparse.Namespace) -> int:
    photos, problems = load_folder(a.folder, a.split)
    for p in problems:
        print(f"left out: {p}", file=sys.stderr)
    inputs = [rgb for _, rgb in photos] if a.scans == "clean" else [s for s, _ in degraded_copies(photos, 0)]
    per: dict[str, list[dict[str, float]]] = {}
    for w in a.weights:
        c = Colorizer.create(ColorizeSettings(device="cpu", precision="fp32", weights=w))
        spread = c.model.readout.spread
        print(f"{w}: {spread}")
        per[str(w)] = [one_hint_figures(one_hint_cases(c, name, x, rgb), spread)
                       for (name, rgb), x in zip(photos, inputs, strict=True)]
    new, old = (per[str(w)] for w in a.weights)
    keep = [i for i in range(len(photos)) if np.isfinite(new[i]["harm"]) and np.isfinite(old[i]["harm"])]
    for w, rows in per.items():
        means = {k: float(np.nanmean([r[k] for r in rows])) for k in KEYS}
        print(f"{w}: harm {means['harm']:.2f}, help {means['help']:.2f}, far moved {100 * means['far_moved']:.1f}%, "
              f"off-colour leak {means['off_leak']:.2f}")
    diffs = {k: np.array([new[i][k] - old[i][k] for i in keep]) for k in PAIRED}
    for k, d in diffs.items():
        print(f"{a.folder} ({a.split}, {a.scans}), {len(keep)} photos: {k} NEW - OLD {interval_line(d)}")
    if a.json:
        a.json.write_text(json.dumps({"folder": str(a.folder), "split": a.split, "scans": a.scans,
                                      "weights": [str(w) for w in a.weights], "names": [photos[i][0] for i in keep],
                                      **{f"{k}_diff": d.tolist() for k, d in diffs.items()}, "per_photo": per},
                                     indent=1))
    return 0


def pool(files: list[Path]) -> int:
    runs = [json.loads(f.read_text()) for f in files]
    for k in PAIRED:
        parts = []
        for f, d in zip(files, runs, strict=True):
            if f"{k}_diff" in d:  # runs from before the leak have no leak
                parts.append(np.array(d[f"{k}_diff"]))
                print(f"{f.name}: {d['folder']} ({d['split']}, {d['scans']}): {k} NEW - OLD {interval_line(parts[-1])}")
        if parts:
            print(f"pooled over {len(parts)} of {len(runs)} runs: {k} NEW - OLD {interval_line(np.concatenate(parts))}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", type=Path, nargs="?")
    p.add_argument("--split", default="all")
    p.add_argument("--scans", choices=("clean", "degrade"), default="clean")
    p.add_argument("--weights", type=Path, nargs=2)
    p.add_argument("--json", type=Path)
    p.add_argument("--pool", type=Path, nargs="+")
    a = p.parse_args()
    if a.pool:
        return pool(a.pool)
    if a.folder is None or a.weights is None:
        p.error("FOLDER and --weights NEW OLD, or --pool")
    return measure(a)


if __name__ == "__main__":
    raise SystemExit(main())
