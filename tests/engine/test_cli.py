"""The CLI surface that scripts and CI depend on: exit codes, messages, the summary line, bench JSON."""

import json
import logging
import os
import subprocess
import sys

import cv2
import numpy as np
import pytest
import torch
from helpers import ROOT, colour_photo, random_model, write_grey

from engine import cli as engine_cli
from engine.weights import save_weights


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    path = tmp_path_factory.mktemp("w") / "model.pt"
    save_weights(random_model(), path)
    return path


def cli(*args, timeout=240):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)


def test_colorize_folder_succeeds_with_summary_line(tmp_path, weights):
    write_grey(tmp_path / "in" / "one.png", 40, 50)
    write_grey(tmp_path / "in" / "nested" / "two.jpg", 33, 21)
    p = cli("colorize", tmp_path / "in", "--output", tmp_path / "out", "--weights", weights, "--size", "64")
    assert p.returncode == 0, p.stderr
    assert "2 photos in" in p.stdout and "photos/s" in p.stdout and "model busy" in p.stdout
    assert cv2.imread(str(tmp_path / "out" / "nested" / "two.jpg")).shape[:2] == (33, 21)


def test_colorize_with_failures_exits_1_and_names_each_without_traceback(tmp_path, weights):
    write_grey(tmp_path / "in" / "good.png", 40, 50)
    (tmp_path / "in" / "bad.png").write_bytes(b"garbage")
    (tmp_path / "in" / "empty.jpg").write_bytes(b"")
    p = cli("colorize", tmp_path / "in", "--output", tmp_path / "out", "--weights", weights, "--size", "64")
    assert p.returncode == 1
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert any("bad.png" in ln for ln in lines) and any("empty.jpg" in ln and "empty" in ln for ln in lines)
    assert "Traceback" not in p.stderr
    assert (tmp_path / "out" / "good.png").exists()


def test_usage_errors_exit_2(tmp_path, weights):
    assert cli("colorize", tmp_path, "--output", tmp_path / "o", "--engine", "warp").returncode == 2
    assert cli("colorize", tmp_path, "--output", tmp_path / "o", "--batch-size", "0",
               "--weights", weights).returncode == 2
    assert cli("colorize", tmp_path).returncode == 2  # --output missing


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on machines without CUDA")
def test_asking_for_cuda_without_a_gpu_is_a_usage_error(tmp_path, weights):
    write_grey(tmp_path / "in" / "one.png", 40, 50)
    p = cli("colorize", tmp_path / "in", "--output", tmp_path / "o", "--device", "cuda", "--weights", weights)
    assert p.returncode == 2 and "CUDA" in p.stderr and "Traceback" not in p.stderr


def test_missing_weights_is_a_clear_error(tmp_path):
    write_grey(tmp_path / "in" / "one.png", 40, 50)
    p = cli("colorize", tmp_path / "in", "--output", tmp_path / "o", "--weights", tmp_path / "nope.pt")
    assert p.returncode == 1 and "not found" in p.stderr and "Traceback" not in p.stderr


def test_skip_existing_resumes(tmp_path, weights):
    write_grey(tmp_path / "in" / "one.png", 40, 50)
    args = ("colorize", tmp_path / "in", "--output", tmp_path / "out", "--weights", weights, "--size", "64")
    assert cli(*args).returncode == 0
    p = cli(*args, "--skip-existing")
    assert p.returncode == 0 and "No photo colorized, 1 skipped" in p.stdout
    assert sorted(x.name for x in (tmp_path / "out").iterdir()) == ["one.png"]


