"""The words for compare mode: what was compared, the speed-up, and how far apart the two engines' colour
is, against what the precision in use is expected to give (``engine.options.AGREEMENT``, torch-free).
"""

from __future__ import annotations

from typing import Any

from engine.options import AGREEMENT

AB_UNITS = ("ab units are Lab's a (green–red) and b (blue–yellow), each about -110..110; "
            "a difference under about 2 is invisible.")


def expected_range(precision: str) -> str:
    """What the optimized engine in ``precision`` is documented to stay within, against the fp32 baseline."""
    bound = AGREEMENT.get(precision)
    if bound is None:
        return f"No documented range for {precision or 'this precision'}."
    return (f"Expected for {precision}: 99.9% of values within {bound.p999:.3g}, "
            f"none further than {bound.max_abs:.3g}.")


def difference_text(s: Any) -> str:
    """The batch's difference: "max 45.1, p99.9 17.2" (or "–" without a comparison)."""
    if s.max_abs_diff is None:
        return "–"
    p999 = "" if s.p999_abs_diff is None else f", p99.9 {s.p999_abs_diff:.3g}"
    return f"max {s.max_abs_diff:.3g}{p999} (ab units)"


def difference_tooltip(s: Any) -> str:
    return ("|Δab| between the two engines' colour over every photo compared: the largest value and the "
            "99.9th percentile (99.9% of values are within it; read from 1.5%-wide bins, rounded up).\n"
            f"{AB_UNITS}\n{expected_range(s.precision)}")


def speedup_text(s: Any) -> str:
    speedup = s.compare_speedup
    return "–" if speedup is None else f"{speedup:.2f}×"


def speedup_tooltip(s: Any) -> str:
    if s.compare_speedup is None:
        return "Total baseline model time ÷ total model time of this engine, over the same photos"
    return (f"Total baseline model time ÷ total model time of this engine, over the same photos: "
            f"{s.compare_infer_s:.2f} s ÷ {s.compared_infer_s:.2f} s")
