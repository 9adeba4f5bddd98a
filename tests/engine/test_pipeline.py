"""The batch pipeline: outputs where they belong, per-photo errors, cancel, pause, timings."""

import threading
from pathlib import Path

import cv2
import numpy as np
import pytest
from helpers import random_model, write_grey

from engine.batch.inputs import collect_inputs
from engine.batch.pipeline import BatchPipeline, RunControl
from engine.colorizer import Colorizer
from engine.options import BatchSummary, ColorizeSettings, ExportOptions, Job


@pytest.fixture(scope="module")
def colorizer():
    return Colorizer.create(ColorizeSettings(device="cpu", size=64, batch_size=3), model=random_model())


def make_tree(root: Path) -> Path:
    src = root / "in"
    write_grey(src / "a.png", 40, 60, 1)
    write_grey(src / "b.jpg", 61, 33, 2)
    write_grey(src / "sub" / "c.png", 50, 50, 3)
    write_grey(src / "sub" / "deeper" / "d.tif", 30, 70, 4)
    (src / "notes.txt").write_text("not a photo")
    return src


def run(colorizer, jobs, out, **kw):
    results = []
    summary = BatchPipeline(colorizer, ExportOptions(out, **kw)).run(jobs, on_result=results.append)
    return summary, results


def test_outputs_mirror_the_input_tree_with_the_same_names_and_sizes(colorizer, tmp_path):
    src = make_tree(tmp_path)
    jobs, problems = collect_inputs([src])
    assert problems == [] and len(jobs) == 4  # notes.txt ignored
    summary, results = run(colorizer, jobs, tmp_path / "out")
    assert summary.done == 4 and summary.failed == 0
    for rel in ["a.png", "b.jpg", "sub/c.png", "sub/deeper/d.tif"]:
        src_img = cv2.imread(str(src / rel), cv2.IMREAD_UNCHANGED)
        out_img = cv2.imread(str(tmp_path / "out" / rel))
        assert out_img is not None and out_img.shape[:2] == src_img.shape[:2]
    assert [r.index for r in results] == [0, 1, 2, 3]  # reported in input order


def test_format_option_changes_the_extension(colorizer, tmp_path):
    src = make_tree(tmp_path)
    jobs, _ = collect_inputs([src])
    run(colorizer, jobs, tmp_path / "out", format="webp")
    assert sorted(p.name for p in (tmp_path / "out").rglob("*.webp")) == ["a.webp", "b.webp", "c.webp", "d.webp"]


