import cv2
import numpy as np
import pytest
from helpers import SHARED, colour_photo, random_model

from engine.colorizer import Colorizer, ColorizeSettings
from engine.evaluate import evaluate_photos, load_folder, markdown_table, psnr


def test_psnr_of_identical_images_is_capped_and_noise_lowers_it():
    a = np.random.default_rng(0).random((10, 10, 3))
    assert psnr(a, a) == 99.0
    assert psnr(a, np.clip(a + 0.1, 0, 1)) < 25


@pytest.fixture(scope="module")
def report():
    c = Colorizer.create(ColorizeSettings(device="cpu", size=64), model=random_model())
    photos = [(f"p{i}", colour_photo(50, 70, i)) for i in range(3)]
    return evaluate_photos(c, photos)


def test_report_has_every_metric_and_baseline(report):
    assert len(report["rows"]) == 3
    m = report["mean"]
    for k in ("psnr", "psnr_grey", "psnr_tint", "ab_error", "ab_error_grey", "colourfulness",
              "colourfulness_original", "colourfulness_ratio"):
        assert np.isfinite(m[k])
    # The constant tint is the folder's mean ab: on its own photos it beats plain grey.
    assert m["ab_error_tint"] <= m["ab_error_grey"]
    assert "constant tint" in markdown_table(report)


def test_load_folder_keeps_colour_photos_and_reports_the_rest(tmp_path):
    cv2.imwrite(str(tmp_path / "c.png"), colour_photo(30, 30))
    cv2.imwrite(str(tmp_path / "g.png"), colour_photo(30, 30)[..., 0])
    (tmp_path / "x.jpg").write_bytes(b"nope")
    photos, problems = load_folder(tmp_path, "all")
    assert [n for n, _ in photos] == ["c.png"]
    assert len(problems) == 2


def test_splits_partition_the_folder_as_the_training_command_does(tmp_path):
    from engine.dataset import TUNING_FRACTION, split_of

    for i in range(40):
        cv2.imwrite(str(tmp_path / f"photo{i}.png"), colour_photo(12, 12, i))
    names = {s: [n for n, _ in load_folder(tmp_path, s)[0]] for s in ("all", "validation", "tuning", "train")}
    assert sorted(names["validation"] + names["tuning"] + names["train"]) == sorted(names["all"])
    assert len(names["all"]) == 40
    for s in ("validation", "tuning", "train"):
        assert all(split_of(n, tune_fraction=TUNING_FRACTION) == s for n in names[s])


def test_chroma_gain_override_changes_only_the_colour_strength(tmp_path):
    import json

    from engine.evaluate import EvalSettings, run_evaluate
    from engine.weights import save_weights

    save_weights(random_model(), tmp_path / "w.pt")
    for i in range(2):
        cv2.imwrite(str(tmp_path / f"p{i}.png"), colour_photo(40, 48, i))
    means = {}
    for gain in (None, 0.0):
        out = tmp_path / f"r{gain}.json"
        assert run_evaluate(EvalSettings(folder=tmp_path, size=64, weights=tmp_path / "w.pt", json_path=out,
                                         chroma_gain=gain)) == 0
        means[gain] = json.loads(out.read_text())["mean"]
    assert means[None]["colourfulness"] > 1.0
    assert means[0.0]["colourfulness"] < 1e-3  # no chroma at all: the grey photo
    assert abs(means[0.0]["psnr"] - means[0.0]["psnr_grey"]) < 0.05
    assert means[0.0]["psnr_grey"] == means[None]["psnr_grey"]


@pytest.mark.skipif(not (SHARED / "photos" / "train").is_dir(), reason="the shared training photos are not here")
def test_shipped_model_colours_photos_it_never_trained_on_better_than_grey_or_a_tint():
    photos, _ = load_folder(SHARED / "photos" / "train", "validation")
    assert len(photos) >= 10
    colorizer = Colorizer.create(ColorizeSettings(device="cpu", size=256, batch_size=1))
    m = evaluate_photos(colorizer, photos)["mean"]
    assert m["psnr"] > m["psnr_grey"] + 0.5 and m["psnr"] > m["psnr_tint"] + 0.5
    assert m["colourfulness_ratio"] > 0.6
