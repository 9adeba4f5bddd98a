"""`tune`: a person's colour photos teach a named model, measured on photos it held out of its own training."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
from helpers import colour_photo, random_model, write_grey

from engine.cli import main as cli_main
from engine.model import with_hint_channels
from engine.named_models import BUNDLED, OLD_PRINTS, list_models, models_dir
from engine.training.tune import (
    MIN_PHOTOS,
    RECIPES,
    TuneError,
    TuneSettings,
    TuneStopped,
    gather,
    held_out,
    run_tune,
    train_settings,
)
from engine.weights import DEFAULT_WEIGHTS, load_model, save_weights


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("COLORIZER_MODELS_DIR", str(tmp_path / "models"))
    return tmp_path / "models"


def _colour_folder(folder: Path, n: int, h: int = 72, w: int = 96) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        assert cv2.imwrite(str(folder / f"p{i:03d}.png"), colour_photo(h, w, seed=i)[..., ::-1])
    return folder


def test_the_held_out_share_is_fixed_by_name_not_by_order_and_never_below_four():
    names = [f"album/{i:03d}.jpg" for i in range(100)]
    out = held_out(names)
    assert len(out) == 15 and out == held_out(list(reversed(names)))
    assert len(held_out(names[:20])) == 5
    assert held_out(names[:40]) != set(sorted(names[:40])[:6])  # by hash, not the first files
    assert len(held_out([f"{i}.jpg" for i in range(5000)])) == 150  # measuring more would run far past the budget


def test_a_photo_given_twice_or_copied_counts_once_and_a_sliver_or_a_non_utf8_name_does_not_stop_a_tune(tmp_path):
    folder = _colour_folder(tmp_path / "album", MIN_PHOTOS)
    (folder / "copy of p000.png").write_bytes((folder / "p000.png").read_bytes())
    assert cv2.imwrite(str(folder / "sliver.png"), np.full((4, 300, 3), (200, 40, 40), np.uint8))
    odd = folder / os.fsdecode(b"Gro\xdfmutter.png")
    odd.write_bytes(cv2.imencode(".png", colour_photo(72, 96, seed=99))[1].tobytes())  # a Latin-1 name
    found = gather([folder, folder / "p002.png", folder])
    assert len(found.photos.names) == MIN_PHOTOS + 1  # the copy and the repeats once, the odd name read
    assert any("sliver" in n for n in found.unreadable)


def test_grey_photos_are_skipped_with_a_note_and_too_few_colour_ones_are_refused(tmp_path):
    folder = _colour_folder(tmp_path / "few", MIN_PHOTOS - 1)
    write_grey(folder / "grey.png", 64, 64)
    with pytest.raises(TuneError, match=f"{MIN_PHOTOS - 1} colour photos"):
        gather([folder])
    _colour_folder(folder, MIN_PHOTOS)
    found = gather([folder])
    assert len(found.photos.names) == MIN_PHOTOS and found.grey == ["few/grey.png"]
    assert "grey" in found.notes()[0]
    with pytest.raises(TuneError, match="no such photo or folder"):
        gather([tmp_path / "missing"])


def test_a_tiny_tune_saves_a_named_model_with_its_held_out_figures_and_leaves_the_shipped_one(store, tmp_path):
    base = tmp_path / "base.pt"
    save_weights(with_hint_channels(random_model(seed=3), 3), base)  # as the shipped model: it reads hints
    shipped_hash = hashlib.sha256(DEFAULT_WEIGHTS.read_bytes()).hexdigest()
    photos = _colour_folder(tmp_path / "family", 24)
    events: list[dict] = []
    card = run_tune(TuneSettings(photos=[photos], name="family", minutes=0.02, base=base, batch=2, crop=64,
                                 working_size=128, examples=2, threads=2), on_progress=events.append)
    held = card["tune"]["heldout"]
    assert held["photos"] == 5 and len(held["names"]) == 5 and held["verdict"] in ("better", "worse", "within chance")
    assert card["tune"]["trained_on"] == 19 and card["tune"]["steps"] >= 1
    assert card["tune"]["degrade_share"] == 0.0  # a start trained on clean crops alone: so is its tune
    assert all(Path(e[k]).is_file() for e in held["examples"] for k in ("original", "start", "tuned"))
    assert [e["event"] for e in events][0] == "photos" and "measuring" in [e["event"] for e in events]
    assert (models_dir() / "family.pt").is_file() and "family" in [m.name for m in list_models()]
    assert json.loads((models_dir() / "family.json").read_text())["tune"]["heldout"]["photos"] == 5
    assert hashlib.sha256(DEFAULT_WEIGHTS.read_bytes()).hexdigest() == shipped_hash


def test_a_tune_trains_on_old_print_scans_as_its_start_model_was_trained_and_its_card_passes_that_on(tmp_path):
    """Old prints learnt from crops degraded as scans; a tune from it on clean photos alone would wear that away."""
    def settings(base: Path, **kw: float) -> tuple[float, float]:
        ts = train_settings(TuneSettings(photos=[tmp_path], name="t", base=base, **kw), RECIPES["r2"], tmp_path,
                            tmp_path / "t.pt")
        return ts.degrade_share, ts.degrade_strength

    assert settings(BUNDLED[OLD_PRINTS])[0] > 0 and settings(DEFAULT_WEIGHTS) == (0.0, 1.0)
    trained = tmp_path / "trained.pt"
    save_weights(random_model(seed=5), trained, meta={"card": json.dumps({"settings": {"degrade_share": 0.4,
                                                                                       "degrade_strength": 0.7}})})
    assert settings(trained) == (0.4, 0.7)
    assert settings(trained, degrade_share=0.0) == (0.0, 0.7)  # asked for: a clean tune
    tuned = tmp_path / "tuned.pt"  # a taught model's card says what its tune used, so a tune from it goes on alike
    save_weights(random_model(seed=5), tuned, meta={"card": json.dumps({"tune": {"degrade_share": 0.4,
                                                                                 "degrade_strength": 0.7}})})
    assert settings(tuned) == (0.4, 0.7)
    older = tmp_path / "older.pt"  # taught before tunes recorded it: it goes by the model it started from
    save_weights(random_model(seed=5), older, meta={"card": json.dumps({"tune": {"start": str(trained)}})})
    assert settings(older) == (0.4, 0.7)


def test_the_default_recipe_keeps_the_start_models_batchnorm_statistics_and_r1_does_not(store, tmp_path):
    """A probe (docs/experiments): updating them alone over 12 batches of a person's photos cost 1.6 dB."""
    base = tmp_path / "base.pt"
    save_weights(with_hint_channels(random_model(seed=4), 3), base)
    photos = _colour_folder(tmp_path / "family", 20)
    start = load_model(base).state_dict()
    stats = [k for k in start if k.endswith("running_mean") and k.startswith(("dec", "refine"))]
    for recipe, kept in (("r2", True), ("r1", False)):
        run_tune(TuneSettings(photos=[photos], name=recipe, minutes=0.02, base=base, batch=2, crop=64,
                              working_size=96, examples=1, recipe=recipe, threads=2))
        tuned = load_model(models_dir() / f"{recipe}.pt").state_dict()
        assert stats and all(torch.equal(tuned[k], start[k]) for k in stats) == kept, recipe


