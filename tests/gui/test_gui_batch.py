"""Batches through the window: the worker thread, progress, pause, cancel, failures, comparison."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest
from PIL import Image
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

import engine.batch.pipeline as pipeline_module
from engine.batch.pipeline import RunControl
from engine.options import Status
from gui.bridge.worker import Backend
from gui.model.queue_model import COL_BASELINE, COL_DIFF, COL_MODEL

TIMEOUT_MS = 60_000


def _run(qtbot, window):
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS) as blocker:
        assert window.batch.start_batch()
    return blocker.args[0]


def _outputs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def test_whole_batch_colorizes_every_photo_and_shows_progress_and_summary(qtbot, make_window, backend,
                                                                           grey_photos, tmp_path):
    window = make_window(backend)
    photos = grey_photos(5)
    window.queue_presenter.add_paths(photos)
    summaries = []
    window.controller.finished.connect(summaries.append)
    with qtbot.waitSignals([window.controller.started, window.controller.finished], order="strict",
                           timeout=TIMEOUT_MS):
        assert window.batch.start_batch()
    summary = summaries[0]

    assert summary.done == 5 and summary.failed == 0
    assert [r.status for r in window.queue.rows()] == ["done"] * 5
    outputs = _outputs(tmp_path / "out")
    assert [p.name for p in outputs] == [p.name for p in photos]
    for out in outputs:
        with Image.open(out) as im:
            assert im.mode == "RGB" and im.size == (60, 40)
    assert window.progress.value() == 5 and window.progress.maximum() == 5
    assert "5 done of 5" in window.summary.text()
    assert "photos/s" in window.summary.text()
    assert len(window.timing.photo) == 5 and all(m > 0 for m in window.timing.model)
    assert "5 photos in" in window.status_label.text()
    assert not window.preview.after_image().isNull()  # the latest photo is shown
    assert not window.actions_by_name["start"].isEnabled() and not window.actions_by_name["cancel"].isEnabled()
    assert window.actions_by_name["run_again"].isEnabled()  # all done: Run Again, not Start, is the way on


def test_a_broken_photo_is_marked_failed_and_the_batch_goes_on(qtbot, make_window, backend, grey_photos,
                                                               tmp_path):
    window = make_window(backend)
    good = grey_photos(3)
    broken = tmp_path / "in" / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\nthis is not really a png")
    window.queue_presenter.add_paths([good[0], broken, good[1], good[2]])
    summary = _run(qtbot, window)
    assert summary.done == 3 and summary.failed == 1
    statuses = {r.path.name: r for r in window.queue.rows()}
    assert statuses["broken.png"].status == "failed"
    assert statuses["broken.png"].message  # the reason is shown in the queue
    assert all(statuses[p.name].status == "done" for p in good)


def test_pause_holds_the_batch_and_resume_finishes_it(qtbot, make_window, slow_backend, grey_photos, monkeypatch):
    window = make_window(slow_backend, batch_size=1)
    window.queue_presenter.add_paths(grey_photos(8))
    held_between_photos = threading.Event()  # the worker reached the paused wait between photos
    released = threading.Event()  # ...and came out of it
    wait_if_paused = RunControl.wait_if_paused

    def spy_wait(control: RunControl) -> None:
        paused = control.paused
        if paused:
            held_between_photos.set()
        wait_if_paused(control)
        if paused:
            released.set()

    monkeypatch.setattr(RunControl, "wait_if_paused", spy_wait)
    paused_once = []

    def pause_on_first(_result) -> None:
        if not paused_once:
            paused_once.append(1)
            window.actions_by_name["pause"].setChecked(True)

    window.controller.image_done.connect(pause_on_first)
    with qtbot.waitSignal(window.controller.paused_changed, timeout=TIMEOUT_MS):
        assert window.batch.start_batch()
    # The photos in progress finish, then the worker blocks between photos until resumed.
    qtbot.waitUntil(held_between_photos.is_set, timeout=TIMEOUT_MS)
    QApplication.processEvents()  # deliver the results it reported before it stopped
    held = window.queue.counts()["done"]
    assert held < 8
    # An absence check, so bounded by design: a pause that did not hold would finish a photo every 0.15 s.
    with qtbot.assertNotEmitted(window.controller.image_done, wait=500):
        pass
    assert window.queue.counts()["done"] == held and not released.is_set()
    assert window.controller.running and window.controller.paused
    assert "Paused" in window.status_label.text()
    assert window.actions_by_name["pause"].text() == "&Resume"
    assert window.summary.fields["photos"].text() == f"{held} of 8 so far; the figures come at the end"  # not "–"

    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS) as blocker:
        window.actions_by_name["pause"].setChecked(False)
    assert blocker.args[0].done == 8
    assert window.queue.counts()["done"] == 8


def test_cancel_stops_mid_batch_and_leaves_only_whole_outputs(qtbot, make_window, slow_backend, grey_photos,
                                                              tmp_path):
    window = make_window(slow_backend, batch_size=1)
    window.queue_presenter.add_paths(grey_photos(12, size=(120, 160)))
    first = []

    def cancel_on_first(_result) -> None:
        if not first:
            first.append(1)
            window.actions_by_name["cancel"].trigger()

    window.controller.image_done.connect(cancel_on_first)
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS) as blocker:
        assert window.batch.start_batch()
    summary = blocker.args[0]

    assert summary.cancelled
    assert 1 <= summary.done < 12
    rows = window.queue.rows()
    assert sum(r.status == "done" for r in rows) == summary.done
    assert all(r.status == "queued" for r in rows if r.status != "done")  # can run again later
    assert any("cancelled" in r.message for r in rows)
    files = _outputs(tmp_path / "out")
    assert len(files) == summary.done
    assert not [f for f in files if "colorizer-partial" in f.name]
    for f in files:
        with Image.open(f) as im:
            im.load()  # decodes completely: nothing half-written
            assert im.size == (160, 120)
    assert "cancelled" in window.status_label.text()


def test_comparison_mode_shows_both_times_the_speedup_and_largest_difference(qtbot, make_window, backend,
                                                                              grey_photos):
    window = make_window(backend)
    window.engine_panel.compare.setChecked(True)
    assert not window.table.isColumnHidden(COL_BASELINE)
    window.queue_presenter.add_paths(grey_photos(4))
    summary = _run(qtbot, window)
    assert summary.compare_speedup is not None and summary.max_abs_diff is not None
    model = window.queue
    for row in range(4):
        assert model.data(model.index(row, COL_MODEL)).endswith("ms")
        assert model.data(model.index(row, COL_BASELINE)).endswith("ms")
        assert model.data(model.index(row, COL_DIFF))  # each photo's own difference; the speed-up is the batch's
    assert len(window.timing.baseline) == 4 and all(b > 0 for b in window.timing.baseline)
    assert window.timing.baseline_curve.isVisible()
    assert f"{summary.compare_speedup:.2f}×" in window.summary.text()
    assert f"{summary.max_abs_diff:.3g}" in window.summary.text()


def test_without_comparison_the_comparison_columns_stay_hidden_and_empty(qtbot, make_window, backend,
                                                                         grey_photos):
    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(2))
    summary = _run(qtbot, window)
    assert summary.compare_speedup is None
    assert window.table.isColumnHidden(COL_BASELINE) and window.table.isColumnHidden(COL_DIFF)
    assert window.queue.data(window.queue.index(0, COL_DIFF)) == ""
    assert not window.timing.baseline_curve.isVisible()


def test_missing_weights_are_reported_and_the_photos_stay_queued(qtbot, make_window, grey_photos):
    from engine.weights import WeightsError

    def no_weights(_settings):
        raise WeightsError("weights file not found: resources/models/colorizer.pt")

    window = make_window(Backend(factory=no_weights))
    window.queue_presenter.add_paths(grey_photos(3))
    with qtbot.waitSignals([window.controller.failed, window.controller.finished], order="strict",
                           timeout=TIMEOUT_MS):
        assert window.batch.start_batch()
    assert [r.status for r in window.queue.rows()] == ["queued"] * 3
    assert "weights file not found" in window.status_label.text()
    assert "weights file not found" in window.batch.failure_box.text()
    assert not window.controller.running


def test_window_stays_responsive_during_a_batch(qtbot, make_window, slow_backend, grey_photos):
    window = make_window(slow_backend, batch_size=1)
    window.queue_presenter.add_paths(grey_photos(6))
    ticks = []
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.append(1))
    timer.start(20)
    ticks_at_each_photo = []
    window.controller.image_done.connect(lambda _result: ticks_at_each_photo.append(len(ticks)))
    _run(qtbot, window)
    timer.stop()
    # The UI thread ran its timer while the photos went through (>= 0.15 s each); a batch that blocked
    # the UI thread would deliver every result with no tick in between.
    assert len(ticks_at_each_photo) == 6
    assert ticks_at_each_photo[-1] > ticks_at_each_photo[0]


def test_settings_are_snapshotted_at_start_and_locked_while_running(qtbot, make_window, slow_backend, grey_photos,
                                                                     tmp_path):
    window = make_window(slow_backend, batch_size=1)
    window.queue_presenter.add_paths(grey_photos(3))
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS):
        assert window.batch.start_batch()
        request = window.controller.request
        assert not window.engine_panel.isEnabled() and not window.export_panel.folder.isEnabled()
        assert window.export_panel.open_button.isEnabled()
        window.export_panel.set_output_dir(tmp_path / "elsewhere")  # e.g. restored by code, not the user
        assert request.export.output_dir == tmp_path / "out"
        assert not window.batch.start_batch()  # one batch at a time
    assert len(_outputs(tmp_path / "out")) == 3 and not (tmp_path / "elsewhere").exists()
    assert window.engine_panel.isEnabled()


@pytest.mark.parametrize("pattern", ["{nope}", "{stem", ""])
def test_a_bad_file_name_pattern_does_not_start(make_window, backend, grey_photos, pattern):
    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(1))
    window.export_panel.pattern.setText(pattern)
    assert window.export_panel.pattern_error.isVisibleTo(window.export_panel)
    assert not window.batch.start_batch()
    assert "Cannot start" in window.status_label.text()
    assert not window.controller.running


def test_a_second_batch_runs_only_new_and_failed_photos(qtbot, make_window, backend, grey_photos, tmp_path):
    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(2))
    _run(qtbot, window)
    window.queue_presenter.add_paths(grey_photos(3))  # two already queued and done, one new
    summary = _run(qtbot, window)
    assert summary.total == 1 and summary.done == 1
    assert len(_outputs(tmp_path / "out")) == 3


def test_closing_the_window_mid_batch_cancels_and_joins_the_worker(qtbot, make_window, slow_backend, grey_photos,
                                                                   tmp_path):
    window = make_window(slow_backend, batch_size=1)
    window.queue_presenter.add_paths(grey_photos(10))
    with qtbot.waitSignal(window.controller.image_done, timeout=TIMEOUT_MS):
        assert window.batch.start_batch()
    window.close()
    assert not window.controller.running  # joined: the dangling-QThread check would fail the test otherwise
    files = _outputs(tmp_path / "out")
    assert len(files) < 10 and not [f for f in files if "colorizer-partial" in f.name]


def test_a_batch_of_old_prints_scans_suggests_the_old_prints_model_and_a_clean_one_does_not(
        qtbot, make_window, backend, grey_photos, tmp_path):
    import cv2
    from helpers import SAMPLES, old_scan

    from engine.imageio import decode

    window = make_window(backend)
    (tmp_path / "old").mkdir()
    scans = []
    for path in SAMPLES[:3]:
        scans.append(tmp_path / "old" / f"{path.stem}.jpg")
        cv2.imwrite(str(scans[-1]), old_scan(decode(path).pixels, 7)[..., ::-1])
    window.queue_presenter.add_paths(scans)
    _run(qtbot, window)
    advice = window.summary.fields["model"].text()
    assert advice == ('Shipped (chosen in the Engine panel). 3 of 3 photos looked at seem to be scans of old prints: '
                      '"Old prints" may colour them better')
    assert 'Most look like old prints: try "Old prints"' in window.status_label.text()

    window.queue_presenter.add_paths(grey_photos(3))
    window.batch.start_batch(only={r.key for r in window.queue.rows() if r.path.parent.name == "in"})
    qtbot.waitUntil(lambda: not window.controller.running, timeout=TIMEOUT_MS)
    assert window.summary.fields["model"].text() == "Shipped (chosen in the Engine panel)"  # no advice


def test_outputs_written_under_a_new_name_are_counted_and_the_way_to_choose_otherwise_is_named(qtbot, make_window,
                                                                                             backend, grey_photos,
                                                                                             tmp_path):
    window = make_window(backend)
    photos = grey_photos(3)  # one of three taken: too few to ask about first (test_gui_outputs_taken)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / photos[0].name).write_bytes(b"someone's earlier file")
    window.queue_presenter.add_paths(photos)
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS) as blocker:
        assert window.batch.start_batch()
    kept = (tmp_path / "out" / photos[0].name).read_bytes()
    assert blocker.args[0].renamed == 1 and kept == b"someone's earlier file"
    assert "1 under a new name" in window.status_label.text() and "If it exists" in window.status_label.text()
    rows = window.queue.rows()
    assert rows[0].message == f"written as '{photos[0].stem} (1).png'" and rows[1].message == ""  # on its own row


def test_two_photos_of_one_name_under_replace_are_not_sent_to_a_setting_that_cannot_help(qtbot, make_window, backend,
                                                                                        tmp_path, write_photo):
    window = make_window(backend)
    window.export_panel.set_choice(replace(window.export_panel.choice(), if_exists="overwrite"))
    files = [write_photo(tmp_path / folder / "one.png") for folder in ("a", "b")]
    window.queue_presenter.add_paths(files)  # files given one by one: both write at the output's top
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS):
        assert window.batch.start_batch()
    status = window.status_label.text()
    assert "1 under a new name" in status and "another photo of the run or an input had the name" in status
    assert "If it exists" not in status


def test_photos_queued_after_a_run_reset_the_progress_bar_to_what_is_left_to_run(qtbot, make_window, backend,
                                                                                 grey_photos):
    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(1))
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS):
        assert window.batch.start_batch()
    assert window.progress.text().endswith("done")
    window.queue_presenter.add_paths(grey_photos(4, folder="more"))
    assert window.progress.text() == "4 photos to run" and window.progress.value() == 0


def test_an_output_folder_that_cannot_be_written_stops_at_once_and_its_rows_say_they_were_not_tried(
        qtbot, make_window, backend, grey_photos, monkeypatch):
    import errno
    import os

    def read_only(*a, **kw):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(pipeline_module.tempfile, "mkstemp", read_only)
    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(3))
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS):
        assert window.batch.start_batch()
    assert {r.message for r in window.queue.rows()} == {
        f"not tried (cannot write in the output folder {window.prefs.current().export.output_dir}: Read-only file "
        "system): run the batch again to colorize it"}
    assert window.progress.format().endswith("· stopped")
    assert window.status_label.text().startswith("No photo colorized, 3 not tried (cannot write in the output folder")


def test_between_batches_the_kept_engine_gives_back_its_buffers_and_the_next_batch_runs(qtbot, make_window, backend,
                                                                                        grey_photos, monkeypatch):
    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(4))
    held: list[int] = []
    real_run = pipeline_module.BatchPipeline.run

    def run_and_note(self, *a, **kw):
        summary = real_run(self, *a, **kw)
        held.append(self.colorizer.runtime.pool.held_bytes)  # what the batch left pooled, before the release
        return summary

    monkeypatch.setattr(pipeline_module.BatchPipeline, "run", run_and_note)
    for _ in range(2):
        with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS) as blocker:
            assert window.batch.run_again() if window.queue.counts()[Status.DONE] else window.batch.start_batch()
        assert blocker.args[0].done == 4
    kept = list(backend.factory._cache.values())
    assert held[0] > 0  # the pool was in use (a later batch may replay records, in an arena of their own)...
    assert kept and all(c.runtime.pool.held_bytes == 0 for c in kept)  # ...and is empty between batches


def test_a_photo_in_colour_says_on_its_row_that_its_own_colours_are_not_kept(qtbot, make_window, backend, tmp_path):
    import cv2
    from helpers import colour_photo, write_grey

    from engine.options import IN_COLOUR

    window = make_window(backend)
    (tmp_path / "box").mkdir()
    assert cv2.imwrite(str(tmp_path / "box" / "holiday.png"), colour_photo(40, 50, 3))
    write_grey(tmp_path / "box" / "scan.png", 40, 50, 1)
    window.queue_presenter.add_paths([tmp_path / "box"])
    assert _run(qtbot, window).done == 2
    assert {r.path.name: r.message for r in window.queue.rows()} == {"holiday.png": IN_COLOUR, "scan.png": ""}
    row = next(i for i, r in enumerate(window.queue.rows()) if r.path.name == "holiday.png")
    window.table.selectRow(row)
    qtbot.waitUntil(lambda: "holiday.png (in colour: its lightness)" in window.preview.before_caption.text())


def test_an_index_in_the_name_pattern_is_the_photos_place_in_the_queue_so_run_again_replaces_its_own_output(
        qtbot, make_window, backend, grey_photos, tmp_path):
    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(3))
    window.export_panel.pattern.setText("photo_{index}")
    _run(qtbot, window)
    out = tmp_path / "out"
    first = {p.name for p in _outputs(out)}
    assert len(first) == 3 and all(p.startswith("photo_") for p in first)
    window.table.selectRow(2)  # the third photo alone: numbered 1 within this run, it took photo_1's name
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS):
        assert window.batch.run_again()
    assert {p.name for p in _outputs(out)} == first  # no new file, no "(1)" copy
    assert window.queue.row(2).output is not None and window.queue.row(2).output.stem.endswith("_3")
