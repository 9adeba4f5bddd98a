"""Colour hints from the command line: the hints file, matching its keys to the inputs, the batch pipeline
passing each photo's hints to the model, the usage errors, and ``bench --hints``.
"""

import json

import cv2
import numpy as np
import pytest
import torch
from helpers import random_model, write_grey

from engine import cli as engine_cli
from engine.hints import Hint, HintsFile, HintsFileError, load_hints_file, match_hints, save_hints_file
from engine.model import with_hint_channels
from engine.options import Job
from engine.weights import save_weights

RED = [220, 30, 30]


@pytest.fixture(scope="module")
def hinted_weights(tmp_path_factory):
    """A random hinted model whose hint inputs matter (their stem weights drawn large)."""
    m = with_hint_channels(random_model(), 3)
    with torch.no_grad():
        m.encoder._conv_stem.weight[:, 1:].normal_(0, 2.0, generator=torch.Generator().manual_seed(1))
    path = tmp_path_factory.mktemp("w") / "hinted.pt"
    save_weights(m.eval(), path)
    return path


def run(capsys, *args):
    code = engine_cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def write_hints(path, photos, version=1):
    path.write_text(json.dumps({"version": version, "photos": photos}))
    return path


def jobs_of(root, *names):
    return [Job(i, root / n, root) for i, n in enumerate(names)]


def test_a_saved_hints_file_loads_back_equal(tmp_path):
    mapping = {"scan07.png": (Hint(0.25, 0.4, (200, 150, 120)), Hint(1.0, 0.0, (0, 0, 255))),
               "sub/ä b.jpg": (Hint(0.123456789, 0.987654321, (1, 2, 3)),), "empty.png": ()}
    save_hints_file(tmp_path / "h.json", mapping)
    assert load_hints_file(tmp_path / "h.json") == HintsFile(mapping)
    doc = json.loads((tmp_path / "h.json").read_text(encoding="utf-8"))
    assert doc["version"] == 1 and doc["photos"]["scan07.png"][0] == {"x": 0.25, "y": 0.4, "rgb": [200, 150, 120]}


def test_keys_match_by_path_relative_to_the_input_folder_or_by_a_unique_file_name(tmp_path):
    jobs = jobs_of(tmp_path, "a/x.png", "b/x.png", "b/y.png", "z.png")
    red, blue = (Hint(0.5, 0.5, (255, 0, 0)),), (Hint(0.1, 0.1, (0, 0, 255)),)
    found = match_hints(HintsFile({"a/x.png": red, "y.png": blue, "./z.png": red, "b\\x.png": blue}), jobs)
    assert found.hints == {0: red, 2: blue, 3: red, 1: blue}
    assert found.unmatched == [] and found.ambiguous == []


def test_an_ambiguous_file_name_is_reported_and_not_guessed(tmp_path):
    jobs = jobs_of(tmp_path, "a/x.png", "b/x.png")
    found = match_hints(HintsFile({"x.png": (Hint(0.5, 0.5, (255, 0, 0)),)}), jobs)
    assert found.hints == {} and found.ambiguous == ["x.png"] and found.unmatched == []


def test_an_unmatched_key_is_named_on_stderr_and_the_batch_goes_on(tmp_path, capsys, hinted_weights):
    write_grey(tmp_path / "in" / "one.png", 40, 50)
    hints = write_hints(tmp_path / "h.json", {"one.png": [{"x": 0.5, "y": 0.5, "rgb": RED}],
                                              "missing-photo.png": [{"x": 0.1, "y": 0.1, "rgb": RED}]})
    code, _, err = run(capsys, "colorize", tmp_path / "in", "--output", tmp_path / "out", "--weights",
                       hinted_weights, "--size", "64", "--device", "cpu", "--hints", hints)
    assert code == 0, err
    assert "missing-photo.png" in err and "no input" in err
    assert (tmp_path / "out" / "one.png").exists()


