"""The old-print gate: its measures, its fitting, the gate that comes with the app, and the advice it gives."""

from pathlib import Path

import cv2
import numpy as np
import pytest
from helpers import SAMPLES, old_scan, random_model
from test_cli import cli

from engine.batch.inputs import collect_inputs
from engine.batch.pipeline import BatchPipeline
from engine.color import lightness
from engine.colorizer import Colorizer
from engine.imageio import decode
from engine.options import ColorizeSettings, ExportOptions
from engine.print_look import (
    GATE_FILE,
    NAMES,
    OldPrintGate,
    default_gate,
    grain_sigma,
    looks_due,
    looks_like_old_print,
    measures,
    old_print_advice,
    tone_chroma,
)
from engine.training.print_gate import fit_gate, grey_copy, logistic
from engine.training.print_gate import main as fit_main


def test_grain_measure_grows_with_added_noise_and_ignores_a_smooth_gradient():
    smooth = np.tile(np.linspace(10, 90, 400, dtype=np.float32), (300, 1))
    rng = np.random.default_rng(0)
    noisy = smooth + rng.normal(0, 4, smooth.shape).astype(np.float32)
    assert grain_sigma(smooth) < 0.05
    assert 3.0 < grain_sigma(noisy) < 5.0  # Immerkær's estimate of a sigma of 4


def test_tone_is_zero_for_a_grey_file_in_three_channels_and_large_for_sepia():
    grey = np.repeat(np.linspace(0, 255, 256, dtype=np.uint8)[None, :, None], 3, axis=2).repeat(64, axis=0)
    sepia = np.clip(grey * np.array([1.0, 0.85, 0.65]), 0, 255).astype(np.uint8)
    assert tone_chroma(grey) == 0.0 and tone_chroma(grey[..., 0]) == 0.0
    assert tone_chroma(sepia) > 8.0


def test_measures_do_not_depend_on_the_photos_size():
    photo = decode(SAMPLES[0]).pixels
    big = cv2.resize(photo, (photo.shape[1] * 2, photo.shape[0] * 2), interpolation=cv2.INTER_CUBIC)
    a, b = measures(photo), measures(big)
    assert a.shape == (len(NAMES),)
    assert np.abs(a[1:4] - b[1:4]).max() < 0.03  # the tonal range, black and white points


def test_fitting_separates_and_sets_the_threshold_by_the_clean_share():
    rng = np.random.default_rng(1)
    clean = rng.normal(0, 1, (400, 3))
    old = rng.normal(0, 1, (400, 3)) + [2.0, -1.0, 0.0]
    x, y = np.vstack([clean, old]), np.r_[np.zeros(400), np.ones(400)]
    w, _ = logistic((x - x.mean(0)) / x.std(0), y)
    assert w[0] > 0 and w[1] < 0 and abs(w[2]) < 0.3 * abs(w[0])
    gate = fit_gate(x, y, clean_share=0.05)
    flagged = np.array([gate.score(f) > gate.threshold for f in x])
    assert flagged[:400].mean() <= 0.05 + 1e-9 and flagged[400:].mean() > 0.7


def test_the_fitting_command_writes_a_gate_that_reads_back(tmp_path):
    rng = np.random.default_rng(2)
    (tmp_path / "photos").mkdir()
    for i in range(16):
        photo = np.clip(rng.normal(128, 40, (80, 96, 3)), 0, 255).astype(np.uint8)
        cv2.imwrite(str(tmp_path / "photos" / f"p{i}.png"), cv2.GaussianBlur(photo, (0, 0), 3))
    out = tmp_path / "gate.json"
    assert fit_main([str(tmp_path / "photos"), "--out", str(out)]) == 0
    gate = OldPrintGate.read(out)
    assert len(gate.weights) == len(NAMES) and 0.0 < gate.threshold < 1.0


def test_the_gate_that_comes_with_the_app_tells_toned_scans_from_clean_grey_copies():
    gate = default_gate()
    assert gate is not None and GATE_FILE.exists()
    for path in SAMPLES:
        photo = decode(path).pixels
        assert not gate.is_old_print(grey_copy(photo)), path.name
        assert gate.is_old_print(old_scan(photo, 0)), path.name
        assert gate.is_old_print(old_scan(photo, 1, tint=(0.85, 0.93, 1.0))), path.name  # cold-toned


def test_the_first_photos_of_a_run_are_looked_at_then_one_in_eight():
    due = [i for i in range(100) if looks_due(i)]
    assert due[:24] == list(range(24)) and due[24:] == [24, 32, 40, 48, 56, 64, 72, 80, 88, 96]


def test_advice_needs_most_of_a_batch_and_is_not_given_to_old_prints_itself():
    assert old_print_advice(2, 2, False) is None  # too few to say
    assert old_print_advice(4, 10, False) is None  # not most
    assert old_print_advice(5, 10, True) is None  # already the old-prints model
    line = old_print_advice(5, 10, False)
    assert line is not None and "5 of 10 photos looked at" in line and '"old-prints"' in line


