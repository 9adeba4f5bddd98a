"""Intervals by resampling: how wide chance is, for a mean over photos or a ratio over bench rounds."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

INTERVAL_LEVEL = 0.9


def bootstrap_interval(statistic: Callable[[np.ndarray], float], n: int, level: float = INTERVAL_LEVEL,
                       resamples: int = 4000, seed: int = 0) -> tuple[float, float]:
    """Interval of a statistic over n samples (photos, or a bench's rounds), by resampling their indices (seeded:
    same samples, same interval).

    Photos differ from each other by several dB, so on a few dozen of them a difference of a few
    tenths of a dB in the mean can be chance; the interval says how wide chance is.
    """
    rng = np.random.default_rng(seed)
    values = [statistic(rng.integers(0, n, n)) for _ in range(resamples)]
    lo, hi = np.percentile(values, [50 * (1 - level), 50 * (1 + level)])
    return float(lo), float(hi)


def paired_speedup(a_ms: np.ndarray, b_ms: np.ndarray, level: float = INTERVAL_LEVEL) -> tuple[float, float, float]:
    """B's speed over A's from times paired by round (a slow spell of a shared machine slows both of a round):
    the median of the per-round ratios a/b and its bootstrap interval, (median, low, high).
    """
    ratios = np.asarray(a_ms, dtype=float) / np.asarray(b_ms, dtype=float)
    lo, hi = bootstrap_interval(lambda i: float(np.median(ratios[i])), len(ratios), level)
    return float(np.median(ratios)), lo, hi
