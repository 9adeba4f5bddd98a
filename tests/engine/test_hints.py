"""Colour hints: the hint map, hinted models in both runtimes, the engine API, suggestions and training."""

from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
from helpers import ROOT, colour_photo, random_model, write_grey

from engine.color import AB_RANGE, lightness, rgb_to_lab
from engine.colorizer import Colorizer, pack, pack_hints, prepare, spread_on_half, unpack
from engine.devices import cpu_has_fast_bf16
from engine.hints import (
    Hint,
    HintSpread,
    fit_chroma,
    hint_map,
    hint_share,
    sample_hints,
    simulate_hints,
    spread_hints,
)
from engine.model import CVUNet, hint_features, with_hint_channels, with_hint_decoder
from engine.options import ColorizeSettings
from engine.runtimes import make_runtime
from engine.runtimes.base import AGREEMENT, ab_difference
from engine.weights import load_model, read_weights, save_weights

SAMPLE = ROOT / "resources" / "samples" / "mountains.jpg"


def hinted_model(stem_scale: float = 0.5, decoder: bool = False) -> CVUNet:
    """A random hinted model; stem_scale 0 keeps the hint inputs' weights (stem and decoder) at their zero start."""
    m = with_hint_channels(random_model(), 3)
    if decoder:
        m = with_hint_decoder(m)
    if stem_scale:
        g = torch.Generator().manual_seed(1)
        with torch.no_grad():
            m.encoder._conv_stem.weight[:, 1:].normal_(0, stem_scale, generator=g)
            if decoder:
                for conv in (*(st.conv1[0] for st in m.decoder_stages()), m.refine.conv1):
                    conv.weight[:, -6:].normal_(0, stem_scale, generator=g)
    return m.eval()


def batch(n=2, h=64, w=96):
    L = (np.random.default_rng(0).random((n, 1, h, w)) * 100).astype(np.float32)
    hints = [Hint(0.3, 0.4, (200, 40, 40)), Hint(0.8, 0.2, (30, 60, 200))]
    return L, np.stack([hint_map(hints, h, w)] * n)


def test_hint_map_puts_the_colours_chroma_and_a_mask_at_its_pixel():
    hint = Hint(0.25, 0.5, (200, 30, 30))
    m = hint_map([hint], 40, 80, radius=0)
    lab = rgb_to_lab(np.array([[hint.rgb]], np.uint8))[0, 0]
    assert m.shape == (3, 40, 80) and m.dtype == np.float32
    assert np.argwhere(m[2] == 1).tolist() == [[20, 20]] and m[2].sum() == 1
    assert np.allclose(m[:2, 20, 20], lab[1:] / AB_RANGE) and np.abs(m[:2]).sum() == pytest.approx(
        np.abs(lab[1:] / AB_RANGE).sum())
    assert hint_map([hint], 40, 80, radius=2)[2].sum() == 25
    assert not hint_map([], 40, 80).any()
    with pytest.raises(ValueError):
        Hint(1.2, 0.5, (0, 0, 0))
    with pytest.raises(ValueError):
        Hint(0.5, 0.5, (0, 0, 300))


def test_a_colour_too_vivid_for_the_lightness_there_keeps_its_hue_with_less_chroma():
    yellow = Hint(0.5, 0.5, (255, 230, 0))
    (a0, b0), dark = yellow.ab(), np.full((8, 8), 20.0, np.float32)
    a, b = hint_map([yellow], 8, 8, L=dark, radius=0)[:2, 4, 4] * AB_RANGE
    assert 0 < np.hypot(a, b) < 0.6 * np.hypot(a0, b0)
    assert np.arctan2(b, a) == pytest.approx(np.arctan2(b0, a0), abs=0.02)
    grey_ok = fit_chroma(np.array([50.0], np.float32), np.array([[10.0, -5.0]], np.float32))
    assert np.allclose(grey_ok, [[10.0, -5.0]])  # in gamut: left as it is


