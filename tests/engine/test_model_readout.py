"""The read-out (engine/readout.py): one definition of how the ab distribution becomes colours.

The fused runtime keeps its own fast read-out, held here to ``Readout.apply`` in fp32 (pinned: "auto"
may pick bf16 on this CPU). Weights files keep the read-out flat beside the architecture, as they
always have, so files of every age load with their own read-out.
"""

from dataclasses import fields

import cv2
import numpy as np
import pytest
import torch
from helpers import grey_photo, random_model

from engine.colorizer import pack, prepare
from engine.hints import HintSpread
from engine.model import ModelConfig
from engine.readout import Readout, spread_of
from engine.runtimes.base import AGREEMENT
from engine.runtimes.optimized import OptimizedRuntime
from engine.weights import DEFAULT_WEIGHTS, load_model, read_weights, save_weights

FP32_TOL = AGREEMENT["fp32"].max_abs
CPU = torch.device("cpu")
# What ModelConfig held before the read-out left it (its defaults then), in its stored names.
OLD_DEFAULTS = {"temperature": 0.38, "chroma_gain": 1.0, "doubt_pull": 0.0, "hint_spread": 0.0,
                "hint_spread_lightness": 10.0, "hint_spread_floor": 0.05, "hint_gain": 1.0, "hint_spread_colour": 0.0,
                "hint_spread_fade": 0.0, "hint_spread_restraint": 0.0}  # the last two came later; 0: as it was


def sharp_model(readout: Readout):
    """A random model with a sharper head (sure in some places, unsure in others, as a trained one is)."""
    m = random_model(seed=3)
    with torch.no_grad():
        m.head.weight.mul_(8.0)
    m.readout = readout
    return m


@pytest.mark.parametrize("readout", [Readout(), Readout(temperature=0.5, doubt_pull=4.0, chroma_gain=1.2),
                                     Readout(temperature=0.7, doubt_pull=32.0, chroma_gain=0.8)])
def test_the_fused_read_out_equals_readout_apply(readout):
    model = sharp_model(readout)
    L = pack([prepare(grey_photo(h, w, i), 96) for i, (h, w) in enumerate([(64, 96), (40, 80)])])
    with torch.no_grad():
        logits, ab = model.forward_train(torch.from_numpy(L))
        want = readout.apply(ab, logits, model.bins).numpy()
        unread = ab.numpy()
    got = OptimizedRuntime(model, CPU, "fp32").run(L)
    assert got.shape == want.shape and np.abs(want).max() > 1.0
    assert np.abs(got - want).max() <= FP32_TOL
    if readout.doubt_pull or readout.chroma_gain != 1.0:  # the read-out did something the fused path matched
        assert np.abs(want - unread).max() > 10 * FP32_TOL


def test_model_config_has_no_read_out_field():
    names = {f.name for f in fields(ModelConfig)}
    assert names.isdisjoint(OLD_DEFAULTS) and names.isdisjoint({f.name for f in fields(Readout)})
    assert not hasattr(ModelConfig(), "spread")


def test_the_read_out_keeps_the_defaults_model_config_had():
    assert Readout().to_dict() == OLD_DEFAULTS and Readout.from_dict({}) == Readout()


def test_the_read_out_dict_round_trips():
    r = Readout(temperature=0.5, doubt_pull=3.0, chroma_gain=1.1, spread=HintSpread(0.3, 5.0, 0.2, 1.3, 10.0))
    assert Readout.from_dict(r.to_dict()) == r
    assert Readout.from_dict({**ModelConfig().to_dict(), **r.to_dict()}) == r  # architecture keys ignored
    assert ModelConfig.from_dict({**ModelConfig().to_dict(), **r.to_dict()}) == ModelConfig()


def test_a_saved_model_loads_with_its_read_out_and_the_file_keeps_the_flat_layout(tmp_path):
    model = random_model()
    model.readout = Readout(temperature=0.45, doubt_pull=8.0, chroma_gain=1.3,
                            spread=HintSpread(0.2, 20.0, 0.02, 1.1, 5.0))
    save_weights(model, tmp_path / "w.pt")
    loaded = load_model(tmp_path / "w.pt")
    assert loaded.readout == model.readout and loaded.config == model.config
    config = read_weights(tmp_path / "w.pt")["config"]  # what every earlier version reads
    assert set(config) == {f.name for f in fields(ModelConfig)} | set(OLD_DEFAULTS)


def test_an_old_layout_weights_file_loads_with_its_read_out(tmp_path):
    model = random_model()
    arch = ModelConfig(num_bins=40).to_dict()
    # As ModelConfig.to_dict wrote it before: the read-out fields inside the architecture's, in its order.
    old = {**{k: arch[k] for k in list(arch)[:8]}, "temperature": 0.7, "chroma_gain": 1.2, "doubt_pull": 32.0,
           "hint_spread": 0.6, "hint_spread_lightness": 10.0, "hint_spread_floor": 0.02, "hint_gain": 1.4,
           "hint_spread_colour": 5.0, **{k: arch[k] for k in list(arch)[8:]}}
    state = {k: v.half() if v.is_floating_point() and k != "bins" else v for k, v in model.state_dict().items()
             if not k.endswith("num_batches_tracked")}
    torch.save({"format": "colorizer-weights", "version": 1, "config": old, "state": state, "meta": {}},
               tmp_path / "old.pt")
    loaded = load_model(tmp_path / "old.pt")
    assert loaded.config == ModelConfig(num_bins=40)
    assert loaded.readout == Readout(temperature=0.7, doubt_pull=32.0, chroma_gain=1.2,
                                     spread=HintSpread(0.6, 10.0, 0.02, 1.4, 5.0))
    # A file from before the read-out settings existed: the defaults they had.
    older = {k: v for k, v in old.items() if k not in OLD_DEFAULTS}
    torch.save({"format": "colorizer-weights", "version": 1, "config": older, "state": state, "meta": {}},
               tmp_path / "older.pt")
    assert load_model(tmp_path / "older.pt").readout == Readout()


