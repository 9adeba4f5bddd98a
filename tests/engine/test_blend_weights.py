import importlib.util
from pathlib import Path

import pytest
import torch
from helpers import ROOT, random_model

from engine.model import CVUNet, ModelConfig
from engine.weights import load_model, save_weights, weights_meta

spec = importlib.util.spec_from_file_location("blend_weights", ROOT / "tools" / "blend_weights.py")
blend_weights = importlib.util.module_from_spec(spec)
spec.loader.exec_module(blend_weights)


def _two_files(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.pt", tmp_path / "b.pt"
    save_weights(random_model(seed=1), a, {"settings": {"lr": 1}})
    save_weights(random_model(seed=2), b, {"settings": {"lr": 2}})
    return a, b


def test_a_blend_is_each_tensor_between_its_two_parents_at_the_share_asked(tmp_path):
    a, b = _two_files(tmp_path)
    blend_weights.blend(a, b, 0.25, tmp_path / "mix.pt")
    sa, sb, sm = (load_model(p).state_dict() for p in (a, b, tmp_path / "mix.pt"))
    key = "encoder._conv_stem.weight"
    expected = (0.75 * sa[key] + 0.25 * sb[key]).half().float()  # the file is fp16
    assert torch.allclose(sm[key], expected, atol=2e-3)
    assert torch.equal(sm["bins"], sa["bins"])  # the colour bins are a table, not a weight: kept from A
    assert weights_meta(tmp_path / "mix.pt")["blend"]["t"] == 0.25


def test_blending_at_the_ends_gives_back_a_parent(tmp_path):
    a, b = _two_files(tmp_path)
    for t, parent in ((0.0, a), (1.0, b)):
        blend_weights.blend(a, b, t, tmp_path / "end.pt")
        got, want = load_model(tmp_path / "end.pt").state_dict(), load_model(parent).state_dict()
        assert all(torch.allclose(got[k].float(), want[k].float(), atol=1e-3) for k in want if k != "bins")


def test_two_architectures_do_not_blend(tmp_path):
    a, _ = _two_files(tmp_path)
    other = tmp_path / "other.pt"
    save_weights(CVUNet(ModelConfig(num_bins=40, decoder=(64, 48, 32))).eval(), other)
    with pytest.raises(SystemExit, match="not the same architecture"):
        blend_weights.blend(a, other, 0.5, tmp_path / "mix.pt")
