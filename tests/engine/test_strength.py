"""Colour strength applies to what is written: ``colorize --strength S`` scales the predicted chroma
(1.0 the model's own colour, 0 grey), with the shipped weights on the sample photos.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
from helpers import ROOT

from engine.color import colourfulness
from engine.options import ExportOptions

SAMPLES = ROOT / "resources" / "samples"
WEIGHTS = ROOT / "resources" / "models" / "colorizer.pt"


def _colorize(out: Path, strength: str) -> dict[str, np.ndarray]:
    """The CLI on the samples at this strength (fp32 pinned: bf16 would differ between CPUs) -> name: RGB."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, str(ROOT / "main.py"), "colorize", str(SAMPLES), "--output", str(out),
                        "--strength", strength, "--precision", "fp32", "--device", "cpu", "--format", "png"],
                       capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    photos = {f.stem: cv2.cvtColor(cv2.imread(str(f)), cv2.COLOR_BGR2RGB) for f in sorted(out.glob("*.png"))}
    assert len(photos) == len(list(SAMPLES.glob("*.jpg")))
    return photos


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, dict[str, np.ndarray]]:
    if not WEIGHTS.is_file():
        pytest.skip("the shipped weights are not installed")
    return {s: _colorize(tmp_path_factory.mktemp(f"strength-{s}"), s) for s in ("1.0", "1.5", "0")}


def test_strength_above_one_makes_every_exported_photo_more_colourful(outputs):
    for name, own in outputs["1.0"].items():
        stronger = outputs["1.5"][name]
        assert colourfulness(own) > 1.0, name  # the model coloured it: the ratio below means something
        assert colourfulness(stronger) >= 1.3 * colourfulness(own), name


def test_strength_zero_exports_grey_photos(outputs):
    for name, rgb in outputs["0"].items():
        x = rgb.astype(np.int16)
        worst = max(int(np.abs(x[..., 0] - x[..., 1]).max()), int(np.abs(x[..., 1] - x[..., 2]).max()))
        assert worst <= 1, name


def test_strength_keeps_the_lightness(outputs):
    """Only the chroma changes: the grey version's lightness is the colour version's (within rounding)."""
    for name, grey in outputs["0"].items():
        own = outputs["1.0"][name]
        L_grey = cv2.cvtColor(grey, cv2.COLOR_RGB2LAB)[..., 0].astype(float)
        L_own = cv2.cvtColor(own, cv2.COLOR_RGB2LAB)[..., 0].astype(float)
        assert np.abs(L_grey - L_own).mean() < 3, name


@pytest.mark.parametrize("strength", [-0.1, 2.5, float("nan")])
def test_a_strength_outside_0_to_2_is_refused(strength, tmp_path):
    with pytest.raises(ValueError, match="colour strength"):
        ExportOptions(tmp_path, strength=strength).validated()


def test_cli_refuses_a_strength_outside_0_to_2(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, str(ROOT / "main.py"), "colorize", str(SAMPLES), "--output", str(tmp_path),
                        "--strength", "3"], capture_output=True, text=True, timeout=240, env=env, cwd=ROOT)
    assert p.returncode == 2 and "colour strength" in p.stderr