def test_an_ambiguous_key_is_named_on_stderr_and_its_points_are_not_used(tmp_path, capsys, hinted_weights):
    write_grey(tmp_path / "in" / "a" / "x.png", 40, 50)
    write_grey(tmp_path / "in" / "b" / "x.png", 40, 50)
    hints = write_hints(tmp_path / "h.json", {"x.png": [{"x": 0.5, "y": 0.5, "rgb": RED}]})
    code, _, err = run(capsys, "colorize", tmp_path / "in", "--output", tmp_path / "out", "--weights",
                       hinted_weights, "--size", "64", "--device", "cpu", "--hints", hints)
    assert code == 0, err
    assert "'x.png' names more than one input" in err and "a/x.png" in err and "b/x.png" in err


@pytest.mark.parametrize("content, reason", [
    ("{not json", "not valid JSON"),
    (json.dumps({"version": 2, "photos": {}}), "version must be 1"),
    (json.dumps({"version": 1, "photos": {"one.png": [{"x": 1.5, "y": 0.5, "rgb": RED}]}}), "x must be"),
    (json.dumps({"version": 1, "photos": {"one.png": [{"x": 0.5, "y": -0.1, "rgb": RED}]}}), "y must be"),
    (json.dumps({"version": 1, "photos": {"one.png": [{"x": 0.5, "y": 0.5, "rgb": [0, 256, 0]}]}}), "rgb must be"),
    (json.dumps({"version": 1, "photos": {"one.png": [{"x": 0.5, "y": 0.5}]}}), "no rgb"),
    (json.dumps([1, 2]), "not a hints file"),
])
def test_a_malformed_hints_file_exits_2_with_a_one_line_reason_before_any_photo_is_written(
        tmp_path, capsys, hinted_weights, content, reason):
    write_grey(tmp_path / "in" / "one.png", 40, 50)
    (tmp_path / "h.json").write_text(content)
    with pytest.raises(SystemExit) as exit_:
        run(capsys, "colorize", tmp_path / "in", "--output", tmp_path / "out", "--weights", hinted_weights,
            "--size", "64", "--device", "cpu", "--hints", tmp_path / "h.json")
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    lines = [ln for ln in err.splitlines() if "error:" in ln]
    assert len(lines) == 1 and reason in lines[0] and "h.json" in lines[0], err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.png"))
    with pytest.raises(HintsFileError, match=reason):
        load_hints_file(tmp_path / "h.json")


def test_weights_without_hint_inputs_with_hints_exit_2_before_any_photo_is_written(tmp_path, capsys):
    write_grey(tmp_path / "in" / "one.png", 40, 50)
    hints = write_hints(tmp_path / "h.json", {"one.png": [{"x": 0.5, "y": 0.5, "rgb": RED}]})
    save_weights(random_model(), tmp_path / "plain.pt")
    with pytest.raises(SystemExit) as exit_:
        run(capsys, "colorize", tmp_path / "in", "--output", tmp_path / "out", "--size", "64", "--device", "cpu",
            "--hints", hints, "--weights", tmp_path / "plain.pt")
    assert exit_.value.code == 2
    assert "these weights take no colour hints" in capsys.readouterr().err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.png"))


def test_the_pipeline_gives_each_photo_its_hint_map_and_the_hinted_output_differs(tmp_path, capsys, hinted_weights,
                                                                             monkeypatch):
    from engine.runtimes.optimized import OptimizedRuntime

    write_grey(tmp_path / "in" / "grey.png", 64, 64, seed=3)
    write_grey(tmp_path / "in" / "other.png", 48, 64, seed=4)
    common = ["--weights", hinted_weights, "--size", "64", "--device", "cpu", "--precision", "fp32",
              "--batch-size", "2"]
    code, _, err = run(capsys, "colorize", tmp_path / "in", "--output", tmp_path / "plain", *common)
    assert code == 0, err
    seen = []
    real_run = OptimizedRuntime.run

    def recording(self, L, hints=None):
        seen.append(None if hints is None else hints.copy())
        return real_run(self, L, hints)

    monkeypatch.setattr(OptimizedRuntime, "run", recording)
    hints = write_hints(tmp_path / "h.json", {"grey.png": [{"x": 0.5, "y": 0.5, "rgb": RED}]})
    code, _, err = run(capsys, "colorize", tmp_path / "in", "--output", tmp_path / "hinted", *common,
                       "--hints", hints)
    assert code == 0, err
    assert len(seen) == 1 and seen[0] is not None and seen[0].shape[:2] == (2, 3)
    grey_map, other_map = seen[0][0], seen[0][1]  # inputs in order: grey.png, other.png
    assert grey_map[2, 32, 32] == 1 and grey_map[0, 32, 32] > 0.2  # red: a strongly positive a at the point
    assert not other_map.any()  # the other photo has no hints
    plain, hinted = (cv2.imread(str(tmp_path / d / "grey.png")) for d in ("plain", "hinted"))
    assert not np.array_equal(plain, hinted)
    assert np.array_equal(cv2.imread(str(tmp_path / "plain" / "other.png")),
                          cv2.imread(str(tmp_path / "hinted" / "other.png")))
    # A random model reacts to the hint map in no particular direction (measured: Lab a near the point moved by
    # 0.05), so "toward red" is not pinned here: the trained hinted model's evaluation curve is where that shows.