@pytest.mark.skipif(not DEFAULT_WEIGHTS.exists(), reason="trained weights not committed")
def test_the_shipped_weights_load_with_the_read_out_they_store():
    stored = read_weights(DEFAULT_WEIGHTS)["config"]
    assert load_model().readout.to_dict() == {k: stored.get(k, OLD_DEFAULTS[k]) for k in OLD_DEFAULTS}


@pytest.mark.parametrize("name", ["shipped", "old-prints"])
def test_each_bundled_model_runs_the_hint_spread_its_card_says_was_chosen(name):
    """A spread chosen again (Old prints' restraint, 2026-12-07) reaches the weights, not only the card."""
    import json

    from engine.named_models import BUNDLED, OLD_PRINTS, SHIPPED

    path = BUNDLED[{"shipped": SHIPPED, "old-prints": OLD_PRINTS}[name]]
    if not path.exists():
        pytest.skip("trained weights not committed")
    chosen = json.loads(read_weights(path)["meta"]["card"])["readout"]["hint_spread"]
    assert load_model(path).readout.spread == spread_of(chosen)
    assert (load_model(path).readout.spread.restraint > 0) is (name == "old-prints")


def test_a_spread_search_row_gives_its_hint_spread_gain_included():
    row = {"reach": 0.45, "lightness": 5.0, "floor": 0.2, "gain": 1.3, "colour": 20.0, "psnr": 30.0}
    assert spread_of(row) == HintSpread(0.45, 5.0, 0.2, 1.3, 20.0)  # a row from before "fade": the form before
    assert spread_of({**row, "fade": 1.0}) == HintSpread(0.45, 5.0, 0.2, 1.3, 20.0, 1.0)
    assert spread_of({**row, "fade": 1.0, "restraint": 40.0}) == HintSpread(0.45, 5.0, 0.2, 1.3, 20.0, 1.0, 40.0)


@pytest.mark.parametrize("pull", [0.0, 8.0])
def test_the_doubt_map_is_the_share_of_colour_the_doubt_pull_takes_at_each_pixel(pull):
    from engine.colorizer import Colorizer
    from engine.options import ColorizeSettings
    from engine.readout import AB_RANGE, DISPLAY_PULL

    model = random_model(seed=3)
    model.readout = Readout(temperature=0.5, doubt_pull=pull)
    c = Colorizer.create(ColorizeSettings(device="cpu", precision="fp32", size=64), model=model)
    image = grey_photo(48, 64, seed=2)  # its own working size: the map is the quarter-size one, upsampled
    doubt = c.doubt(image)
    assert doubt.shape == image.shape[:2] and doubt.dtype == np.float32
    assert 0.0 <= doubt.min() and doubt.max() <= 1.0 and doubt.max() - doubt.min() > 1e-3
    with torch.no_grad():
        probs = model.ab_distribution(torch.from_numpy(pack([prepare(image, 64)])))[0].double()
    centres = model.bins.double()
    mean = torch.einsum("qhw,qc->chw", probs, centres)
    variance = torch.einsum("qhw,qc->hw", probs, centres**2) - (mean**2).sum(0)
    expected = (1 - 1 / (1 + (pull or DISPLAY_PULL) / AB_RANGE**2 * variance))[:12, :16].float().numpy()
    upsampled = cv2.resize(np.ascontiguousarray(expected), (64, 48), interpolation=cv2.INTER_LINEAR)
    np.testing.assert_allclose(doubt, upsampled, atol=1e-3)


def test_a_hint_takes_the_doubt_away_where_it_decides_the_colour_and_leaves_it_far_away():
    from engine.colorizer import Colorizer
    from engine.hints import Hint, HintSpread
    from engine.model import with_hint_channels
    from engine.options import ColorizeSettings

    model = with_hint_channels(random_model(seed=3), 3)  # its hint inputs at zero: the network's doubt unchanged
    model.readout = Readout(temperature=0.5, doubt_pull=8.0, spread=HintSpread(reach=0.1, lightness=50.0,
                                                                               floor=0.05, colour=0.0))
    c = Colorizer.create(ColorizeSettings(device="cpu", precision="fp32", size=64), model=model)
    image = grey_photo(64, 64, seed=2)
    alone = c.doubt(image)
    hinted = c.doubt(image, [Hint(0.25, 0.25, (200, 40, 40))])
    assert hinted[16, 16] < 0.1 * alone[16, 16]  # the hint's colour, not the network's guess
    assert np.allclose(hinted[56:, 56:], alone[56:, 56:], atol=1e-3)  # far beyond its reach: as it was
