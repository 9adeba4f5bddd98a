""""auto": the model for a run chosen by how its photos look, and the name kept for it."""

from pathlib import Path

import cv2
import numpy as np
import pytest
from helpers import SAMPLES, old_scan
from test_cli import cli

from engine.batch import model_choice
from engine.batch.model_choice import BatchLook, FolderLooks, evenly, look_by_folder, look_of_batch
from engine.imageio import decode
from engine.named_models import AUTO, BUNDLED, OLD_PRINTS, SHIPPED, ModelNameError, check_name, model_path
from engine.training.print_gate import grey_copy


def test_evenly_spreads_from_the_first_to_the_last():
    items = list(range(100))
    picked = evenly(items, 5)
    assert picked[0] == 0 and picked[-1] == 99 and len(set(picked)) == 5
    assert evenly(items[:3], 5) == [0, 1, 2]


def test_a_batch_looks_like_old_prints_when_at_least_half_of_it_does():
    assert BatchLook(24, 12).model == OLD_PRINTS and BatchLook(24, 11).model == SHIPPED
    assert BatchLook(0, 0).model == SHIPPED  # nothing readable: the default
    assert BatchLook(1, 1).weights == BUNDLED[OLD_PRINTS]


def _folder(tmp_path, old: int, clean: int, name: str):
    folder = tmp_path / name
    folder.mkdir()
    for i in range(old):
        photo = decode(SAMPLES[i % len(SAMPLES)]).pixels
        cv2.imwrite(str(folder / f"old{i}.jpg"), old_scan(photo, i)[..., ::-1])
    for i in range(clean):
        photo = decode(SAMPLES[-1 - i % len(SAMPLES)]).pixels
        cv2.imwrite(str(folder / f"clean{i}.png"), grey_copy(photo))
    return folder


def test_the_photos_look_decides_and_an_unreadable_one_is_left_out(tmp_path):
    mostly_old = _folder(tmp_path, 3, 1, "a")
    (mostly_old / "broken.jpg").write_bytes(b"not a photo")
    look = look_of_batch(sorted(mostly_old.iterdir()))
    assert (look.sampled, look.looks_old, look.model) == (4, 3, OLD_PRINTS)
    look = look_of_batch(sorted(_folder(tmp_path, 1, 3, "b").iterdir()))
    assert (look.sampled, look.looks_old, look.model) == (4, 1, SHIPPED)


def test_a_photo_in_real_colour_never_counts_as_an_old_print(tmp_path):
    rng = np.random.default_rng(0)
    colour = cv2.GaussianBlur(rng.integers(0, 255, (60, 80, 3), dtype=np.uint8), (0, 0), 2)
    cv2.imwrite(str(tmp_path / "colour.png"), colour)
    assert look_of_batch([tmp_path / "colour.png"]).looks_old == 0


def test_auto_is_not_a_file_nor_a_name_a_tuned_model_can_take():
    with pytest.raises(ModelNameError, match="per batch"):
        model_path(AUTO)
    with pytest.raises(ModelNameError, match="choose another name"):
        check_name(" Auto ")


def test_colorize_auto_says_which_model_it_chose_for_the_photos(tmp_path):
    old = _folder(tmp_path, 3, 0, "old")
    p = cli("colorize", old, "--output", tmp_path / "o1", "--size", "64")  # auto: the default
    assert p.returncode == 0, p.stderr
    assert "model old-prints, chosen by the photos' look: 3 of the 3" in p.stdout
    assert "look like scans of old prints" not in p.stdout  # chosen already: no advice
    clean = _folder(tmp_path, 0, 3, "clean")
    p = cli("colorize", clean, "--output", tmp_path / "o2", "--size", "64", "--model", "auto")
    assert p.returncode == 0 and "model shipped, chosen by the photos' look: 0 of the 3" in p.stdout
    p = cli("colorize", clean, "--output", tmp_path / "o3", "--model", "auto", "--weights", BUNDLED[SHIPPED])
    assert p.returncode == 2 and "give one of them" in p.stderr


def test_a_tuned_model_saved_as_auto_is_listed_as_yours_and_unusable(tmp_path, monkeypatch):
    from engine.named_models import list_models

    monkeypatch.setenv("COLORIZER_MODELS_DIR", str(tmp_path))
    (tmp_path / "auto.pt").write_bytes(b"whatever was saved under the name")
    listed = {m.name: m for m in list_models()}
    assert "auto" not in listed and "rename" in listed["auto (yours)"].problem


def test_with_no_photo_readable_the_choice_says_so():
    assert BatchLook(0, 0).line() == "model shipped: no photo could be read before the run to choose by look"


def test_a_cancel_ends_the_look_early(tmp_path):
    folder = _folder(tmp_path, 3, 0, "old")
    asked = []
    look = look_of_batch(sorted(folder.iterdir()), stop=lambda: bool(asked.append(1)) or len(asked) > 1)
    assert look.sampled == 1


