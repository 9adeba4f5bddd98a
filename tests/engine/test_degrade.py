"""The old-print degradation model: seeded, each step a bounded change, toned scans still monochrome."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from helpers import colour_photo

from engine.color import lightness, rgb_to_lab
from engine.imageio import has_colour
from engine.training.degrade import STEPS, DegradeSettings, degrade

PHOTO = colour_photo(160, 240, seed=3)
ALL = DegradeSettings(**{name: 1.0 for name in DegradeSettings().order})


def test_the_same_seed_makes_the_same_scan_and_another_seed_another():
    a, steps_a = degrade(PHOTO, np.random.default_rng(7))
    b, steps_b = degrade(PHOTO, np.random.default_rng(7))
    c, _ = degrade(PHOTO, np.random.default_rng(8))
    assert np.array_equal(a, b) and steps_a == steps_b
    assert not np.array_equal(a, c)


def test_strength_zero_gives_the_photos_own_grey():
    scan, steps = degrade(PHOTO, np.random.default_rng(0), DegradeSettings(strength=0.0))
    assert steps == [] and scan.shape == PHOTO.shape and scan.dtype == np.uint8
    assert np.abs(rgb_to_lab(scan)[..., 1:]).max() < 1.0  # grey
    assert np.abs(lightness(scan) - lightness(PHOTO)).max() < 1.0  # with the photo's own lightness


def test_with_every_probability_one_every_step_is_taken_in_the_prints_order():
    _, steps = degrade(PHOTO, np.random.default_rng(0), ALL)
    assert steps == list(DegradeSettings().order)


@pytest.mark.parametrize("name", sorted(STEPS))
def test_each_step_changes_the_print_and_keeps_its_shape(name):
    grey = np.repeat((lightness(PHOTO) / 100.0)[..., None], 3, axis=2).astype(np.float32)
    out = STEPS[name](grey, np.random.default_rng(1), 160 / 1024 * 4, 1.0)
    assert out.shape == grey.shape
    assert np.abs(out - grey).mean() > 1e-3, name


def test_a_toned_scan_is_a_monochrome_photo_not_a_colour_one():
    only_tone = dataclasses.replace(DegradeSettings(), **{n: 0.0 for n in DegradeSettings().order if n != "tone"},
                                    tone=1.0)
    for seed in range(6):  # every tone drawn: sepia, selenium, cyanotype, warm, cold
        scan, steps = degrade(PHOTO, np.random.default_rng(seed), only_tone)
        assert steps == ["tone"] and not has_colour(scan), seed
        assert np.abs(rgb_to_lab(scan)[..., 1:]).max() > 1.0  # tinted, all the same
    assert has_colour(PHOTO)  # the colour photo itself is still told apart


def test_evaluate_degrade_reports_clean_and_degraded_side_by_side(tmp_path, capsys):
    import cv2
    from helpers import random_model

    from engine.training.evaluate import EvalSettings, run_evaluate
    from engine.weights import save_weights

    for i in range(5):
        cv2.imwrite(str(tmp_path / f"p{i}.jpg"), cv2.cvtColor(colour_photo(64, 96, seed=i), cv2.COLOR_RGB2BGR))
    weights = tmp_path / "w.pt"
    save_weights(random_model(), weights)
    out = tmp_path / "report.json"
    assert run_evaluate(EvalSettings(folder=tmp_path, size=64, weights=weights, degrade=True, json_path=out)) == 0
    import json

    report = json.loads(out.read_text())
    degraded = report["degraded"]
    assert [r["photo"] for r in degraded["rows"]] == [r["photo"] for r in report["rows"]]
    assert all(isinstance(r["degradations"], list) for r in degraded["rows"])
    assert degraded["mean"]["psnr"] != report["mean"]["psnr"]  # another input, another output
    assert report["mean"]["psnr_grey"] == degraded["mean"]["psnr_grey"]  # judged against the same grey
    text = capsys.readouterr().out
    assert "| all | 5 |" in text and "degraded" in text


def test_training_crops_degraded_keep_their_clean_targets_and_the_same_crops():
    from engine.training.dataset import PhotoSet, make_batch

    photos = PhotoSet(["a.jpg", "b.jpg"], [colour_photo(300, 400, seed=1), colour_photo(260, 390, seed=2)])

    def batch(share: float):
        return make_batch(photos, 6, 96, np.random.default_rng(5), degrade_share=share,
                          degrade_rng=np.random.default_rng(9))

    L0, ab0 = batch(0.0)
    L1, ab1 = batch(1.0)
    assert np.array_equal(ab0, ab1)  # the same crops, the clean colour as the target
    assert all(np.abs(L1[i] - L0[i]).mean() > 0.5 for i in range(6))  # every input an old-print scan
    Lh, _ = batch(0.5)
    changed = [np.abs(Lh[i] - L0[i]).mean() > 0.5 for i in range(6)]
    assert 0 < sum(changed) < 6  # about half


def test_evaluate_degrade_examples_show_the_scan_the_report_judged_beside_the_original(tmp_path):
    import cv2
    from helpers import random_model

    from engine.training.evaluate import EvalSettings, degraded_copies, run_evaluate
    from engine.weights import save_weights

    photos = tmp_path / "photos"
    photos.mkdir()
    for i in range(3):
        cv2.imwrite(str(photos / f"p{i}.png"), cv2.cvtColor(colour_photo(64, 96, seed=i), cv2.COLOR_RGB2BGR))
    weights = tmp_path / "w.pt"
    save_weights(random_model(), weights)
    examples = tmp_path / "examples"
    assert run_evaluate(EvalSettings(folder=photos, size=64, weights=weights, degrade=True, degrade_seed=3,
                                     examples_dir=examples, examples=3)) == 0
    strips = sorted((examples / "degraded").glob("*.jpg"))
    assert [p.stem for p in strips] == ["p0", "p1", "p2"]
    rgb = cv2.cvtColor(cv2.imread(str(photos / "p1.png")), cv2.COLOR_BGR2RGB)
    strip = cv2.cvtColor(cv2.imread(str(examples / "degraded" / "p1.jpg")), cv2.COLOR_BGR2RGB).astype(float)
    scan = degraded_copies([("p1.png", rgb)], 3)[0][0].astype(float)
    assert strip.shape == (64, 3 * 96, 3)
    assert np.abs(strip[:, :96] - scan).mean() < 4  # the first column is that seed's scan (JPEG aside) ...
    assert np.abs(strip[:, 192:] - rgb).mean() < 4  # ... and the last the original
    assert np.abs(strip[:, :96] - strip[:, 192:]).mean() > 8  # the scan is not the original
