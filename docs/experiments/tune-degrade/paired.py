"""The paired differences the rule reads: clean PSNR and degraded chroma-only PSNR, candidate minus baseline, per
photo, from two `evaluate --degrade --json` reports on the same photos.

    python docs/experiments/tune-degrade/paired.py CANDIDATE.json BASELINE.json
"""

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from engine.intervals import bootstrap_interval  # noqa: E402


def paired(cand: list[dict], base: list[dict]) -> str:
    assert [r["photo"] for r in cand] == [r["photo"] for r in base], "not the same photos"
    d = np.array([a["psnr"] - b["psnr"] for a, b in zip(cand, base, strict=True)])
    lo, hi = bootstrap_interval(lambda idx: float(d[idx].mean()), len(d))
    return f"{d.mean():+.3f} dB (90% interval {lo:+.3f} to {hi:+.3f}), better on {(d > 0).sum()} of {len(d)}"


cand, base = (json.loads(Path(p).read_text()) for p in sys.argv[1:3])
print("clean, PSNR:", paired(cand["rows"], base["rows"]))
print("degraded, chroma-only PSNR:", paired(cand["degraded"]["rows"], base["degraded"]["rows"]))