@pytest.fixture(scope="module")
def colorizer():
    return Colorizer.create(ColorizeSettings(device="cpu", size=64, batch_size=2), model=random_model())


def test_a_batch_marks_old_looking_inputs_and_counts_them(colorizer, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    for path in SAMPLES[:3]:
        cv2.imwrite(str(src / f"old-{path.stem}.jpg"), old_scan(decode(path).pixels, 3)[..., ::-1])
        cv2.imwrite(str(src / f"clean-{path.stem}.png"), grey_copy(decode(path).pixels))
    colour = decode(SAMPLES[0]).pixels
    colour = np.stack([colour, np.roll(colour, 40, 1), np.roll(colour, 80, 0)], -1) if colour.ndim == 2 else colour
    cv2.imwrite(str(src / "real-colour.png"), colour[..., ::-1])  # genuine colour: never an old print's scan
    jobs, _ = collect_inputs([src])
    results = []
    summary = BatchPipeline(colorizer, ExportOptions(tmp_path / "out")).run(jobs, on_result=results.append)
    marked = {Path(r.source).name: r.looks_old for r in results}
    assert summary.done == 7
    assert all(marked[n] for n in marked if n.startswith("old-"))
    assert not any(marked[n] for n in marked if not n.startswith("old-"))
    assert summary.looks_old == 3 and summary.looked == 7


def test_colorize_with_the_shipped_model_suggests_old_prints_for_old_scans_and_not_for_clean_copies(tmp_path):
    (tmp_path / "old").mkdir()
    for path in SAMPLES[:4]:
        cv2.imwrite(str(tmp_path / "old" / f"{path.stem}.jpg"), old_scan(decode(path).pixels, 5)[..., ::-1])
        (tmp_path / "clean").mkdir(exist_ok=True)
        cv2.imwrite(str(tmp_path / "clean" / f"{path.stem}.png"), grey_copy(decode(path).pixels))
    p = cli("colorize", tmp_path / "old", "--output", tmp_path / "o1", "--size", "64", "--model", "shipped")
    assert p.returncode == 0, p.stderr
    assert "4 of 4 photos looked at look like scans of old prints" in p.stdout and "--model old-prints" in p.stdout
    p = cli("colorize", tmp_path / "old", "--output", tmp_path / "o2", "--size", "64", "--model", "old-prints")
    assert p.returncode == 0 and "look like scans of old prints" not in p.stdout
    p = cli("colorize", tmp_path / "clean", "--output", tmp_path / "o3", "--size", "64", "--model", "shipped")
    assert p.returncode == 0 and "look like scans of old prints" not in p.stdout


def test_a_run_that_chose_its_model_by_look_does_not_measure_each_photo_again(colorizer, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    cv2.imwrite(str(src / "old.jpg"), old_scan(decode(SAMPLES[0]).pixels, 3)[..., ::-1])
    jobs, _ = collect_inputs([src])
    results = []
    BatchPipeline(colorizer, ExportOptions(tmp_path / "out"), measure_look=False).run(jobs, on_result=results.append)
    assert [r.looks_old for r in results] == [None]  # not looked at


def test_a_large_scan_measured_from_a_shrunk_copy_reads_as_at_full_size():
    rng = np.random.default_rng(4)
    photo = decode(SAMPLES[2]).pixels
    scan = old_scan(cv2.resize(photo, (photo.shape[1] * 5, photo.shape[0] * 5), interpolation=cv2.INTER_CUBIC), 1)
    scan = np.clip(scan + rng.normal(0, 6, scan.shape), 0, 255).astype(np.uint8)  # grain at the scan's own scale
    shrunk, full = measures(scan), measures(scan, lightness(scan))
    assert np.abs(shrunk - full).max() < 0.02


def test_a_tiny_image_is_never_read_as_an_old_print():
    flat = np.full((8, 8, 3), 128, np.uint8)
    assert not looks_like_old_print(flat)
    assert not looks_like_old_print(old_scan(decode(SAMPLES[0]).pixels, 0)[:40, :40])


def test_the_cluster_decode_stage_looks_only_when_asked(tmp_path):
    from engine.batch.cluster.stages import StageContext, Work, _decode_work

    path = tmp_path / "old.jpg"
    cv2.imwrite(str(path), old_scan(decode(SAMPLES[0]).pixels, 3)[..., ::-1])
    for measure, expected in ((True, True), (False, None)):
        work = Work(0, str(path), -1, str(tmp_path / "out.jpg"))
        _decode_work(work, StageContext(64, ExportOptions(tmp_path / "out"), (), -1, measure_look=measure))
        assert work.looks_old is expected