def test_hint_points_stay_on_their_pixels_through_the_canvas_padding():
    items = [prepare(colour_photo(100, 60, 1), 512), prepare(colour_photo(64, 130, 2), 512)]
    hints = [[Hint(0.9, 0.95, (250, 20, 20))], [Hint(0.05, 0.5, (20, 20, 250))]]
    canvas, maps = pack(items), pack_hints(items, hints)
    assert maps is not None and maps.shape == (2, 3, *canvas.shape[2:])
    for item, (hint,), m in zip(items, hints, maps, strict=True):
        h, w = item.small.shape
        r, c = int(hint.y * h), int(hint.x * w)
        assert m[2, r, c] == 1 and m[2, h:].sum() == 0 and m[2, :, w:].sum() == 0
        assert np.array_equal(m[:, :h, :w], hint_map([hint], h, w, L=item.small))  # as if alone, unpadded
        assert m[0, r, c] != 0 or m[1, r, c] != 0
    assert pack_hints(items, [[], []]) is None and pack_hints(items, None) is None


def test_training_hints_are_patch_means_of_the_true_colours_and_absent_about_half_the_time():
    ab = np.random.default_rng(0).normal(0, 30, (2, 48, 48)).astype(np.float32)
    maps = [sample_hints(ab, np.random.default_rng(i)) for i in range(200)]
    none = sum(not m[2].any() for m in maps)
    assert 70 < none < 130
    m = next(m for m in maps if m[2].any())
    r, c = np.argwhere(m[2] == 1)[0]
    assert np.abs(m[:2, r, c]).max() <= np.abs(ab).max() / AB_RANGE  # a mean of the true ab, not beyond it
    assert np.array_equal(sample_hints(ab, np.random.default_rng(5)), sample_hints(ab, np.random.default_rng(5)))
    hints = simulate_hints(colour_photo(60, 80, 3), 4, seed=7)
    assert len(hints) == 4 and hints == simulate_hints(colour_photo(60, 80, 3), 4, seed=7)


@pytest.mark.parametrize("decoder", [False, True], ids=["stem", "stem+decoder"])
def test_optimized_runtime_agrees_with_the_baseline_for_a_hinted_model_at_fp32(decoder):
    m = hinted_model(decoder=decoder)
    L, H = batch()
    base, opt = make_runtime("baseline", m, "cpu"), make_runtime("optimized", m, "cpu", "fp32")
    bound = AGREEMENT["fp32"]
    for hints in (H, None, H):  # a call without hints after one with them: no hint left in the reused buffers
        p999, worst = ab_difference(opt.run(L, hints), base.run(L, hints))
        assert p999 <= bound.p999 and worst <= bound.max_abs
    assert np.abs(base.run(L, H) - base.run(L)).max() > 0.1  # the hints do change the colours


@pytest.mark.parametrize("decoder", [False, True], ids=["stem", "stem+decoder"])
def test_hint_inputs_at_their_zero_start_change_nothing(decoder):
    m = hinted_model(stem_scale=0, decoder=decoder)
    L, H = batch()
    base = make_runtime("baseline", m, "cpu")
    assert np.array_equal(base.run(L, H), base.run(L))
    # The optimized runtime runs a photo without hints through convolutions without the hint inputs: the same
    # sums in another order, equal within fp32 rounding.
    opt = make_runtime("optimized", m, "cpu", "fp32")
    assert np.abs(opt.run(L, H) - opt.run(L)).max() <= 1e-5


def test_adding_the_hint_decoder_keeps_every_output_and_it_is_saved_with_the_weights(tmp_path):
    m = hinted_model()
    d = with_hint_decoder(m).eval()
    L, H = batch()
    for hints in (None, H):
        assert np.array_equal(make_runtime("baseline", d, "cpu").run(L, hints),
                              make_runtime("baseline", m, "cpu").run(L, hints))
    save_weights(d, tmp_path / "d.pt")
    again = load_model(tmp_path / "d.pt")
    assert again.config.hint_decoder and again.refine.conv1.weight.shape[1] == d.refine.conv1.weight.shape[1]
    with pytest.raises(ValueError):
        with_hint_decoder(random_model())  # no hint channels to feed it