def test_a_second_run_writes_new_names_unless_told_to_overwrite(tmp_path, weights):
    write_grey(tmp_path / "in" / "one.png", 40, 50)
    args = ("colorize", tmp_path / "in", "--output", tmp_path / "out", "--weights", weights, "--size", "64")
    first_run, second_run = cli(*args), cli(*args)
    assert first_run.returncode == 0 and second_run.returncode == 0
    assert sorted(x.name for x in (tmp_path / "out").iterdir()) == ["one (1).png", "one.png"]
    assert "new name" not in first_run.stdout  # said only when it happened, and then with what to do instead
    assert "1 under a new name" in second_run.stdout and "--overwrite replaces" in second_run.stdout
    assert "have an output" not in first_run.stderr  # said before the run, while Ctrl+C costs nothing
    assert "note: the photo has an output" in second_run.stderr and "--skip-existing skips" in second_run.stderr
    first = (tmp_path / "out" / "one.png").stat().st_mtime_ns
    p = cli(*args, "--overwrite", "--strength", "0")
    assert p.returncode == 0 and sorted(x.name for x in (tmp_path / "out").iterdir()) == ["one (1).png", "one.png"]
    assert (tmp_path / "out" / "one.png").stat().st_mtime_ns != first and "new name" not in p.stdout
    grey = cv2.imread(str(tmp_path / "out" / "one.png"))
    assert np.abs(grey.astype(int) - grey[..., :1]).max() <= 1  # replaced by the strength-0 (grey) colours
    both = cli(*args, "--overwrite", "--skip-existing")
    assert both.returncode == 2 and "not allowed with" in both.stderr


def test_two_photos_of_one_name_are_both_kept_and_the_note_does_not_offer_flags_that_cannot_help(tmp_path, weights):
    for folder in ("a", "b"):
        write_grey(tmp_path / folder / "one.png", 40, 50)
    # files given from two folders (folders given together would each write into a folder of their own name)
    p = cli("colorize", tmp_path / "a" / "one.png", tmp_path / "b" / "one.png", "--output", tmp_path / "out",
            "--weights", weights, "--size", "64", "--overwrite")
    assert p.returncode == 0 and sorted(x.name for x in (tmp_path / "out").iterdir()) == ["one (1).png", "one.png"]
    assert "1 output went under a new name" in p.stdout and "another photo of the run" in p.stdout
    assert "--overwrite replaces" not in p.stdout


def test_bench_writes_the_documented_json(tmp_path, weights):
    out = tmp_path / "bench.json"
    p = cli("bench", "--size", "64", "--batch", "1", "2", "--repeat", "1", "--json", out, "--weights", weights,
            timeout=600)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert {"device", "threads", "size", "rows"} <= doc.keys() and doc["size"] == 64
    keys = {"engine", "precision", "batch", "ms_per_image", "images_per_s", "peak_mem_mb", "max_abs_diff"}
    assert all(keys <= row.keys() for row in doc["rows"])
    engines = {(r["engine"], r["batch"]) for r in doc["rows"]}
    assert {("baseline", 1), ("optimized", 1), ("baseline", 2), ("optimized", 2)} <= engines
    for r in doc["rows"]:
        if r["precision"] == "fp32":
            assert r["max_abs_diff"] <= 1e-3
    assert "GFLOPs per image" in p.stdout and "conv peak" in p.stdout


def test_bench_encoders_times_each_encoder_side_by_side_with_its_flops(tmp_path, weights):
    out = tmp_path / "enc.json"
    p = cli("bench", "--encoders", "lite0", "lite2", "--size", "64", "--batch", "1", "--repeat", "1",
            "--json", out, "--weights", weights, timeout=600)
    assert p.returncode == 0, p.stderr
    rows = {r["encoder"]: r for r in json.loads(out.read_text())["rows"]}
    assert set(rows) == {"lite0", "lite2"} and rows["lite0"]["time_ratio"] == 1.0
    assert rows["lite2"]["gflops"] > 1.1 * rows["lite0"]["gflops"]  # the wider, deeper encoder costs more
    assert all(len(r["rounds_ms"]) == 3 and r["ms_per_image"] > 0 for r in rows.values())
    assert "| lite2 |" in p.stdout


# -- diagnostics that reach the user (in-process: the engine's inputs are faked, no model is needed) --------

def _crash(*_args, **_kwargs):
    raise RuntimeError("disk on fire\nsecond line of detail")


def _finds_nothing_but_logs(*_args, **_kwargs):
    logging.getLogger("engine.batch.inputs").debug("debug detail")
    logging.getLogger("engine.batch.inputs").info("info detail")
    return [], []


