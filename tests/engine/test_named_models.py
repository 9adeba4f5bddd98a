import json
from pathlib import Path

import pytest
import torch
from helpers import random_model

from engine.named_models import (
    OLD_PRINTS,
    SHIPPED,
    ModelNameError,
    check_name,
    delete_model,
    list_models,
    model_path,
    new_model_path,
)
from engine.weights import DEFAULT_WEIGHTS, load_model, save_weights


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("COLORIZER_MODELS_DIR", str(tmp_path / "models"))
    return tmp_path / "models"


def test_the_shipped_model_is_listed_first_and_is_the_default(store):
    models = list_models()
    assert [m.name for m in models] == [SHIPPED, OLD_PRINTS]
    assert model_path(None) == model_path("shipped") == model_path(" Shipped ") == DEFAULT_WEIGHTS
    assert not models[0].problem


def test_the_old_prints_model_comes_with_the_app_and_is_its_own_weights(store):
    entry = [m for m in list_models() if m.name == OLD_PRINTS][0]
    assert entry.bundled and not entry.problem and "old prints" in entry.line()
    assert model_path("old-prints") == model_path(" Old-Prints ") == entry.path != DEFAULT_WEIGHTS
    assert entry.card["readout"]["chosen_on"] == "the teacher's, kept"  # a student of the shipped model
    shipped, old = load_model(DEFAULT_WEIGHTS), load_model(entry.path)
    assert shipped.config == old.config
    assert any(not torch.equal(a, b) for a, b in zip(shipped.state_dict().values(), old.state_dict().values(),
                                                      strict=True))


def test_a_tuned_model_saved_under_a_name_now_bundled_is_listed_as_yours_with_how_to_get_it_back(store):
    store.mkdir(parents=True)
    save_weights(random_model(), store / "old-prints.pt")
    models = list_models()
    assert [m.name for m in models] == [SHIPPED, OLD_PRINTS, "old-prints (yours)"]
    assert models[2].path == store / "old-prints.pt" and "rename old-prints.pt" in models[2].line()
    assert model_path("old-prints") != store / "old-prints.pt"  # the name means the bundled model
    with pytest.raises(ModelNameError):
        delete_model("old-prints")


def test_a_tuned_model_is_found_by_name_and_listed_with_its_measured_gain(store):
    path = new_model_path("Grandma's house".replace("'", ""))
    card = {"tune": {"photos": 60, "folders": "/photos/colour", "minutes": 10,
                     "heldout": {"photos": 9, "gain_db": 0.72}}}
    save_weights(random_model(), path, {"card": json.dumps(card)})
    assert model_path("Grandmas house") == path
    line = [m for m in list_models() if m.name == "Grandmas house"][0].line()
    assert "60 photos" in line and "+0.72 dB" in line and "9 held-out" in line


def test_a_model_tuned_from_another_start_says_what_its_gain_is_against(store, tmp_path):
    path = new_model_path("scans")
    card = {"tune": {"photos": 40, "start": str(tmp_path / "old-prints.pt"), "heldout": {"photos": 7, "gain_db": 0.3}}}
    save_weights(random_model(), path, {"card": json.dumps(card)})
    line = [m for m in list_models() if m.name == "scans"][0].line()
    assert "against its start (old-prints)" in line and "shipped" not in line


def test_tune_base_takes_a_models_name_or_a_file_and_refuses_an_unknown_one(store, tmp_path):
    from engine.cli.tune import base_weights

    assert base_weights(None) is None
    assert base_weights("old-prints") == model_path(OLD_PRINTS)
    weights = tmp_path / "mine.pt"
    save_weights(random_model(), weights)
    assert base_weights(str(weights)) == weights
    with pytest.raises(ModelNameError):
        base_weights("nobody")


def test_an_unknown_name_is_a_one_line_error_naming_the_models_there_are(store):
    with pytest.raises(ModelNameError) as err:
        model_path("nobody")
    assert "\n" not in str(err.value) and "nobody" in str(err.value) and "shipped" in str(err.value)


def test_a_damaged_model_file_is_listed_as_unusable_and_refused_in_one_line(store):
    store.mkdir(parents=True)
    (store / "broken.pt").write_bytes(b"not a weights file")
    entry = [m for m in list_models() if m.name == "broken"][0]
    assert entry.problem and "unusable" in entry.line()
    with pytest.raises(ModelNameError) as err:
        model_path("broken")
    assert "\n" not in str(err.value)
    assert model_path(SHIPPED) == DEFAULT_WEIGHTS  # the shipped model stays usable


@pytest.mark.parametrize("name", ["shipped", "SHIPPED", "old-prints", " Old-Prints", "", "../escape", "a/b", "x" * 64,
                                  "trailing."])
def test_names_that_would_overwrite_a_bundled_model_or_escape_the_folder_are_refused(store, name):
    with pytest.raises(ModelNameError):
        check_name(name)


def test_a_taken_name_is_refused_unless_replacing_and_delete_removes_the_card_too(store):
    path = new_model_path("family")
    save_weights(random_model(), path)
    path.with_suffix(".json").write_text("{}")
    (path.with_suffix(".work") / "heldout").mkdir(parents=True)
    with pytest.raises(ModelNameError, match="exists already"):
        new_model_path("family")
    assert new_model_path("family", replace=True) == path
    delete_model("family")
    assert not path.exists() and not path.with_suffix(".json").exists() and not path.with_suffix(".work").exists()
    with pytest.raises(ModelNameError):
        delete_model(SHIPPED)
    assert DEFAULT_WEIGHTS.is_file()
