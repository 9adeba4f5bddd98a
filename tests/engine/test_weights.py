"""Weight files: round trip in fp16, clear errors, and no code execution from a file."""

import pickle

import pytest
import torch
from helpers import random_model

from engine.weights import DEFAULT_WEIGHTS, WeightsError, load_model, save_weights


def test_save_and_load_round_trip_in_fp16(tmp_path):
    model = random_model()
    path = tmp_path / "m.pt"
    save_weights(model, path, meta={"card": "{}"})
    blob = torch.load(path, weights_only=True)
    assert all(v.dtype == torch.float16 for k, v in blob["state"].items() if v.is_floating_point() and k != "bins")
    loaded = load_model(path)
    for (k, a), b in zip(model.state_dict().items(), loaded.state_dict().values(), strict=True):
        if a.is_floating_point():
            assert torch.allclose(a, b, atol=2e-3 * (1 + a.abs().max().item())), k


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(WeightsError, match="not found"):
        load_model(tmp_path / "none.pt")


def test_damaged_file_is_a_clear_error(tmp_path):
    path = tmp_path / "m.pt"
    save_weights(random_model(), path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(WeightsError, match="damaged"):
        load_model(path)


class Evil:
    def __reduce__(self):
        return (exec, ("open('PWNED', 'w').write('x')",))


def test_a_weights_file_cannot_run_code(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "evil.pt"
    with open(path, "wb") as f:
        pickle.dump({"format": "colorizer-weights", "state": Evil()}, f)
    with pytest.raises(WeightsError):
        load_model(path)
    assert not (tmp_path / "PWNED").exists()


def test_a_foreign_file_is_refused(tmp_path):
    path = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(3)}, path)
    with pytest.raises(WeightsError, match="not a Colorizer weights file"):
        load_model(path)


@pytest.mark.skipif(not DEFAULT_WEIGHTS.exists(), reason="trained weights not committed yet")
def test_shipped_weights_load_and_are_small():
    assert DEFAULT_WEIGHTS.stat().st_size < 20 * 2**20
    model = load_model()
    assert model.bins.abs().sum() > 0  # bins were fitted, not left at zero