def _our_handlers():
    return [h for h in logging.getLogger().handlers if type(h) is logging.StreamHandler]


def test_an_unexpected_error_is_one_line_after_a_warning_with_its_traceback(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("COLORIZER_LOG_LEVEL", raising=False)
    monkeypatch.setattr("engine.batch.inputs.collect_inputs", _crash)
    before = _our_handlers()
    assert engine_cli.main(["colorize", str(tmp_path), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert lines[-1] == "error: disk on fire"
    assert [ln for ln in lines if ln.startswith("error:")] == ["error: disk on fire"]
    assert lines[0].startswith("WARNING engine.cli: unexpected error in colorize")
    assert "Traceback (most recent call last)" in err and "RuntimeError: disk on fire" in err
    assert _our_handlers() == before  # main() leaves the process's logging as it found it


@pytest.mark.parametrize(("verbose", "env", "shown"), [
    (False, None, set()),
    (True, None, {"debug detail", "info detail"}),
    (False, "INFO", {"info detail"}),
    (False, "debug", {"debug detail", "info detail"}),
    (True, "WARNING", {"debug detail", "info detail"}),
])
def test_verbose_and_colorizer_log_level_set_how_much_is_logged(tmp_path, monkeypatch, capsys, verbose, env, shown):
    if env is None:
        monkeypatch.delenv("COLORIZER_LOG_LEVEL", raising=False)
    else:
        monkeypatch.setenv("COLORIZER_LOG_LEVEL", env)
    monkeypatch.setattr("engine.batch.inputs.collect_inputs", _finds_nothing_but_logs)
    argv = ["colorize", str(tmp_path), "-o", str(tmp_path / "out")] + (["--verbose"] if verbose else [])
    assert engine_cli.main(argv) == 1
    err = capsys.readouterr().err
    assert {m for m in ("debug detail", "info detail") if m in err} == shown
    assert err.splitlines()[-1] == "error: no photos found in the given inputs"


def test_a_log_level_that_is_not_one_is_named_and_ignored(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COLORIZER_LOG_LEVEL", "LOUD")
    monkeypatch.setattr("engine.batch.inputs.collect_inputs", _finds_nothing_but_logs)
    assert engine_cli.main(["colorize", str(tmp_path), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "COLORIZER_LOG_LEVEL=LOUD is not one of DEBUG, INFO, WARNING, ERROR" in err
    assert "info detail" not in err and "debug detail" not in err


def test_readout_runs_from_main_py_and_writes_weights_with_the_chosen_read_out(tmp_path, weights):
    (tmp_path / "photos").mkdir()
    for i in range(3):
        cv2.imwrite(str(tmp_path / "photos" / f"p{i}.png"), cv2.cvtColor(colour_photo(60, 80, i), cv2.COLOR_RGB2BGR))
    p = cli("readout", weights, tmp_path / "photos", "--out", tmp_path / "again.pt", "--min-gain", "-50")
    assert p.returncode == 0, p.stderr
    assert "read-out on 3 photos" in p.stdout and (tmp_path / "again.pt").is_file()
    assert cli("readout", weights, tmp_path / "nowhere", "--out", tmp_path / "x.pt").returncode == 2


def test_ctrl_c_says_how_many_photos_were_written_and_how_to_go_on(tmp_path, weights, capsys, monkeypatch):
    from engine.batch.pipeline import BatchPipeline

    for i in range(3):
        write_grey(tmp_path / "in" / f"p{i}.png", 40, 50, i)
    (tmp_path / "out").mkdir()
    cv2.imwrite(str(tmp_path / "out" / "p0.png"), np.zeros((40, 50, 3), np.uint8))  # done in an earlier run
    real_run = BatchPipeline.run

    def interrupted(self, jobs, on_result=None, **kw):
        def report(result):
            on_result(result)
            if result.index == 1:  # Ctrl-C after the second photo
                raise KeyboardInterrupt

        return real_run(self, jobs, on_result=report, **kw)

    monkeypatch.setattr(BatchPipeline, "run", interrupted)
    code = engine_cli.main(["colorize", str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--weights",
                            str(weights), "--size", "64", "--batch-size", "1", "--skip-existing"])
    err = capsys.readouterr().err
    assert code == 130
    assert (f"cancelled: 1 of 3 photos written to {tmp_path / 'out'} (1 skipped); run the same command with "
            "--skip-existing to go on where it stopped") in err


@pytest.fixture
def ctrl_c_reaches_python():
    """As on a terminal: a test run started in the background (as CI may start it) has SIGINT ignored."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_first_ctrl_c_finishes_the_photos_in_progress_and_counts_every_one_written(tmp_path, weights, capsys,
                                                                                    monkeypatch, ctrl_c_reaches_python):
    import signal

    from engine.batch.pipeline import BatchPipeline

    for i in range(6):
        write_grey(tmp_path / "in" / f"p{i}.png", 40, 50, i)
    real_run = BatchPipeline.run

    def interrupted(self, jobs, on_result=None, **kw):
        def report(result):
            on_result(result)
            if result.index == 0:  # Ctrl-C after the first photo, as the terminal sends it
                os.kill(os.getpid(), signal.SIGINT)

        return real_run(self, jobs, on_result=report, **kw)

    monkeypatch.setattr(BatchPipeline, "run", interrupted)
    code = engine_cli.main(["colorize", str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--weights",
                            str(weights), "--size", "64", "--batch-size", "1"])
    err = capsys.readouterr().err
    written = sorted((tmp_path / "out").glob("*.png"))
    assert code == 130 and 1 <= len(written) < 6
    assert "stopping after the photos in progress (Ctrl+C again quits without waiting for them)" in err
    assert f"cancelled: {len(written)} of 6 photos written" in err  # the photos in progress too
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # given back after the run


def test_folders_colorized_together_each_write_into_a_folder_of_their_name(tmp_path, weights):
    for folder in ("a/scans", "b/scans"):
        write_grey(tmp_path / folder / "p.png", 40, 50, 0)
    p = cli("colorize", tmp_path / "a/scans", tmp_path / "b/scans", "--output", tmp_path / "out", "--weights",
            weights, "--size", "64")
    assert p.returncode == 0, p.stderr
    assert sorted(str(f.relative_to(tmp_path / "out")) for f in (tmp_path / "out").rglob("*.png")) == [
        "a/scans/p.png", "b/scans/p.png"]


def test_colorize_readout_evaluate_and_tune_colour_at_one_working_size_by_default(tmp_path):
    """The read-out is chosen, the quality measured and a tune judged at the size the app colours at."""
    from engine.cli.parser import build_parser
    from engine.options import WORKING_SIZE, ColorizeSettings
    from engine.training.evaluate import EvalSettings
    from engine.training.readout import ReadoutSettings
    from engine.training.tune import TuneSettings

    parser = build_parser()
    sizes = {cmd: parser.parse_args([cmd, *args]).size for cmd, args in
             (("colorize", ["x", "--output", "o"]), ("readout", ["w", "p", "--out", "o"]), ("evaluate", ["f"]))}
    assert sizes == {"colorize": WORKING_SIZE, "readout": WORKING_SIZE, "evaluate": WORKING_SIZE}
    assert ColorizeSettings().size == EvalSettings(folder=tmp_path).size == WORKING_SIZE
    assert ReadoutSettings(weights=tmp_path, photos=tmp_path, out=tmp_path).size == WORKING_SIZE
    assert TuneSettings.__dataclass_fields__["working_size"].default == WORKING_SIZE


def test_a_teacher_without_the_weights_it_shares_bins_with_is_a_usage_error(tmp_path, weights, capsys):
    with pytest.raises(SystemExit) as stop:
        engine_cli.main(["train", str(tmp_path), "--teacher", str(weights), "--work", str(tmp_path / "w"),
                         "--out", str(tmp_path / "o.pt")])
    assert stop.value.code == 2 and "--teacher needs --init" in capsys.readouterr().err
    assert not (tmp_path / "o.pt").exists()


def test_a_run_started_with_ctrl_c_ignored_keeps_ignoring_it(tmp_path, weights, monkeypatch):
    """`colorize ... &` from a script ignores SIGINT: the run must not install a handler that cancels it."""
    import signal

    from engine.batch.pipeline import BatchPipeline

    write_grey(tmp_path / "in" / "p0.png", 40, 50, 0)
    seen = []
    real_run = BatchPipeline.run

    def watched(self, jobs, **kw):
        seen.append(signal.getsignal(signal.SIGINT))
        return real_run(self, jobs, **kw)

    monkeypatch.setattr(BatchPipeline, "run", watched)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        code = engine_cli.main(["colorize", str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--weights",
                                str(weights), "--size", "64"])
        assert code == 0 and seen == [signal.SIG_IGN] and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_second_ctrl_c_quits_at_once_saying_what_was_written(monkeypatch, capsys, ctrl_c_reaches_python):
    """Not by unwinding the run's threads (they went on writing after the count, and could abort in C++)."""
    import signal

    from engine.batch.pipeline import RunControl
    from engine.cli import interrupt

    exits = []
    monkeypatch.setattr(interrupt.os, "_exit", exits.append)
    control = RunControl()
    with interrupt.first_ctrl_c_cancels(control, lambda: "cancelled: 3 of 9 photos written"):
        on_ctrl_c = signal.getsignal(signal.SIGINT)
        on_ctrl_c(signal.SIGINT, None)
        assert control.cancelled and not exits  # the first: the run finishes the photos in progress
        on_ctrl_c(signal.SIGINT, None)
    assert exits == [130]
    assert "cancelled: 3 of 9 photos written" in capsys.readouterr().err


def test_photos_in_colour_are_named_whether_colorized_from_their_lightness_or_skipped(tmp_path, weights, capsys):
    """A real colour photo among the scans loses its own colours in its output: the run says which one did."""
    (tmp_path / "in").mkdir()
    assert cv2.imwrite(str(tmp_path / "in" / "holiday.png"), colour_photo(40, 50, 3))
    grey = cv2.imread(str(write_grey(tmp_path / "in" / "toned.png", 40, 50, 1)), cv2.IMREAD_GRAYSCALE)
    sepia = np.clip(grey[..., None] * np.array([0.75, 0.9, 1.05], np.float32), 0, 255).astype(np.uint8)  # B, G, R
    assert cv2.imwrite(str(tmp_path / "in" / "toned.png"), sepia)
    write_grey(tmp_path / "in" / "scan.png", 40, 50, 2)
    args = ["colorize", str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--weights", str(weights),
            "--size", "64"]
    assert engine_cli.main(args) == 0
    out = capsys.readouterr().out
    assert ("note: 1 photo (holiday.png) was in colour: colorized from its lightness, the photo's own colours not "
            "kept; --colour-inputs skip leaves such photos out") in out
    assert "toned.png" not in out  # a toned print is monochrome: colorized, and nothing to say
    assert engine_cli.main([*args, "--colour-inputs", "skip", "--overwrite"]) == 0
    out = capsys.readouterr().out
    assert "note: 1 photo (holiday.png) was in colour: skipped (--colour-inputs skip)" in out
    assert "colorized from its lightness" not in out


def test_a_photo_keeps_its_own_name_before_another_whose_format_changes_to_it_and_the_note_names_the_renamed(
        tmp_path, weights, capsys):
    """palette.gif is written as PNG: palette.png, found under its own name, is palette.png's, not the GIF's."""
    from PIL import Image

    write_grey(tmp_path / "in" / "palette.png", 40, 50, 1)
    Image.fromarray(cv2.imread(str(write_grey(tmp_path / "gif.png", 30, 20, 2)), cv2.IMREAD_GRAYSCALE)).save(
        tmp_path / "in" / "palette.gif")
    assert engine_cli.main(["colorize", str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--weights",
                            str(weights), "--size", "64"]) == 0
    sizes = {p.name: cv2.imread(str(p)).shape[:2] for p in (tmp_path / "out").iterdir()}
    assert sizes == {"palette.png": (40, 50), "palette (1).png": (30, 20)}
    assert "note: 1 output went under a new name (palette.gif as 'palette (1).png'): " in capsys.readouterr().out
