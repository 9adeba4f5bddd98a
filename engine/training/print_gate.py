"""Fits the old-print gate (``engine.print_look.OldPrintGate``): clean grey copies of the training photos against
their old-print scans from ``degrade.py``, by a logistic regression with a little ridge.

The threshold is set on the same clean copies: at most ``clean_share`` of them read as old prints, so a person's
modern photos keep the shipped model's colour. Held-out photos play no part.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..color import grey_rgb, lightness, to_uint8
from ..print_look import OldPrintGate, measures
from .evaluate import degraded_copies

GATE_SEED = 7  # the scans it is fitted on: any seed but evaluate --degrade's 0


def logistic(x: np.ndarray, y: np.ndarray, ridge: float = 1e-2, steps: int = 50) -> tuple[np.ndarray, float]:
    """Weights and bias of a ridge-regularised logistic regression, by Newton's method (a few features)."""
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    beta = np.zeros(d + 1)
    reg = np.full(d + 1, ridge * n)
    reg[-1] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(xb @ beta)))
        grad = xb.T @ (p - y) + reg * beta
        hess = (xb * (p * (1 - p))[:, None]).T @ xb + np.diag(reg) + 1e-9 * np.eye(d + 1)
        step = np.linalg.solve(hess, grad)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return beta[:-1], float(beta[-1])


def grey_copy(rgb: np.ndarray) -> np.ndarray:
    """A colour photo's grey copy as a person's file holds it: three equal 8-bit channels."""
    return to_uint8(grey_rgb(lightness(rgb)))


def examples(photos: list[tuple[str, np.ndarray]], seed: int = GATE_SEED) -> tuple[np.ndarray, np.ndarray]:
    """Each photo twice: its clean grey copy (label 0) and its seeded old-print scan (label 1)."""
    feats, labels = [], []
    for (_, rgb), (scan, _) in zip(photos, degraded_copies(photos, seed), strict=True):
        feats += [measures(grey_copy(rgb)), measures(scan)]
        labels += [0.0, 1.0]
    return np.array(feats), np.array(labels)


def fit_gate(features: np.ndarray, labels: np.ndarray, clean_share: float = 0.05) -> OldPrintGate:
    mean, scale = features.mean(0), features.std(0) + 1e-9
    w, b = logistic((features - mean) / scale, labels)
    gate = OldPrintGate(tuple(mean.tolist()), tuple(scale.tolist()), tuple(w.tolist()), b, 0.5)
    clean = np.array([gate.score(f) for f, y in zip(features, labels, strict=True) if y == 0])
    return OldPrintGate(gate.mean, gate.scale, gate.weights, gate.bias, float(np.quantile(clean, 1 - clean_share)))


def main(argv: Sequence[str] | None = None) -> int:
    import argparse
    from pathlib import Path

    from ..print_look import GATE_FILE
    from .evaluate import load_folder

    ap = argparse.ArgumentParser(prog="python -m engine.training.print_gate",
                                 description="Fit the old-print gate on the training split of a photo folder.")
    ap.add_argument("photos", type=Path, nargs="?", default=Path("../shared/photos/train"))
    ap.add_argument("--out", type=Path, default=GATE_FILE)
    ap.add_argument("--clean-share", type=float, default=0.05)
    args = ap.parse_args(argv)
    photos, _ = load_folder(args.photos, "train")
    features, labels = examples(photos)
    gate = fit_gate(features, labels, args.clean_share)
    scores = np.array([gate.score(f) for f in features])
    args.out.write_text(gate.to_json() + "\n")
    flagged = scores > gate.threshold
    print(f"{len(photos)} training photos: clean copies read as old prints {flagged[labels == 0].mean():.3f}, "
          f"scans {flagged[labels == 1].mean():.3f}; written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