def test_each_folder_is_judged_on_its_own_and_a_small_one_follows_the_batch(tmp_path):
    old, clean = _folder(tmp_path, 3, 0, "old"), _folder(tmp_path, 0, 4, "clean")
    few = _folder(tmp_path, 1, 1, "few")  # two photos: too few to judge alone
    paths = [*sorted(old.iterdir()), *sorted(clean.iterdir()), *sorted(few.iterdir())]
    looks = look_by_folder(paths)
    assert looks.mixed and set(looks.own) == {old, clean}
    assert looks.model_of(old / "old0.jpg") == OLD_PRINTS and looks.model_of(clean / "clean0.png") == SHIPPED
    assert (looks.overall.sampled, looks.overall.looks_old) == (9, 4)  # pooled: 4 of 9 old, so the batch's shipped
    assert looks.model_of(few / "old0.jpg") == SHIPPED
    assert looks.main_model == SHIPPED and looks.models == {OLD_PRINTS: [old], SHIPPED: [clean, few]}
    assert looks.why() == ("chosen folder by folder by the photos' look: shipped for 'clean', 'few' (6 photos; 0 of "
                           "the 4 looked at read as old prints); old-prints for 'old' (3 photos; 3 of the 3 looked at "
                           "read as old prints)")  # each model's own folders' looks: 'few' was not judged alone
    run = looks.for_photos([old / "old0.jpg"])  # a run of one of the old photos: told as its own choice
    assert not run.mixed and run.line() == "model old-prints, chosen by the photos' look: 3 of the 3 looked at seem " \
                                           "to be scans of old prints"
    assert looks.breakdown(str.upper).startswith("SHIPPED for")


def test_one_folder_is_one_batch_as_before(tmp_path):
    folder = _folder(tmp_path, 2, 1, "a")
    looks = look_by_folder(sorted(folder.iterdir()))
    assert not looks.mixed and looks.main_model == OLD_PRINTS
    assert looks.line() == look_of_batch(sorted(folder.iterdir())).line()
    single = look_by_folder([folder / "clean0.png"])  # one photo alone is judged, as a preview is
    assert single.own and single.main_model == SHIPPED


def test_many_folders_share_a_bounded_number_of_looks(tmp_path, monkeypatch):
    read = []
    monkeypatch.setattr(model_choice, "decode", lambda path, **kw: read.append(path) or decode(SAMPLES[0]))
    paths = [tmp_path / f"f{i}" / f"p{k}.png" for i in range(40) for k in range(10)]
    looks = look_by_folder(paths)
    assert len(read) <= model_choice.LOOK_BUDGET
    assert len(looks.own) == model_choice.LOOK_BUDGET // model_choice.FOLDER_MIN  # 16 judged alone
    judged = sorted(int(f.name[1:]) for f in looks.own)
    assert judged[0] == 0 and judged[-1] == 39  # spread through the batch, not its first 16
    assert all(looks.model_of(p) == looks.overall.model for p in paths if p.parent not in looks.own)


def test_a_mixed_batch_gives_most_photos_the_model_most_of_them_take():
    a, b, c = Path("/a"), Path("/b"), Path("/c")
    looks = FolderLooks(BatchLook(30, 20), {a: BatchLook(24, 20), b: BatchLook(6, 0)}, {a: 5, b: 50, c: 1})
    assert looks.main_model == SHIPPED  # 50 photos in b, against a's 5 and c's 1 (c follows the pooled look)
    assert looks.model_of(c / "x.jpg") == OLD_PRINTS


def test_colorize_auto_colours_each_folder_with_its_own_model(tmp_path):
    old, clean = _folder(tmp_path, 3, 0, "old"), _folder(tmp_path, 0, 3, "clean")
    common = ["--size", "64", "--precision", "fp32", "--format", "png"]
    p = cli("colorize", old, clean, "--output", tmp_path / "mixed", *common)
    assert p.returncode == 0, p.stderr
    assert "model auto, chosen folder by folder" in p.stdout
    assert "old-prints for 'old' (3 photos; 3 of the 3" in p.stdout
    for folder in (old, clean):
        for model in ("old-prints", "shipped"):  # each folder alone through each model, as its own run
            p = cli("colorize", folder, "--output", tmp_path / model, "--model", model, *common)
            assert p.returncode == 0, p.stderr

    def read(folder, photo):
        return cv2.imread(str(tmp_path / folder / f"{photo.stem}.png")).astype(int)

    for folder, model, other in ((old, "old-prints", "shipped"), (clean, "shipped", "old-prints")):
        for photo in sorted(folder.iterdir()):
            mixed = read(f"mixed/{folder.name}", photo)  # folders given together keep their names
            assert np.abs(mixed - read(model, photo)).max() <= 2 < np.abs(mixed - read(other, photo)).max(), photo


def test_a_folders_photos_are_its_own_images_not_its_subfolders_or_partial_outputs(tmp_path):
    from engine.batch.model_choice import photos_in
    from engine.partials import PARTIAL_MARK

    folder = _folder(tmp_path, 1, 1, "box")
    (folder / "notes.txt").write_text("not a photo")
    (folder / f"half{PARTIAL_MARK}.png").write_bytes(b"being written")
    _folder(folder, 1, 0, "inner")
    assert photos_in(folder) == [folder / "clean0.png", folder / "old0.jpg"]
    assert photos_in(tmp_path / "missing") == []


def test_two_folders_of_one_name_are_told_apart_where_the_choice_names_them():
    from engine.batch.model_choice import _folders

    assert _folders([Path("/a/1950s"), Path("/b/Grandma")]) == "'1950s', 'Grandma'"
    assert _folders([Path("/box1/out"), Path("/box2/out")]) == "'box1/out', 'box2/out'"