def test_the_command_line_names_models_lists_them_and_refuses_an_unknown_one_in_one_line(store, tmp_path, capsys):
    assert cli_main(["models"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[0].startswith("auto: the default") and listed[1].startswith("shipped:")
    write_grey(tmp_path / "in" / "a.png", 32, 32)
    code = cli_main(["colorize", str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--model", "nobody"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "nobody" in err and "shipped" in err
    assert not (tmp_path / "out").exists()
    code = cli_main(["tune", str(_colour_folder(tmp_path / "few", 3)), "--name", "x"])
    assert code == 2 and "at least" in capsys.readouterr().err
    assert np.array_equal(sorted(m.name for m in list_models()), ["old-prints", "shipped"])


def test_a_stopped_tune_saves_nothing_under_its_name_and_resume_goes_on_from_its_steps(store, tmp_path):
    base = tmp_path / "base.pt"
    save_weights(with_hint_channels(random_model(seed=5), 3), base)
    photos = _colour_folder(tmp_path / "family", 20)
    steps: list[int] = []

    def stop_after_three() -> bool:
        return len(steps) >= 3

    settings = TuneSettings(photos=[photos], name="later", minutes=5, base=base, batch=2, crop=64, working_size=96,
                            examples=1, threads=2)
    with pytest.raises(TuneStopped, match="--resume"):
        run_tune(settings, stop=stop_after_three, on_progress=lambda e: e["event"] == "step" and steps.append(1))
    assert not (models_dir() / "later.pt").exists() and (models_dir() / "later.work" / "checkpoint.pt").is_file()
    with pytest.raises(TuneError, match="no stopped tune"):
        run_tune(replace(settings, name="never-started", resume=True))
    card = run_tune(replace(settings, resume=True, minutes=0.02))
    assert card["tune"]["steps"] - card["tune"]["steps_this_run"] == 3  # it went on from the third step
    work = models_dir() / "later.work"
    assert not (work / "checkpoint.pt").exists() and any((work / "heldout").iterdir())  # done: the pictures stay
