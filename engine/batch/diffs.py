"""How far two engines' colours differ over a whole batch, kept as counts rather than the differences themselves."""

from __future__ import annotations

import numpy as np

# |ab| differences are counted in log-spaced bins from 1e-6 to 256 (ab spans about -110..110): each bin is
# 1.5% wide, so the batch-wide 99.9th percentile is read back within 1.5% (rounded up, never down).
DIFF_EDGES = np.concatenate([[0.0], np.geomspace(1e-6, 256.0, 1301)])


class DiffHistogram:
    """The |ab| differences of every photo compared, as counts in ``DIFF_EDGES`` bins, for a batch-wide
    99.9th percentile without keeping the differences themselves.
    """

    def __init__(self) -> None:
        self.counts = np.zeros(len(DIFF_EDGES) - 1, np.int64)
        self.max = 0.0

    def add(self, diff: np.ndarray) -> None:
        flat = diff.ravel()
        bins = np.searchsorted(DIFF_EDGES, flat, side="right") - 1
        self.counts += np.bincount(np.clip(bins, 0, len(self.counts) - 1), minlength=len(self.counts))
        self.max = max(self.max, float(flat.max()))

    def percentile(self, q: float) -> float | None:
        """A value that ``q``% of the differences are within (the nearest-rank percentile, rounded up to its
        bin's upper edge, at most the largest difference); None when nothing was counted.
        """
        total = int(self.counts.sum())
        if total == 0:
            return None
        rank = max(1, int(np.ceil(q / 100 * total - 1e-9)))  # 1e-9: 0.999 * 12000 must be 11988, not 11989
        i = int(np.searchsorted(np.cumsum(self.counts), rank))
        return min(float(DIFF_EDGES[i + 1]), self.max)