def test_hint_features_carry_a_hints_colour_to_its_cell_and_its_surroundings_at_any_size():
    hint = Hint(0.3, 0.3, (200, 40, 40))  # inside one 16 px cell at both sizes
    a_want = hint_map([hint], 64, 64, radius=0)[0, 19, 19]
    for size in (64, 128):  # a training crop and a working size: the same relative picture
        m = torch.from_numpy(hint_map([hint], size, size, radius=1))[None]
        f = hint_features(m, (size // 16, size // 16)).numpy()[0]
        cell = (size // 16) // 4
        assert f[2, cell, cell] == 1 and f[2].sum() == 1  # present in its own cell only
        assert f[0, cell, cell] == pytest.approx(a_want, rel=0.05)  # the mean a of the hinted pixels
        assert f[5].sum() > f[2].sum() and f[5, cell + 1, cell] == 1  # spread to the neighbours
        assert f[3, cell + 1, cell] == pytest.approx(a_want, rel=0.05) and f[5, -1, -1] == 0  # not everywhere
    empty = hint_features(torch.zeros(1, 3, 64, 64), (8, 8))
    assert not empty.any()


def test_shipped_weights_take_hints_through_the_stem_and_the_decoder_with_a_spread():
    model = load_model()
    assert model.config.hint_channels == 3 and model.config.hint_decoder and model.readout.spread.reach > 0


def test_weights_without_hint_inputs_take_no_hints_and_say_so():
    model = random_model()
    assert model.config.hint_channels == 0 and model.encoder._conv_stem.weight.shape[1] == 1
    c = Colorizer.create(ColorizeSettings(device="cpu", precision="fp32", size=64), model=model)
    photo = colour_photo(48, 64, 1)
    with pytest.raises(ValueError, match="no colour hints"):
        c.colorize(photo, hints=[Hint(0.5, 0.5, (255, 0, 0))])
    with pytest.raises(ValueError, match="no colour hints"):
        c.runtime.run(*batch(1))
    assert c.colorize(photo, hints=()).shape == (48, 64, 3)


def test_an_l_only_stem_loads_into_a_hinted_config_with_zero_hint_weights(tmp_path):
    save_weights(random_model(), tmp_path / "w.pt")
    blob = read_weights(tmp_path / "w.pt")
    blob["config"]["hint_channels"] = 3
    torch.save(blob, tmp_path / "h.pt")
    m = load_model(tmp_path / "h.pt")
    stem = m.encoder._conv_stem.weight
    assert stem.shape[1] == 4 and not stem[:, 1:].any()
    assert torch.equal(stem[:, :1], load_model(tmp_path / "w.pt").encoder._conv_stem.weight)


def test_a_hinted_colorizer_follows_the_hint_near_its_point():
    c = Colorizer.create(ColorizeSettings(device="cpu", precision="fp32", size=64), model=hinted_model(2.0))
    photo = colour_photo(64, 64, 4)
    plain, hinted = c.colorize(photo), c.colorize(photo, hints=[Hint(0.5, 0.5, (20, 200, 20))])
    assert not np.array_equal(plain, hinted)


def test_suggestions_are_distinct_most_likely_first_and_at_the_photos_lightness():
    c = Colorizer.create(ColorizeSettings(device="cpu", precision="fp32"))
    img = cv2.cvtColor(cv2.imread(str(SAMPLE)), cv2.COLOR_BGR2RGB)
    x, y = 0.5, 0.1
    colours = c.suggest(img, x, y, k=3)
    assert len(colours) == 3 == len(set(colours))
    L_there = lightness(img)[int(y * img.shape[0]), int(x * img.shape[1])]
    labs = [rgb_to_lab(np.array([[col]], np.uint8))[0, 0] for col in colours]
    assert all(abs(lab[0] - L_there) < 2 for lab in labs)
    item = prepare(img, c.settings.size)
    with torch.inference_mode():
        p = c.model.ab_distribution(torch.from_numpy(pack([item])))[0]
    h, w = item.small.shape
    top = c.model.bins[int(p[:, int(y * h) // 4, int(x * w) // 4].argmax())].numpy()
    assert np.hypot(*(labs[0][1:] - top)) < 15  # the first suggestion is the most likely colour


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    folder = tmp_path_factory.mktemp("photos")
    for i in range(6):
        cv2.imwrite(str(folder / f"p{i}.jpg"), cv2.cvtColor(colour_photo(90 + 7 * i, 120, i), cv2.COLOR_RGB2BGR))
    return folder


def tiny(photos, tmp, **kw):
    from engine.training.train import TrainSettings

    base = dict(data=photos, out=tmp / "w.pt", work=tmp / "work", steps=3, batch=2, size=64, freeze_steps=1,
                val_every=3, seed=3, threads=1, hint_channels=3, hint_p_none=0.0)
    base.update(kw)
    return TrainSettings(**base)


def test_hinted_training_learns_the_hint_inputs_keeps_the_l_input_and_resumes(photos, tmp_path):
    from engine.training.train import train

    start = tmp_path / "start.pt"
    save_weights(random_model(bins=313), start)
    train(tiny(photos, tmp_path, steps=2, init=start))
    card = train(tiny(photos, tmp_path, steps=3, init=start, resume=True))
    assert card["steps"] == 3 and card["hints"]["channels"] == 3
    m = load_model(tmp_path / "w.pt")
    stem = m.encoder._conv_stem.weight
    assert m.config.hint_channels == 3 and stem[:, 1:].abs().max() > 0  # the hint inputs learned
    start_stem = load_model(start).encoder._conv_stem.weight
    assert torch.equal(stem[:, :1].half(), start_stem.half())  # the L input is as it started (fp16 on disk)


def test_bf16_autocast_training_runs_where_the_cpu_has_native_bf16(photos, tmp_path, monkeypatch):
    if not cpu_has_fast_bf16():
        pytest.skip("this CPU has no native bf16 (AVX-512 BF16 or AMX): training says so and runs fp32")
    import engine.training.train as train_mod
    from engine.training.train import train

    monkeypatch.setattr(train_mod, "cpu_bf16_pays", lambda: True)  # the bf16 path runs, faster here or not

    start = tmp_path / "start.pt"
    save_weights(random_model(bins=313), start)
    card = train(tiny(photos, tmp_path, steps=2, val_every=2, init=start, autocast="bf16"))
    assert card["precision"]["used"] == "bf16 autocast" and card["steps"] == 2


# -- the hint spread: each hint's correction carried to the pixels around it --------------------------------

def spread_model(reach: float = 0.3) -> CVUNet:
    m = hinted_model(decoder=True)
    m.readout = replace(m.readout, spread=replace(m.readout.spread, reach=reach))
    return m


def test_the_spread_gives_a_hint_its_colour_and_leaves_pixels_far_from_every_hint_as_they_were():
    L = np.full((60, 90), 55.0, np.float32)
    L[:, 60:] = 90.0  # a much lighter surface on the right
    ab = np.zeros((60, 90, 2), np.float32)
    hint = Hint(0.2, 0.5, (40, 160, 40))
    out = spread_hints(L, ab, [hint], HintSpread(reach=0.1, lightness=10.0, floor=0.05))
    (want,) = fit_chroma(np.array([55.0], np.float32), np.array([hint.ab()], np.float32))
    r, c = hint.pixel(60, 90)
    assert np.abs(out[r, c] - want).max() < 0.1 * np.abs(want).max()  # the hinted pixel: almost the hint's colour
    assert np.abs(out[r, c + 8]).max() > 0.3 * np.abs(want).max()  # its neighbours of the same lightness follow
    assert np.abs(out[:, 70:]).max() < 0.05 * np.abs(want).max()  # the lighter surface, and far away: unchanged
    assert spread_hints(L, ab, [], HintSpread(reach=0.3)) is ab
    assert spread_hints(L, ab, [hint], HintSpread(reach=0.0)) is ab


def test_with_a_colour_scale_a_hint_keeps_off_a_surface_the_network_coloured_otherwise():
    """A grey background beside a subject of the same grey, told apart only by the network's colours."""
    L = np.full((60, 90), 55.0, np.float32)
    ab = np.zeros((60, 90, 2), np.float32)
    ab[:, :45] = (-14.0, 26.0)  # the network's green background
    ab[:, 45:] = (12.0, 19.0)  # and its brown subject
    hint = Hint(0.35, 0.5, (40, 80, 200))
    r, c = hint.pixel(60, 90)
    mirror = 89 - c  # as far from the boundary on the other side
    plain = spread_hints(L, ab, [hint], HintSpread(reach=0.3, lightness=10.0, floor=0.05)) - ab
    near = np.abs(plain[r, c + 5]).max()
    assert np.abs(plain[r, mirror]).max() > 0.5 * near  # without it the subject takes the background's hint
    for scale, most in ((10.0, 0.2), (5.0, 0.01)):  # the colours differ by 27 ab units
        held = spread_hints(L, ab, [hint], HintSpread(reach=0.3, lightness=10.0, floor=0.05, colour=scale)) - ab
        assert np.abs(held[r, mirror]).max() < most * near  # the subject keeps (nearly) its own colour
        assert np.abs(held[r, c + 5] - plain[r, c + 5]).max() < 0.01 * near  # the hinted surface is as before


def test_a_hint_on_the_edge_of_two_network_colours_still_gets_its_colour_there():
    """At 256 px the spread works on a coarser grid than the photo (the app's half-size ab)."""
    L = np.full((256, 256), 55.0, np.float32)
    ab = np.zeros((256, 256, 2), np.float32)
    ab[:, :129] = (-14.0, 26.0)
    ab[:, 129:] = (12.0, 19.0)  # the edge inside the grid cell of pixels 128 and 129
    hint = Hint(128.5 / 256, 0.5, (40, 80, 200))
    r, c = hint.pixel(256, 256)
    assert c == 128  # the last pixel left of the edge
    (want,) = fit_chroma(np.array([55.0], np.float32), np.array([hint.ab()], np.float32))
    out = spread_hints(L, ab, [hint], HintSpread(reach=0.3, lightness=10.0, floor=0.02, colour=5.0))
    d = want - ab[r, c]
    share = float(np.dot(out[r, c] - ab[r, c], d) / np.dot(d, d))
    # The hint's grid cell, half of each colour, is the reference: it gets all of the correction, and the
    # hinted pixel, blending it with its left neighbour cell (upsampled linearly), nearly all.
    assert share > 0.8


def test_every_hinted_path_of_the_colorizer_applies_the_models_spread_and_hint_free_calls_do_not():
    c = Colorizer.create(ColorizeSettings(device="cpu", precision="fp32", size=64), model=spread_model())
    photo = colour_photo(48, 64, 3)
    hints = [Hint(0.3, 0.4, (200, 40, 40))]
    item = prepare(photo, 64)
    raw = c.infer(pack([item]), pack_hints([item], [hints]))[0]
    spread = spread_on_half(raw, item, hints, c.model.readout.spread)
    assert np.abs(spread - raw).max() > 1.0  # the spread does something here
    (inferred,) = c.infer_photos([item], [hints])
    assert np.allclose(inferred.ab, spread, atol=1e-4)
    assert np.allclose(c.predict([item], [hints])[0], unpack(spread, item), atol=1e-4)
    (plain,) = c.infer_photos([item])
    assert np.allclose(plain.ab, c.infer(pack([item]))[0], atol=1e-5)  # no hints: the network's own output


def test_a_hint_gain_scales_only_a_hinted_photos_own_colour_and_the_hints_still_win_at_their_points():
    item = prepare(colour_photo(48, 64, 3), 64)
    rng = np.random.default_rng(0)
    raw = rng.normal(0, 15, (2, 32, 32)).astype(np.float32)
    hint = Hint(0.3, 0.4, (200, 40, 40))
    assert spread_on_half(raw, item, [], HintSpread(reach=0.3, gain=1.4)) is raw  # no hints: untouched
    gained = spread_on_half(raw, item, [hint], HintSpread(reach=0.0, gain=1.4))
    assert np.allclose(gained[:, :24], raw[:, :24] * 1.4, atol=1e-5)  # no spread: the gain alone, on the photo
    assert np.array_equal(gained[:, 24:], raw[:, 24:])  # the canvas padding below it is not the photo
    plain = spread_on_half(raw, item, [hint], HintSpread(reach=0.2, gain=1.0))
    both = spread_on_half(raw, item, [hint], HintSpread(reach=0.2, gain=1.4))
    r, c = hint.pixel(24, 32)
    assert np.abs(both[:, r, c] - plain[:, r, c]).max() < 0.2 * np.abs(plain[:, r, c]).max()  # the hint decides
    far = np.abs(both[:, 16:24, 26:]).mean() / np.abs(plain[:, 16:24, 26:]).mean()
    assert 1.25 < far < 1.45  # far from the hint: about the network's colour times the gain


def test_compare_mode_with_hints_measures_the_engines_not_the_spread(tmp_path):
    from engine.batch.inputs import collect_inputs
    from engine.batch.pipeline import BatchPipeline
    from engine.options import ExportOptions

    model = spread_model()
    (tmp_path / "in").mkdir()
    for i in range(2):
        cv2.imwrite(str(tmp_path / "in" / f"p{i}.png"), cv2.cvtColor(colour_photo(48, 64, i), cv2.COLOR_RGB2GRAY))
    jobs, _ = collect_inputs([tmp_path / "in"])
    fp32 = Colorizer.create(ColorizeSettings(device="cpu", size=64, batch_size=2, precision="fp32"), model=model)
    base = Colorizer.create(ColorizeSettings(engine="baseline", device="cpu", size=64, batch_size=2), model=model)
    hints = {job.index: [Hint(0.3, 0.4, (200, 40, 40)), Hint(0.7, 0.6, (30, 60, 200))] for job in jobs}
    summary = BatchPipeline(fp32, ExportOptions(tmp_path / "out"), compare=base, hints=hints).run(jobs)
    assert summary.done == 2 and summary.max_abs_diff is not None
    assert summary.max_abs_diff <= AGREEMENT["fp32"].max_abs


def test_a_tuned_hinted_training_chooses_the_spread_on_the_tuning_photos_and_ships_it(photos, tmp_path, monkeypatch):
    import engine.training.tuning as tuning
    from engine.readout import spread_of
    from engine.training.train import train
    from engine.training.tuning import SPREAD_SLACK_DB

    SPREADS = tuning.SPREADS[::20] + tuning.SPREADS[-3:]  # every kind of row, restraints too, at a 20th of the time
    monkeypatch.setattr(tuning, "SPREADS", SPREADS)

    start = tmp_path / "start.pt"
    save_weights(random_model(bins=313), start)
    card = train(tiny(photos, tmp_path, steps=2, val_every=2, init=start, tune_fraction=0.4, hint_decoder=True))
    spread = card["readout"]["hint_spread"]
    assert len(spread["search"]) == len(SPREADS) and card["data"]["tuning_photos"] > 0
    near = [r for r in spread["search"] if r["psnr"] >= max(r["psnr"] for r in spread["search"]) - SPREAD_SLACK_DB]
    assert spread["one_hint_harm"] == min(r["one_hint_harm"] for r in near)  # the "local" rule
    m = load_model(tmp_path / "w.pt")
    assert m.config.hint_decoder and m.readout.spread == spread_of(spread)
    assert "Reads colour hints through the stem and straight into each decoder stage" in (tmp_path / "w.md").read_text()


def test_a_hints_key_with_or_without_the_input_folders_name_finds_its_photo(tmp_path):
    from engine.hints import HintsFile, match_hints
    from engine.options import Job

    point = (Hint(0.5, 0.5, (200, 150, 120)),)
    photo = tmp_path / "1952" / "beach" / "scan07.png"
    cli = [Job(0, photo, tmp_path / "1952"), Job(1, tmp_path / "1952" / "house" / "scan07.png", tmp_path / "1952")]
    app = [Job(0, photo, tmp_path), Job(1, tmp_path / "1952" / "house" / "scan07.png", tmp_path)]
    for jobs in (cli, app):  # the command line walks inside the folder; the app keeps the folder's name
        for key in ("1952/beach/scan07.png", "beach/scan07.png"):
            assert match_hints(HintsFile({key: point}), jobs).hints == {0: point}, (key, jobs[0].root)
        assert match_hints(HintsFile({"scan07.png": point}), jobs).ambiguous == ["scan07.png"]  # never guessed
        assert match_hints(HintsFile({"each/scan07.png": point}), jobs).unmatched == ["each/scan07.png"]


def test_a_key_relative_to_one_of_several_folders_given_together_finds_its_photo(tmp_path):
    """Folders given together keep their names in the photos' paths: a key written relative to the folder (as for
    a run of that folder alone) still names its photo, not every photo of that file name.
    """
    from engine.batch.inputs import collect_inputs
    from engine.hints import HintsFile, match_hints

    write_grey(tmp_path / "A" / "scan07.png", 20, 30, 0)
    write_grey(tmp_path / "B" / "1952" / "scan07.png", 20, 30, 1)
    jobs, _ = collect_inputs([tmp_path / "A", tmp_path / "B"])
    point = (Hint(0.5, 0.5, (200, 150, 120)),)
    assert match_hints(HintsFile({"scan07.png": point}), jobs).hints == {0: point}
    assert match_hints(HintsFile({"1952/scan07.png": point}), jobs).hints == {1: point}
    assert match_hints(HintsFile({"A/scan07.png": point}), jobs).hints == {0: point}


def test_a_key_with_the_folders_name_finds_its_photo_when_the_folder_is_given_as_dot(tmp_path, monkeypatch):
    from engine.hints import HintsFile, match_hints
    from engine.options import Job

    point = (Hint(0.5, 0.5, (200, 150, 120)),)
    (tmp_path / "album" / "beach").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "album")
    jobs = [Job(0, Path("beach") / "x.png", Path("."))]  # colorize . from inside the folder
    assert match_hints(HintsFile({"album/beach/x.png": point}), jobs).hints == {0: point}


def test_a_fading_spread_gives_a_lone_hint_its_colour_at_its_point_and_less_of_it_further_out():
    L = np.full((64, 128), 55.0, np.float32)  # one flat surface: only distance parts the pixels
    ab = np.zeros((64, 128, 2), np.float32)
    hint = Hint(0.1, 0.5, (40, 160, 40))
    r, c = hint.pixel(64, 128)
    flat = spread_hints(L, ab, [hint], HintSpread(reach=0.45, lightness=10.0, floor=0.02))
    faded = spread_hints(L, ab, [hint], HintSpread(reach=0.45, lightness=10.0, floor=0.02, fade=1.0))
    at = np.abs(flat[r, c]).max()
    assert np.abs(faded[r, c]).max() > 0.95 * at  # at the hint: its colour, as before
    far = np.abs(faded[r, c + 64]).max()  # a shorter side away
    assert np.abs(flat[r, c + 64]).max() > 0.7 * at and far < 0.2 * at  # the floor form carries it; fading does not
    two = Hint(0.9, 0.5, (40, 160, 40))  # a second hint of the same colour: between them, their colour again
    both = spread_hints(L, ab, [hint, two], HintSpread(reach=0.45, lightness=10.0, floor=0.02, fade=1.0))
    assert np.abs(both[r, 64]).max() > np.abs(faded[r, 64]).max()
    share = hint_share(L, ab, [hint], HintSpread(reach=0.45, lightness=10.0, floor=0.02, fade=1.0))
    assert share[r, c] > 0.95 and share[r, c + 64] < 0.2  # the stripes of "unsure" come back where the hint fades


def test_a_restrained_spread_carries_a_hint_far_from_the_networks_colour_less_far_and_a_nudge_as_far():
    L = np.full((64, 128), 55.0, np.float32)  # one flat surface: only distance parts the pixels
    ab = np.zeros((64, 128, 2), np.float32)
    ab[..., 1] = 30.0  # the network's colour: a warm yellow
    free = HintSpread(reach=0.45, lightness=10.0, floor=0.02, fade=1.0)
    held = HintSpread(reach=0.45, lightness=10.0, floor=0.02, fade=1.0, restraint=20.0)
    green, nudge = Hint(0.1, 0.5, (40, 160, 40)), Hint(0.1, 0.5, (150, 135, 95))
    r, c = green.pixel(64, 128)
    for hint in (green, nudge):
        a, b = (spread_hints(L, ab, [hint], s) - ab for s in (free, held))
        assert np.abs(b[r, c]).max() > 0.9 * np.abs(a[r, c]).max()  # at its point: its colour either way
        ratio = np.abs(b[r, c + 32]).max() / np.abs(a[r, c + 32]).max()  # half the shorter side away
        if hint is green:
            assert ratio < 0.5  # a correction of ~60 ab units: held near its point
        else:
            assert ratio > 0.9  # a nudge of a few units: as far as before
    share_free, share_held = (hint_share(L, ab, [green], s)[r, c + 32] for s in (free, held))
    assert share_held < 0.5 * share_free  # the unsure stripes come back where the held hint no longer reaches
