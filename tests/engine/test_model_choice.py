""""auto": the model for a run chosen by how its photos look, and the name kept for it."""

import cv2
import numpy as np
import pytest
from helpers import SAMPLES, old_scan
from test_cli import cli

from engine.batch.model_choice import BatchLook, evenly, look_of_batch
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
