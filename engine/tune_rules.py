"""How many photos a tune needs and how many it holds out: torch-free, so the teach dialog counts by the same rules
the tune applies (``engine.training.tune``).
"""

from __future__ import annotations

MIN_PHOTOS = 20  # fewer colour photos than this teach nothing measurable: an error
FEW_PHOTOS = 50  # fewer than this: a warning that the result will be uncertain
HELD_OUT_SHARE = 0.15
MIN_HELD_OUT = 5  # the fewest photos an interval is worked out on (evaluate.INTERVAL_MIN_PHOTOS)
MAX_HELD_OUT = 150  # measuring more takes minutes past the budget and tells no more
MAX_PHOTOS = 3000  # decoded in memory at up to 1024 px: about 7 GB at most


def held_out_count(photos: int) -> int:
    """How many of ``photos`` colour photos a tune holds out to measure itself."""
    return min(MAX_HELD_OUT, max(MIN_HELD_OUT, round(HELD_OUT_SHARE * photos)))