def test_broken_file_fails_alone_and_the_batch_goes_on(colorizer, tmp_path):
    src = make_tree(tmp_path)
    (src / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 definitely not a jpeg")
    jobs, _ = collect_inputs([src])
    summary, results = run(colorizer, jobs, tmp_path / "out")
    failed = [r for r in results if r.status == "failed"]
    assert summary.done == 4 and len(failed) == 1
    assert failed[0].source.name == "broken.jpg" and "\n" not in failed[0].message and failed[0].message


def test_skip_existing_resumes_without_redoing_work(colorizer, tmp_path):
    src = make_tree(tmp_path)
    jobs, _ = collect_inputs([src])
    out = tmp_path / "out"
    run(colorizer, jobs, out)
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*.*")}
    summary, results = run(colorizer, jobs, out, if_exists="skip")
    assert summary.skipped == 4 and summary.done == 0
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*.*")} == before
    assert [r.existing for r in results] == [out / "a.png", out / "b.jpg", out / "sub/c.png", out / "sub/deeper/d.tif"]
    assert all(r.output is None for r in results)  # named to look at, never as the photo's own output


def test_new_name_never_overwrites_existing_outputs(colorizer, tmp_path):
    src = make_tree(tmp_path)
    jobs, _ = collect_inputs([src / "a.png"])
    out = tmp_path / "out"
    first, _ = run(colorizer, jobs, out)
    second, _ = run(colorizer, jobs, out)
    assert sorted(p.name for p in out.iterdir()) == ["a (1).png", "a.png"]
    assert (first.renamed, second.renamed) == (0, 1) and "1 under a new name" in second.line()


def test_output_folder_equal_to_input_folder_never_overwrites_an_input(colorizer, tmp_path):
    src = make_tree(tmp_path)
    original = (src / "a.png").read_bytes()
    jobs, _ = collect_inputs([src])
    summary, results = run(colorizer, jobs, src, if_exists="overwrite")
    assert summary.done == 4
    assert (src / "a.png").read_bytes() == original
    assert all(r.output != r.source for r in results)


def test_timings_and_model_busy_share_are_reported(colorizer, tmp_path):
    src = make_tree(tmp_path)
    jobs, _ = collect_inputs([src])
    summary, results = run(colorizer, jobs, tmp_path / "out")
    assert all(r.decode_ms > 0 and r.infer_ms > 0 and r.encode_ms > 0 for r in results)
    assert 0 < summary.model_busy_share <= 1
    assert summary.photos_per_s > 0
    assert "4 photos in" in summary.line() and "model busy" in summary.line()


def test_the_summary_of_a_run_under_a_second_never_says_zero_seconds():
    short, long = BatchSummary(total=1, done=1, wall_s=0.048), BatchSummary(total=9, done=9, wall_s=12.34)
    assert short.line().startswith("1 photo in 0.05 s (20.83 photos/s)")
    assert long.line().startswith("9 photos in 12.3 s")


def test_cancel_stops_between_photos_and_leaves_no_partial_files(colorizer, tmp_path):
    src = tmp_path / "in"
    for i in range(12):
        write_grey(src / f"p{i:02d}.png", 64, 64, i)
    jobs, _ = collect_inputs([src])
    control = RunControl()
    seen = []

    def on_result(r):
        seen.append(r)
        if len(seen) == 2:
            control.cancel()

    summary = BatchPipeline(colorizer, ExportOptions(tmp_path / "out")).run(jobs, on_result=on_result, control=control)
    assert summary.cancelled
    assert summary.done < 12
    assert sum(r.status == "cancelled" for r in summary.results) == 12 - summary.done
    written = list((tmp_path / "out").iterdir())
    assert len(written) == summary.done
    for p in written:
        assert cv2.imread(str(p)) is not None and "partial" not in p.name


def test_pause_holds_the_batch_until_resumed(colorizer, tmp_path):
    src = tmp_path / "in"
    for i in range(6):
        write_grey(src / f"p{i}.png", 40, 40, i)
    jobs, _ = collect_inputs([src])
    control = RunControl()
    control.pause()
    done = threading.Event()
    box = {}

    def work():
        box["summary"] = BatchPipeline(colorizer, ExportOptions(tmp_path / "out")).run(jobs, control=control)
        done.set()

    t = threading.Thread(target=work)
    t.start()
    assert not done.wait(1.0)  # paused: nothing finishes
    assert not list((tmp_path / "out").glob("*.png"))
    control.resume()
    assert done.wait(60)
    t.join()
    summary = box["summary"]
    assert summary.done == 6
    # The time held paused is counted apart, and left out of photos/s.
    assert 0 < summary.paused_s < summary.wall_s
    assert summary.photos_per_s == pytest.approx(6 / (summary.wall_s - summary.paused_s))


def test_compare_mode_reports_both_times_and_the_difference(colorizer, tmp_path):
    """fp32 pinned: "auto" is bf16 where the CPU runs it faster; other precisions: tests/test_precisions.py."""
    from engine.runtimes.base import AGREEMENT

    src = make_tree(tmp_path)
    jobs, _ = collect_inputs([src])
    fp32 = Colorizer.create(ColorizeSettings(device="cpu", size=64, batch_size=3, precision="fp32"),
                            model=colorizer.model)
    baseline = Colorizer.create(ColorizeSettings(engine="baseline", device="cpu", size=64, batch_size=3),
                                model=colorizer.model)
    results = []
    summary = BatchPipeline(fp32, ExportOptions(tmp_path / "out"), compare=baseline).run(
        jobs, on_result=results.append)
    assert len(results) == 4
    assert all(r.compare_infer_ms and r.compare_infer_ms > 0 for r in results)
    assert summary.compare_speedup and summary.compare_speedup > 0
    assert summary.max_abs_diff is not None and summary.max_abs_diff <= AGREEMENT["fp32"].max_abs
    assert summary.p999_abs_diff is not None and summary.p999_abs_diff <= summary.max_abs_diff
    for r in results:  # each photo's own figures; the batch's max is the largest of them
        assert r.p999_abs_diff is not None and r.max_abs_diff is not None and r.p999_abs_diff <= r.max_abs_diff
    assert summary.max_abs_diff == max(r.max_abs_diff for r in results)
    assert summary.compared_infer_s == pytest.approx(summary.infer_s)  # every batch was compared
    assert summary.comparison() == "optimized fp32, batch 3 vs baseline fp32, batch 3"


def test_the_batch_wide_p999_is_read_back_within_the_bin_width_and_never_below():
    from engine.batch.diffs import DiffHistogram

    rng = np.random.default_rng(0)
    parts = [np.abs(rng.standard_t(3, size=(2, 41, 50))).astype(np.float32) * s for s in (1e-3, 0.5, 8.0)]
    hist = DiffHistogram()
    for part in parts:
        hist.add(part)
    exact = float(np.percentile(np.concatenate([p.ravel() for p in parts]), 99.9, method="inverted_cdf"))
    assert exact <= hist.percentile(99.9) <= exact * 1.016
    assert DiffHistogram().percentile(99.9) is None


def test_strength_scales_the_written_colour(colorizer, tmp_path):
    """0: grey; 2: more colourful than 1 (the GUI's slider and the CLI's --strength)."""
    from engine.color import colourfulness

    src = tmp_path / "in"
    write_grey(src / "a.png", 48, 64, 1)
    jobs, _ = collect_inputs([src])
    written = {}
    for strength in (0.0, 1.0, 2.0):
        out = tmp_path / f"out{strength}"
        summary, _ = run(colorizer, jobs, out, strength=strength)
        assert summary.done == 1
        written[strength] = cv2.imread(str(out / "a.png")).astype(np.int16)
    grey = written[0.0]
    assert np.abs(grey[..., 0] - grey[..., 1]).max() <= 1 and np.abs(grey[..., 1] - grey[..., 2]).max() <= 1
    assert colourfulness(written[2.0][..., ::-1]) > 1.3 * colourfulness(written[1.0][..., ::-1])


def test_previews_carry_l_and_ab_for_the_gui(colorizer, tmp_path):
    src = make_tree(tmp_path)
    jobs, _ = collect_inputs([src / "a.png"])
    results = []
    BatchPipeline(colorizer, ExportOptions(tmp_path / "out"), preview_size=32).run(jobs, on_result=results.append)
    p = results[0].preview
    assert p is not None and max(p.L.shape) == 32 and p.ab.shape == p.L.shape + (2,)


def test_collect_inputs_drops_duplicates_and_survives_symlink_loops(tmp_path):
    src = make_tree(tmp_path)
    (src / "sub" / "loop").symlink_to(src, target_is_directory=True)
    jobs, problems = collect_inputs([src, src / "a.png", tmp_path / "missing"])
    assert len(jobs) == 4
    assert problems and "missing" in problems[0]


def test_export_options_are_validated(tmp_path):
    with pytest.raises(ValueError):
        ExportOptions(tmp_path, format="gif").validated()
    with pytest.raises(ValueError):
        ExportOptions(tmp_path, name_pattern="{nope}").validated()


def test_name_pattern_and_flat_export(colorizer, tmp_path):
    src = make_tree(tmp_path)
    jobs, _ = collect_inputs([src])
    run(colorizer, jobs, tmp_path / "out", mirror_subfolders=False, name_pattern="{stem}_colour", format="png")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "a_colour.png", "b_colour.png", "c_colour.png", "d_colour.png"]


