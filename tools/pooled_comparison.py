"""Pool photo-by-photo differences from several `evaluate --json` reports into one interval.

    python tools/pooled_comparison.py cand-a.json:base-a.json cand-b.json:base-b.json

Why: a rule may judge a candidate on two photo sets at once (the validation photos and a test set from
other sources); one resampled interval over all their photos is narrower and fairer than two separate ones.
Each pair is a candidate's report and the baseline's on the same photos.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.intervals import INTERVAL_LEVEL, bootstrap_interval  # noqa: E402


def pooled(pairs: list[tuple[dict, dict]]) -> dict:
    """The candidate's PSNR minus the baseline's, over every photo of every pair, with its interval."""
    diffs: list[float] = []
    for cand, base in pairs:
        if [r["photo"] for r in cand["rows"]] != [r["photo"] for r in base["rows"]]:
            raise ValueError("a candidate's and its baseline's reports are not on the same photos")
        diffs += [a["psnr"] - b["psnr"] for a, b in zip(cand["rows"], base["rows"], strict=True)]
    d = np.array(diffs)
    return {"photos": len(d), "psnr_difference": float(d.mean()),
            "interval": bootstrap_interval(lambda i: float(d[i].mean()), len(d)),
            "better_on": int((d > 0).sum()), "worse_on": int((d < 0).sum())}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("pairs", nargs="+", help="CANDIDATE.json:BASELINE.json")
    a = p.parse_args()
    pairs = []
    for spec in a.pairs:
        cand, base = spec.rsplit(":", 1)
        pairs.append((json.loads(Path(cand).read_text()), json.loads(Path(base).read_text())))
    c = pooled(pairs)
    lo, hi = c["interval"]
    print(f"{c['photos']} photos pooled: {c['psnr_difference']:+.2f} dB ({INTERVAL_LEVEL:.0%} interval "
          f"{lo:+.2f} to {hi:+.2f}), better on {c['better_on']}, worse on {c['worse_on']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