def test_bench_hints_prints_both_figures_and_writes_them_to_the_json(tmp_path, capsys):
    out = tmp_path / "bench.json"
    code, stdout, _ = run(capsys, "bench", "--hints", "--size", "64", "--repeat", "1", "--device", "cpu",
                          "--json", out)
    assert code == 0
    assert "with hints:" in stdout and "without hints:" in stdout and "s pause (as a user places" in stdout
    doc = json.loads(out.read_text())["hints_to_preview"]
    assert doc["size"] == 64 and doc["batch"] == 1 and doc["random_hinted_model"] is False  # the shipped model
    assert doc["ms_with_hints"] > 0 and doc["ms_without_hints"] > 0
    assert doc["ms_with_hints_after_pause"] > 0  # the latency a user meets after idle


def test_bench_hints_stands_in_a_random_hinted_model_for_weights_without_hint_inputs(tmp_path, capsys):
    save_weights(random_model(), tmp_path / "plain.pt")
    code, stdout, _ = run(capsys, "bench", "--hints", "--size", "64", "--repeat", "1", "--device", "cpu",
                          "--json", tmp_path / "b.json", "--weights", tmp_path / "plain.pt")
    assert code == 0 and "random-weights hinted model" in stdout
    assert json.loads((tmp_path / "b.json").read_text())["hints_to_preview"]["random_hinted_model"] is True


def test_after_running_out_of_memory_the_hint_map_is_made_again_at_the_smaller_working_size(tmp_path,
                                                                                           hinted_weights):
    from engine.batch.pipeline import BatchPipeline
    from engine.colorizer import Colorizer
    from engine.options import ColorizeSettings, ExportOptions

    write_grey(tmp_path / "in" / "one.png", 128, 128)
    c = Colorizer.create(ColorizeSettings(device="cpu", precision="fp32", size=128, batch_size=1,
                                          weights=hinted_weights))
    real_run, seen = c.runtime.run, []

    def small_only(L, hints=None):
        if L.shape[-1] > 64:
            raise RuntimeError("CPU out of memory (pretend)")
        seen.append(hints)
        return real_run(L, hints)

    c.runtime.run = small_only
    hint = Hint(0.25, 0.75, (220, 30, 30))
    summary = BatchPipeline(c, ExportOptions(output_dir=tmp_path / "out"), hints={0: [hint]}).run(
        [Job(0, tmp_path / "in" / "one.png", tmp_path / "in")])
    assert summary.done == 1 and "working size 64" in summary.results[0].message
    assert len(seen) == 1 and seen[0] is not None and seen[0].shape == (1, 3, 64, 64)
    assert seen[0][0, 2, int(0.75 * 64), int(0.25 * 64)] == 1  # the point, at the smaller size


def test_a_pipeline_refuses_hints_for_weights_that_take_none(tmp_path):
    from engine.batch.pipeline import BatchPipeline
    from engine.colorizer import Colorizer
    from engine.options import ColorizeSettings, ExportOptions

    c = Colorizer.create(ColorizeSettings(device="cpu", precision="fp32", size=64), model=random_model())
    with pytest.raises(ValueError, match="no colour hints"):
        BatchPipeline(c, ExportOptions(output_dir=tmp_path / "out"), hints={0: [Hint(0.5, 0.5, (255, 0, 0))]})
    assert BatchPipeline(c, ExportOptions(output_dir=tmp_path / "out"), hints={0: []}).hints == {}
