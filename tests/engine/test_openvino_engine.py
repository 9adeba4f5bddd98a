"""``--engine openvino``: the model converted once per weights, compiled per input shape, held to the same agreement
bounds as ours; colour hints run on our optimized runtime.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import random_model

from engine.bench import bench_inputs
from engine.colorizer import Colorizer
from engine.devices import precision_support
from engine.model import with_hint_channels, with_hint_decoder
from engine.options import AGREEMENT, ColorizeSettings
from engine.runtimes import BaselineRuntime, OptimizedRuntime, make_runtime
from engine.runtimes.base import ab_difference
from engine.weights import DEFAULT_WEIGHTS, load_model

pytest.importorskip("openvino")
from engine.runtimes import openvino_runtime  # noqa: E402
from engine.runtimes.openvino_runtime import OpenVINORuntime  # noqa: E402

CPU = torch.device("cpu")
BF16 = precision_support(CPU)["bf16"]
PRECISIONS = ["fp32", pytest.param("bf16", marks=pytest.mark.skipif(BF16 is not None, reason=f"bf16: {BF16}"))]


@pytest.fixture(scope="module")
def shipped():
    return load_model(DEFAULT_WEIGHTS)


def hinted_model():
    model = with_hint_decoder(with_hint_channels(random_model(seed=5)))
    with torch.no_grad():  # the hint inputs start at zero weight: give them some, so hints change the output
        for w in model.parameters():
            if w.dim() == 4:
                w.add_(torch.randn_like(w) * 0.05)
    return model.eval()


@pytest.mark.parametrize("batch", [1, 8])
@pytest.mark.parametrize("precision", PRECISIONS)
def test_the_openvino_engine_agrees_with_the_baseline_on_the_sample_photos(shipped, precision, batch, tmp_path):
    L = bench_inputs(512, batch)
    base = BaselineRuntime(shipped, CPU).run(L)
    out = OpenVINORuntime(shipped, CPU, precision, cache=tmp_path).run(L)
    assert np.abs(base).max() > 30  # the shipped model's colours, not a near-grey map that agrees with anything
    p999, worst = ab_difference(out, base)
    bound = AGREEMENT[precision]
    assert p999 <= bound.p999 and worst <= bound.max_abs, (precision, batch, p999, worst)


def test_one_conversion_serves_sizes_and_batches_other_than_the_one_it_was_traced_at(tmp_path):
    model = random_model(seed=2)
    runtime = OpenVINORuntime(model, CPU, "fp32", cache=tmp_path)
    base = BaselineRuntime(model, CPU)
    rng = np.random.default_rng(0)
    for shape in [(1, 1, 64, 64), (3, 1, 96, 160), (2, 1, 320, 224)]:
        L = (rng.random(shape) * 100).astype(np.float32)
        out = runtime.run(L)
        assert out.shape == (shape[0], 2, shape[2] // 2, shape[3] // 2)
        p999, worst = ab_difference(out, base.run(L))
        assert worst <= AGREEMENT["fp32"].max_abs and p999 <= AGREEMENT["fp32"].p999, (shape, worst)
    assert len(list(tmp_path.glob("*.xml"))) == 1  # converted once, for every shape


def test_hinted_photos_run_on_the_optimized_runtime_and_unhinted_ones_agree_with_it(tmp_path):
    model = hinted_model()
    runtime = OpenVINORuntime(model, CPU, "fp32", cache=tmp_path)
    ours = OptimizedRuntime(model, CPU, "fp32")
    L = bench_inputs(64, 2)
    hints = np.zeros((2, 3, 64, 64), np.float32)
    hints[:, 0, 10:20, 30:40], hints[:, 1, 10:20, 30:40], hints[:, 2, 10:20, 30:40] = 40.0, -20.0, 1.0
    hinted = runtime.run(L, hints)
    assert np.array_equal(hinted, ours.run(L, hints))
    plain = runtime.run(L)
    assert np.abs(plain - hinted).max() > 0.1  # the hints reached the output
    _, worst = ab_difference(plain, BaselineRuntime(model, CPU).run(L))
    assert worst <= AGREEMENT["fp32"].max_abs
    with pytest.raises(ValueError, match="hints"):
        runtime.run(L, hints[:, :2])


def test_a_second_runtime_on_the_same_weights_reads_the_conversion_from_the_cache(tmp_path):
    model = random_model(seed=2)
    assert OpenVINORuntime(model, CPU, "fp32", cache=tmp_path).converted
    again = OpenVINORuntime(model, CPU, "fp32", cache=tmp_path)
    assert not again.converted
    L = bench_inputs(64, 1)
    _, worst = ab_difference(again.run(L), BaselineRuntime(model, CPU).run(L))
    assert worst <= AGREEMENT["fp32"].max_abs
    with torch.no_grad():
        next(model.parameters()).mul_(1.01)  # other weights: another conversion, not the stale one
    assert OpenVINORuntime(model, CPU, "fp32", cache=tmp_path).converted
    assert len(list(tmp_path.glob("*.xml"))) == 2 and not list(tmp_path.glob(".*tmp*"))


def test_a_damaged_cache_entry_is_converted_again_and_an_unwritable_cache_still_runs(tmp_path):
    model = random_model(seed=2)
    first = OpenVINORuntime(model, CPU, "fp32", cache=tmp_path)
    first.xml.with_suffix(".bin").write_bytes(b"")  # a truncated weights file (a crash, a full disk)
    again = OpenVINORuntime(model, CPU, "fp32", cache=tmp_path)
    assert again.converted and again.xml.with_suffix(".bin").stat().st_size > 0
    L = bench_inputs(64, 1)
    _, worst = ab_difference(again.run(L), BaselineRuntime(model, CPU).run(L))
    assert worst <= AGREEMENT["fp32"].max_abs
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    unwritable = OpenVINORuntime(model, CPU, "fp32", cache=blocked / "cache")
    assert unwritable.converted
    _, worst = ab_difference(unwritable.run(L), BaselineRuntime(model, CPU).run(L))
    assert worst <= AGREEMENT["fp32"].max_abs


def test_the_cache_keeps_only_the_most_recent_conversions(tmp_path, monkeypatch):
    monkeypatch.setattr(openvino_runtime, "KEPT_EXPORTS", 1)
    first = OpenVINORuntime(random_model(seed=2), CPU, "fp32", cache=tmp_path)
    second = OpenVINORuntime(random_model(seed=4), CPU, "fp32", cache=tmp_path)
    assert not first.xml.exists() and not first.xml.with_suffix(".bin").exists()
    assert second.xml.exists() and second.xml.with_suffix(".bin").exists()


def test_compiled_models_are_kept_for_the_last_few_input_shapes_only(tmp_path, monkeypatch):
    monkeypatch.setattr(openvino_runtime, "COMPILED_SHAPES", 2)
    runtime = OpenVINORuntime(random_model(seed=2), CPU, "fp32", cache=tmp_path)
    for h in (32, 64, 96, 64):
        runtime.run(np.full((1, 1, h, 64), 50.0, np.float32))
    assert runtime.compiled_shapes == [(1, 1, 96, 64), (1, 1, 64, 64)]
    runtime.release_memory()
    assert runtime.compiled_shapes == []


def test_the_openvino_engine_says_why_it_cannot_run_on_a_gpu_or_without_its_package(tmp_path, monkeypatch):
    model = random_model(seed=2)
    with pytest.raises(ValueError, match="CPU only"):
        OpenVINORuntime(model, torch.device("cuda"), "fp32", cache=tmp_path)
    with pytest.raises(ValueError, match="fp32 or bf16"):
        OpenVINORuntime(model, CPU, "fp16", cache=tmp_path)
    monkeypatch.setattr(openvino_runtime.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ValueError, match=r"colorizer\[openvino\]"):
        make_runtime("openvino", model, CPU, "fp32")


def test_colorize_on_the_openvino_engine_runs_on_the_cpu_and_colours_like_the_optimized_one(shipped, monkeypatch):
    from helpers import grey_photo

    from engine import colorizer

    monkeypatch.setattr(colorizer, "resolve_device", lambda name: torch.device("cuda" if name == "auto" else name))

    photos = [grey_photo(90, 140, seed=1), grey_photo(200, 120, seed=2)]
    ov = Colorizer.create(ColorizeSettings(engine="openvino", precision="fp32", size=128), model=shipped)
    ours = Colorizer.create(ColorizeSettings(engine="optimized", device="cpu", precision="fp32", size=128),
                            model=shipped)
    assert ov.settings.device == "cpu" and ov.description == "openvino fp32 on cpu"
    for photo in photos:
        a, b = ov.colorize(photo), ours.colorize(photo)
        assert a.shape == b.shape == (*photo.shape, 3)
        assert np.abs(a.astype(int) - b.astype(int)).max() <= 2  # fp32 rounding, as 8-bit RGB
