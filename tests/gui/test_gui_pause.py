"""Pause: the photos finished while pausing show done, the ETA stops while paused and counts down
otherwise, and the final photos/s leaves the paused time out.
"""

from __future__ import annotations

import threading

import pytest
from PySide6.QtWidgets import QApplication

from engine.batch.pipeline import RunControl
from gui.presenters import batch_controller as gui_batch
from gui.presenters.batch_controller import Progress, progress_format

TIMEOUT_MS = 60_000


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(gui_batch.time, "monotonic", fake)
    return fake


def test_the_eta_leaves_out_the_time_paused_and_stands_still_while_paused(clock):
    p = Progress(10)
    clock.now += 4.0
    p.photo_done()
    p.photo_done()  # 2 photos in 4 s: 2 s a photo, 8 left
    assert p.eta_s() == pytest.approx(16.0)
    clock.now += 1.0
    assert p.eta_s() == pytest.approx(15.0)  # counts down between photos
    p.pause()
    clock.now += 600.0
    assert p.eta_s() == pytest.approx(15.0) and progress_format(p).endswith("paused")
    p.resume()
    assert p.eta_s() == pytest.approx(15.0) and "ETA 0:15" in progress_format(p)
    clock.now += 1.0
    p.photo_done()  # 3 photos in 6 s of work (the 600 s paused not counted): the first two came together, the
    assert p.eta_s() == pytest.approx(14.0)  # third 2 s after them: 2 s a photo, 7 left


def test_the_eta_goes_by_the_speed_after_the_first_photo_not_the_model_loading_before_it(clock):
    p = Progress(42)
    clock.now += 6.0  # loading the model, choosing it, the first call's warm-up
    p.photo_done()
    assert p.eta_s() == pytest.approx(6.0 * 41)  # nothing better to go by yet
    for _ in range(9):  # then a photo every 0.2 s
        clock.now += 0.2
        p.photo_done()
    assert p.eta_s() == pytest.approx(0.2 * 32)  # not 7.8 s / 10 photos x 32 = 25 s


def test_the_eta_counts_a_batchs_photos_that_come_through_together_as_one_burst(clock):
    p = Progress(40)
    clock.now += 6.0
    for _batch in range(4):  # batches of 4: each batch's photos through within a few ms, a batch every 0.8 s
        for _ in range(4):
            p.photo_done()
            clock.now += 0.002
        clock.now += 0.8 - 0.008
    # 0.2 s a photo, 24 left, less the 0.794 s since the last one; counting the first batch's other photos as if
    assert p.eta_s() == pytest.approx(0.2 * 24 - 0.794, abs=0.01)  # they took time would say 0.16 s a photo


def test_photos_finished_while_pausing_show_done_and_photos_per_s_leaves_out_the_pause(qtbot, make_window,
                                                                                      slow_backend, grey_photos,
                                                                                      monkeypatch):
    window = make_window(slow_backend, batch_size=2)
    window.queue_presenter.add_paths(grey_photos(6))
    held = threading.Event()  # the worker reached the paused wait between photos
    wait_if_paused = RunControl.wait_if_paused

    def spy_wait(control: RunControl) -> None:
        if control.paused:
            held.set()
        wait_if_paused(control)

    monkeypatch.setattr(RunControl, "wait_if_paused", spy_wait)
    done_results = []
    window.controller.image_done.connect(lambda r: done_results.append(r) if r.status == "done" else None)
    started = []
    window.controller.image_started.connect(started.append)

    def pause_on_first(_index) -> None:
        if len(started) == 1:
            window.actions_by_name["pause"].setChecked(True)  # while the first batch is being worked on

    window.controller.image_started.connect(pause_on_first)
    assert window.batch.start_batch()
    qtbot.waitUntil(held.is_set, timeout=TIMEOUT_MS)
    QApplication.processEvents()  # deliver what the engine reported before it held
    statuses = [r.status for r in window.queue.rows()]
    assert "working" not in statuses  # every photo taken up before the pause was written and shown done
    assert statuses.count("done") == len(done_results) >= 1
    assert window.progress.format().endswith("paused")
    pause = window.actions_by_name["pause"]  # says what a click does now, on hover too
    assert (pause.text(), pause.statusTip()) == ("&Resume", "Go on colorizing")

    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS) as blocker:
        window.actions_by_name["pause"].setChecked(False)
    summary = blocker.args[0]
    assert summary.done == 6 and 0 < summary.paused_s < summary.wall_s
    assert summary.photos_per_s == pytest.approx(summary.done / (summary.wall_s - summary.paused_s))
    assert "paused, not counted" in window.summary.fields["rate"].text()
    assert "paused (not counted)" in window.status_label.text()
    assert window.actions_by_name["pause"].statusTip() == "Pause after the photos in progress"


def test_skipped_photos_move_the_count_but_not_the_eta(clock):
    p = Progress(10)
    for _ in range(6):  # --skip-existing: six outputs exist, taken in no time
        p.photo_done(skipped=True)
    assert p.eta_s() is None and "6 skipped" in progress_format(p)  # no photo worked on yet: no speed to go by
    clock.now += 4.0
    p.photo_done()
    p.photo_done()  # 2 photos worked on in 4 s: 2 s a photo, 2 left
    assert p.eta_s() == pytest.approx(4.0)
