import importlib.util
from pathlib import Path

import pytest

spec = importlib.util.spec_from_file_location(
    "pooled_comparison", Path(__file__).resolve().parents[2] / "tools" / "pooled_comparison.py")
pooled_comparison = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pooled_comparison)


def report(psnrs, prefix="p"):
    return {"rows": [{"photo": f"{prefix}{i}", "psnr": v} for i, v in enumerate(psnrs)], "mean": {}}


def test_pooling_weighs_every_photo_of_every_set_once():
    a = (report([21.0, 22.0, 23.0, 24.0, 25.0]), report([20.0, 21.0, 22.0, 23.0, 24.0]))  # +1 on 5 photos
    b = (report([10.0] * 15, "q"), report([10.5] * 15, "q"))  # -0.5 on 15 photos
    c = pooled_comparison.pooled([a, b])
    assert c["photos"] == 20
    assert c["psnr_difference"] == pytest.approx((5 * 1.0 - 15 * 0.5) / 20)
    assert (c["better_on"], c["worse_on"]) == (5, 15)
    lo, hi = c["interval"]
    assert lo <= c["psnr_difference"] <= hi and lo < hi


def test_pooling_refuses_reports_on_different_photos():
    with pytest.raises(ValueError):
        pooled_comparison.pooled([(report([1.0] * 5), report([1.0] * 5, "other"))])