def test_outputs_never_land_outside_the_output_folder(colorizer, tmp_path):
    src = tmp_path / "in"
    write_grey(src / "x.png", 20, 20)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "sub").symlink_to(outside, target_is_directory=True)
    write_grey(src / "sub" / "y.png", 20, 20)
    jobs = [Job(0, src / "sub" / "y.png", src), Job(1, Path(str(src) + "/../in/x.png"), src)]
    summary, results = run(colorizer, jobs, out)
    assert summary.done == 2
    assert not list(outside.iterdir())
    for r in results:
        assert out.resolve() in Path(r.output).resolve().parents
    assert np.all([Path(r.output).exists() for r in results])


def test_photos_routed_to_another_colorizer_come_out_as_that_one_colours_them(colorizer, tmp_path):
    other = Colorizer.create(ColorizeSettings(device="cpu", size=64, batch_size=3, precision="fp32"),
                             model=random_model(seed=7))
    mine = Colorizer.create(ColorizeSettings(device="cpu", size=64, batch_size=3, precision="fp32"),
                            model=random_model())
    src = make_tree(tmp_path)
    jobs, _ = collect_inputs([src])
    routed = {1: other, 3: other}  # b.jpg and d.tif, each in a batch with a photo of the first colorizer
    summary = BatchPipeline(mine, ExportOptions(tmp_path / "mixed", format="png"), routed=routed).run(jobs)
    assert summary.done == 4
    for name, c in (("alone-mine", mine), ("alone-other", other)):
        BatchPipeline(c, ExportOptions(tmp_path / name, format="png")).run(jobs)
    for job in jobs:
        rel = job.path.relative_to(src).with_suffix(".png")
        mixed = cv2.imread(str(tmp_path / "mixed" / rel)).astype(int)
        own = cv2.imread(str(tmp_path / ("alone-other" if job.index in routed else "alone-mine") / rel)).astype(int)
        wrong = cv2.imread(str(tmp_path / ("alone-mine" if job.index in routed else "alone-other") / rel)).astype(int)
        assert np.abs(mixed - own).max() <= 1 < np.abs(mixed - wrong).max(), rel


def test_routing_refuses_a_comparison_or_another_working_size(colorizer):
    bigger = Colorizer.create(ColorizeSettings(device="cpu", size=128), model=random_model())
    with pytest.raises(ValueError, match="same working size"):
        BatchPipeline(colorizer, ExportOptions(Path("out")), routed={0: bigger})
    with pytest.raises(ValueError, match="no comparison"):
        BatchPipeline(colorizer, ExportOptions(Path("out")), compare=colorizer, routed={0: colorizer})


def test_the_summary_line_gives_the_time_its_rate_is_over_and_the_pause_apart():
    line = BatchSummary(total=100, done=100, wall_s=25.5, paused_s=14.5, infer_s=2.0).line()
    assert line.startswith("100 photos in 11.0 s (9.09 photos/s)") and line.endswith(", 14.5 s paused (not counted)")
    assert BatchSummary(total=3, skipped=3, wall_s=0.08).line() == "No photo colorized, 3 skipped"
