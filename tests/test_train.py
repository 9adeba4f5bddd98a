"""The training command: runs, checkpoints, resumes, is deterministic, fine-tunes, writes a card."""

import json

import cv2
import pytest
import torch
from helpers import colour_photo

from engine.train import TrainSettings, train
from engine.weights import load_model, weights_meta


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    folder = tmp_path_factory.mktemp("photos")
    for i in range(8):
        cv2.imwrite(str(folder / f"p{i}.jpg"), cv2.cvtColor(colour_photo(90 + 7 * i, 120, i), cv2.COLOR_RGB2BGR))
    grey = colour_photo(80, 80, 99).mean(axis=2).astype("uint8")
    cv2.imwrite(str(folder / "grey.png"), grey)  # nearly grey photos are skipped
    return folder


def tiny(photos, tmp, **kw):
    base = dict(data=photos, out=tmp / "w.pt", work=tmp / "work", steps=4, batch=2, size=64, freeze_steps=2,
                val_every=2, seed=3, threads=1)
    base.update(kw)
    return TrainSettings(**base)


def test_training_writes_loadable_weights_and_a_model_card(photos, tmp_path):
    card = train(tiny(photos, tmp_path))
    assert card["steps"] == 4 and card["data"]["train_photos"] + card["data"]["validation_photos"] == 8
    model = load_model(tmp_path / "w.pt")
    assert model.config.num_bins == card["bins"] > 1
    assert json.loads(weights_meta(tmp_path / "w.pt")["card"])["steps"] == 4
    assert (tmp_path / "w.json").exists() and "steps of batch" in (tmp_path / "w.md").read_text()


def test_same_seed_gives_the_same_model(photos, tmp_path):
    train(tiny(photos, tmp_path / "a"))
    train(tiny(photos, tmp_path / "b"))
    a = load_model(tmp_path / "a" / "w.pt").state_dict()
    b = load_model(tmp_path / "b" / "w.pt").state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_resume_continues_from_the_checkpoint(photos, tmp_path):
    train(tiny(photos, tmp_path, steps=2))
    card = train(tiny(photos, tmp_path, steps=4, resume=True))
    assert card["steps"] == 4
    assert [h["step"] for h in card["history"]] == [2, 4]  # the first run's history was kept


def test_time_budget_stops_early_and_still_saves(photos, tmp_path):
    card = train(tiny(photos, tmp_path, steps=10_000, max_minutes=0.0))
    assert card["stopped_by_time_budget"] and card["steps"] < 10_000
    assert (tmp_path / "w.pt").exists()


def test_fine_tuning_starts_from_given_weights(photos, tmp_path):
    train(tiny(photos, tmp_path / "first"))
    base = load_model(tmp_path / "first" / "w.pt")
    card = train(tiny(photos, tmp_path / "ft", init=tmp_path / "first" / "w.pt", steps=1))
    assert card["started_from"]["steps"] == 4  # the card keeps the lineage
    assert "2. 1 steps" in (tmp_path / "ft" / "w.md").read_text()
    tuned = load_model(tmp_path / "ft" / "w.pt")
    assert torch.equal(base.bins, tuned.bins)
    # One small step moves the weights a little, not back to a fresh start.
    w0, w1 = base.dec2.conv1[0].weight, tuned.dec2.conv1[0].weight
    assert not torch.equal(w0, w1)
    assert (w0 - w1).abs().max() < 0.05
