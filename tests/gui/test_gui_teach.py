"""Model > Teach from Colour Photos… (issue #23): the tune in a separate process while the window stays live, cancel,
the refusals, and the Engine panel's model choice reaching the batch and the saved settings.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import pytest
from helpers import random_model, write_grey
from PySide6.QtCore import QSettings, QTimer
from PySide6.QtWidgets import QApplication, QTextBrowser

from engine.options import ColorizeSettings, Status
from engine.weights import save_weights
from gui.main_window import MainWindow
from gui.model import teach
from gui.model.tune_process import TuneProcess, tune_arguments

TINY = ("--batch", "2", "--crop", "64", "--threads", "1")  # a tiny, fast tune (hidden flags of `tune`)


@pytest.fixture
def models_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "models"
    monkeypatch.setenv("COLORIZER_MODELS_DIR", str(folder))  # the tune's process inherits it
    return folder


def colour_image(seed: int, h: int = 96, w: int = 128) -> np.ndarray:
    """A smooth, clearly coloured BGR image: hue gradients and a disc (never skipped as grey)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    hue = (rng.integers(0, 180) + 60 * x / w + 30 * np.sin(y / h * 3)) % 180
    hsv = np.stack([hue, np.full_like(hue, 170), 90 + 120 * y / h], axis=-1).astype(np.uint8)
    bgr = cv2.cvtColor(hsv, cv2.COLOR_HSV2BGR)
    cv2.circle(bgr, (int(rng.integers(20, w - 20)), int(rng.integers(20, h - 20))), 14,
               [int(v) for v in rng.integers(0, 255, 3)], -1)
    return bgr


@pytest.fixture
def colour_folder(tmp_path: Path):
    def make(n: int, name: str = "colour") -> Path:
        folder = tmp_path / name
        (folder / "sub").mkdir(parents=True, exist_ok=True)
        for i in range(n):  # some in a subfolder: the count and the tune search folders through
            assert cv2.imwrite(str(folder / ("sub" if i % 3 == 0 else ".") / f"photo{i:02d}.png"), colour_image(i))
        (folder / "notes.txt").write_text("not a photo")
        return folder

    return make


def teach_window(make_window, backend, folder: Path, name: str, extra: tuple[str, ...] = ()):
    window = make_window(backend)
    window.teach.extra_args = extra
    dialog = window.teach.open_dialog()
    window.teach.add_folders([folder])
    dialog.name_edit.setText(name)
    return window, dialog


def test_teaching_runs_in_another_process_while_the_window_keeps_processing_events(
        qtbot, backend, make_window, models_dir, colour_folder):
    window, dialog = teach_window(make_window, backend, colour_folder(24), "Family",
                                  (*TINY, "--minutes", "0.05"))
    qtbot.waitUntil(lambda: "24 photos found" in dialog.count_label.text(), timeout=5000)
    assert "held out" in dialog.estimate_label.text() and "Only 24 photos" in dialog.message()  # a warning
    ticks = [0]
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.__setitem__(0, ticks[0] + 1))
    timer.start(50)
    started = time.monotonic()
    assert window.teach.start()
    assert dialog.phase == "running" and window.teach.run is not None
    qtbot.waitUntil(lambda: window.teach.run is None, timeout=180_000)
    elapsed = time.monotonic() - started
    timer.stop()
    assert dialog.phase == "result", dialog.message()
    # The window kept processing events the whole time: at least a third of the 20 ticks a second came.
    assert elapsed > 2 and ticks[0] >= elapsed / 0.05 / 3, (ticks[0], elapsed)
    assert window.teach.steps_seen >= 1 and dialog.loss_plot.steps  # the live loss plot got points
    verdict = dialog.verdict()
    assert "shipped model" in verdict and "photos held out" in verdict and "dB" in verdict
    assert dialog.examples.shown_pictures() >= 3 and dialog.examples.shown_pictures() % 3 == 0
    assert (models_dir / "Family.pt").is_file() and (models_dir / "Family.md").is_file()
    dialog.keep_button.click()
    assert window.teach.dialog is None
    assert window.status_label.text().endswith(", in place of Shipped.")  # the choice it took the place of
    panel = window.engine_panel
    assert panel.model_name() == "Family" and panel.choice().weights == models_dir / "Family.pt"
    assert "Family" in [panel.model.itemData(i) for i in range(panel.model.count())]
    assert "Family" in window.models.card_text()  # Show Model Card reads the tuned model's card


def test_cancel_stops_the_tune_within_seconds_and_leaves_no_partial_files(
        qtbot, backend, make_window, models_dir, colour_folder):
    window, dialog = teach_window(make_window, backend, colour_folder(24), "Stopped", (*TINY, "--minutes", "5"))
    qtbot.waitUntil(lambda: "24 photos found" in dialog.count_label.text(), timeout=5000)
    assert window.teach.start()
    qtbot.waitUntil(lambda: window.teach.steps_seen >= 1, timeout=120_000)
    assert (models_dir / "Stopped.work").is_dir()  # it is training, and has written its work folder
    pid = window.teach.run.process.processId()
    assert pid > 0
    cancelled = time.monotonic()
    dialog.cancel_button.click()
    qtbot.waitUntil(lambda: window.teach.run is None, timeout=5000)
    assert time.monotonic() - cancelled < 5
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the process is gone (and reaped)
    assert dialog.phase == "setup" and "Cancelled" in dialog.message()
    assert not (models_dir / "Stopped.pt").exists() and not (models_dir / "Stopped.work").exists()


def test_the_folders_time_and_start_model_of_the_last_tune_are_offered_again_but_not_its_name(
        qtbot, backend, make_window, models_dir, tmp_path):
    for i in range(22):  # grey: the tune itself refuses them, so it ends in seconds
        write_grey(tmp_path / "family" / f"g{i:02d}.png", 48, 64, seed=i)
        write_grey(tmp_path / "unplugged" / f"g{i:02d}.png", 48, 64, seed=i)
    window, dialog = teach_window(make_window, backend, tmp_path / "family", "Once", TINY)
    window.teach.add_folders([tmp_path / "unplugged"])
    dialog.set_minutes(25)
    bases = [dialog.base_combo.itemData(i) for i in range(dialog.base_combo.count())]
    assert bases[:2] == ["shipped", "old-prints"] and "auto" not in bases  # Auto is no one model to start from
    assert dialog.base_combo.base() == "shipped"
    dialog.base_combo.setCurrentIndex(bases.index("old-prints"))
    qtbot.waitUntil(lambda: "44 photos found" in dialog.count_label.text(), timeout=5000)
    assert window.teach.start()
    arguments = window.teach.run.process.arguments()
    assert arguments[arguments.index("--base") + 1] == "old-prints"
    qtbot.waitUntil(lambda: window.teach.run is None, timeout=120_000)
    window.teach.close()
    for photo in (tmp_path / "unplugged").iterdir():
        photo.unlink()
    (tmp_path / "unplugged").rmdir()

    again = make_window(backend).teach.open_dialog()
    assert again.folders() == [tmp_path / "family"]  # a folder gone since is left out
    assert again.minutes() == 25 and again.name() == "" and again.base_combo.base() == "old-prints"
    qtbot.waitUntil(lambda: "22 photos found" in again.count_label.text(), timeout=5000)


def test_a_tune_that_fails_shows_its_error_and_leaves_nothing(qtbot, backend, make_window, models_dir, tmp_path):
    for i in range(22):  # files enough for the dialog's count, but grey: the tune itself refuses them
        write_grey(tmp_path / "grey" / f"g{i:02d}.png", 48, 64, seed=i)
    window, dialog = teach_window(make_window, backend, tmp_path / "grey", "Grey", (*TINY, "--minutes", "0.05"))
    qtbot.waitUntil(lambda: "22 photos found" in dialog.count_label.text(), timeout=5000)
    assert window.teach.start()
    qtbot.waitUntil(lambda: window.teach.run is None, timeout=120_000)
    assert dialog.phase == "setup"
    assert dialog.message().startswith("The training stopped:") and "at least 20" in dialog.message()
    assert not (models_dir / "Grey.pt").exists() and not (models_dir / "Grey.work").exists()


def test_fewer_than_twenty_photos_are_refused_before_anything_starts(qtbot, backend, make_window, models_dir,
                                                                      colour_folder):
    window, dialog = teach_window(make_window, backend, colour_folder(12), "Few")
    qtbot.waitUntil(lambda: "12 photos found" in dialog.count_label.text(), timeout=5000)
    assert not window.teach.start()
    assert window.teach.run is None and dialog.phase == "setup"
    assert dialog.message().startswith("Cannot start: 12 photos found") and "at least 20" in dialog.message()
    assert not models_dir.exists() or not any(models_dir.iterdir())


def test_a_taken_name_is_refused_unless_replacing_is_ticked(qtbot, backend, make_window, models_dir,
                                                            colour_folder):
    models_dir.mkdir(parents=True)
    (models_dir / "Taken.pt").write_bytes(b"x")
    window, dialog = teach_window(make_window, backend, colour_folder(30), "Taken")
    qtbot.waitUntil(lambda: "30 photos found" in dialog.count_label.text(), timeout=5000)
    text, kind, refused = window.teach.problem()
    assert refused and kind == "error" and "exists" in text and not dialog.replace_box.isHidden()
    dialog.replace_box.setChecked(True)
    text, kind, refused = window.teach.problem()
    assert not refused and kind == "warning" and "Only 30 photos" in text
    dialog.name_edit.setText("shipped")
    assert window.teach.problem()[2] and "comes with the app" in window.teach.problem()[0]
    assert "--replace" in tune_arguments([Path("p")], "Taken", 10, replace=True)
    assert "--replace" not in tune_arguments([Path("p")], "Taken", 10)
    assert "--base" not in tune_arguments([Path("p")], "Taken", 10)  # the shipped model: tune's own default


def test_the_dialog_counts_photos_by_extension_and_caps_a_huge_count(tmp_path, colour_folder):
    folder = colour_folder(7)
    assert teach.count_photos([folder]) == (7, False)
    assert teach.count_photos([folder, folder / "sub"]) == (7, False)  # each photo once
    assert teach.count_photos([folder], limit=5) == (5, True)
    assert teach.count_text(5, True).startswith("At least 5 photos")


def test_the_dialog_and_the_engine_agree_on_the_thresholds():
    from engine.training import tune

    assert (teach.MIN_PHOTOS, teach.FEW_PHOTOS, teach.HELD_OUT_SHARE, teach.MIN_HELD_OUT, teach.MAX_HELD_OUT) == (
        tune.MIN_PHOTOS, tune.FEW_PHOTOS, tune.HELD_OUT_SHARE, tune.MIN_HELD_OUT, tune.MAX_HELD_OUT)
    for n in (20, 60, 2000):
        assert teach.held_out_count(n) == len(tune.held_out([f"p{i}" for i in range(n)]))


def test_the_loss_plot_draws_each_steps_loss_faintly_and_a_smoothed_trend_over_it(qtbot):
    from gui.views.charts import LossPlot

    rng = np.random.default_rng(0)
    losses = [3.0 - 0.01 * i + rng.normal(0, 0.3) for i in range(200)]  # a falling loss under batch noise
    trend = teach.smoothed(losses)
    assert trend[0] == pytest.approx(losses[0])  # bias-corrected: the first point is the first loss, not a tenth of it
    assert np.std(np.diff(trend)) < 0.3 * np.std(np.diff(losses))  # the swing from batch to batch is damped...
    assert trend[-1] < trend[20] - 1.0  # ...and the fall is kept
    plot = LossPlot()
    qtbot.addWidget(plot)
    assert plot.waiting.isVisible()  # an empty plot says why it is empty
    for step, loss in enumerate(losses):
        plot.add(step, loss)
    assert list(plot.raw.getData()[1]) == pytest.approx(losses)
    assert list(plot.curve.getData()[1]) == pytest.approx(trend)
    assert not plot.waiting.isVisible()
    plot.clear()
    assert plot.raw.getData()[1] is None or len(plot.raw.getData()[1]) == 0


def test_the_loss_plots_axes_read_in_whole_steps_and_a_sensible_loss_span_from_the_first_step(qtbot):
    from gui.views.charts import MIN_LOSS_SPAN, MIN_STEPS, LossPlot

    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.add(1, 2.653876781463625)  # one point: pyqtgraph alone spanned 1e-14 of loss and 0.6..1.4 of a step
    (x0, x1), (y0, y1) = plot.plot.getViewBox().viewRange()
    assert x0 <= 0 and x1 >= MIN_STEPS
    assert y1 - y0 >= MIN_LOSS_SPAN and y0 < 2.6538 < y1
    for step, loss in enumerate([2.1, 3.9, 2.5, 3.0] * 10, start=2):  # a run past the least axes: all of it shown
        plot.add(step, loss)
    (x0, x1), (y0, y1) = plot.plot.getViewBox().viewRange()
    assert x1 >= 41 and y0 <= 2.1 and y1 >= 3.9
    plot.clear()  # a second run in the same dialog (after a cancel): the waiting text in sight again
    (x0, x1), (y0, y1) = plot.plot.getViewBox().viewRange()
    assert plot.waiting.isVisible() and x0 <= plot.waiting.pos().x() <= x1 and y0 <= plot.waiting.pos().y() <= y1


def test_the_verdict_says_better_worse_or_within_chance():
    better = {"photos": 22, "gain_db": 0.62, "interval": [0.31, 0.95], "verdict": "better"}
    assert teach.verdict_text(better) == ("Better: closer to the true colours than the shipped model on 22 photos "
                                          "held out (+0.62 dB, 90% interval +0.31 to +0.95).")  # words, then figures
    worse = teach.verdict_text({**better, "gain_db": -0.4, "interval": [-0.7, -0.1], "verdict": "worse"})
    assert worse.startswith("Worse:") and "keep the shipped model" in worse.lower()
    assert teach.verdict_text({**better, "interval": [-0.1, 0.9], "verdict": "within chance"}).startswith(
        "Within chance")


def test_the_verdict_names_the_model_the_tune_started_from():
    better = {"photos": 22, "gain_db": 0.62, "interval": [0.31, 0.95], "verdict": "better"}
    assert teach.verdict_text(better, "old-prints").startswith(
        "Better: closer to the true colours than the Old prints model on 22")
    worse = teach.verdict_text({**better, "gain_db": -0.4, "verdict": "worse"}, "Family 1950s")
    assert "than the model 'Family 1950s'" in worse and "Keep the model 'Family 1950s'" in worse
    assert "shipped" not in worse


def test_a_failing_process_reports_the_error_event_or_its_last_stderr_line(qtbot):
    script = "import sys; print('{\"event\": \"error\", \"message\": \"boom\"}', flush=True); sys.exit(2)"
    run = TuneProcess(["-c", script], sys.executable)
    events = []
    run.reported.connect(events.append)
    with qtbot.waitSignal(run.ended, timeout=20_000) as ended:
        run.start()
    assert ended.args == [2, "boom", False] and events == [{"event": "error", "message": "boom"}]
    run = TuneProcess(["-c", "import sys; sys.stderr.write('error: the disk is full\\nbye'); sys.exit(3)"],
                      sys.executable)
    with qtbot.waitSignal(run.ended, timeout=20_000) as ended:
        run.start()
    assert ended.args == [3, "error: the disk is full", False]


@pytest.fixture
def tuned_model(models_dir: Path) -> Path:
    path = models_dir / "Mine.pt"
    save_weights(random_model(), path, {"card": json.dumps({"tune": {"photos": 60, "heldout": {"photos": 9}}})})
    path.with_suffix(".md").write_text("# Mine\n\nTuned on sixty photos.\n")
    (models_dir / "Broken.pt").write_bytes(b"not a weights file")
    return path


def test_the_chosen_model_reaches_the_batch_and_survives_a_restart(qtbot, backend, tuned_model, write_photo,
                                                                   tmp_path):
    window = MainWindow(backend, QSettings())
    qtbot.addWidget(window)
    window.engine_panel.set_choice(ColorizeSettings(size=64, batch_size=2))
    window.prefs.set_output_dir(tmp_path / "out")
    window.show()
    panel = window.engine_panel
    assert [panel.model.itemData(i) for i in range(panel.model.count())] == ["auto", "shipped", "old-prints", "Broken",
                                                                            "Mine"]
    assert panel.model.itemText(2) == "Old prints (comes with the app)"
    assert panel.model.itemText(0) == "Auto: by the photos' look"
    assert panel.model_name() == "shipped" and panel.choice().weights is None
    broken = panel.model.model().item(panel.model.findData("Broken"))
    assert not broken.isEnabled() and broken.toolTip().startswith("Cannot be used")
    assert not panel.select_model("Broken") and panel.model_name() == "shipped"
    assert panel.select_model("Mine")
    window.queue_presenter.add_paths([write_photo(tmp_path / "in" / "a.png")])
    assert window.batch.start_batch()
    assert window.controller.request.model.weights == tuned_model  # the batch colorizes with the chosen model
    qtbot.waitUntil(lambda: not window.controller.running, timeout=60_000)
    assert window.queue.rows()[0].status == Status.DONE
    assert window.queue.rows()[0].run_key.model.weights == tuned_model
    panel.select_model("shipped")  # another model: the photo is out of date, Run Again is offered
    assert "Run Again" in window.status_label.text()
    panel.select_model("Mine")
    assert "Tuned on sixty photos" in window.models.card_text()
    panel.card_button.click()  # the card is one click away
    assert "Tuned on sixty photos" in window.models.card_dialog.findChild(QTextBrowser).toPlainText()
    window.models.card_dialog.close()
    window.close()

    again = MainWindow(backend, QSettings())
    qtbot.addWidget(again)
    assert again.engine_panel.model_name() == "Mine" and again.engine_panel.choice().weights == tuned_model
    again.close()

    tuned_model.unlink()
    third = MainWindow(backend, QSettings())
    qtbot.addWidget(third)
    assert third.engine_panel.model_name() == "shipped" and third.engine_panel.choice().weights is None
    assert "'Mine'" in third.status_label.text() and "shipped model" in third.status_label.text()


def test_delete_tuned_model_removes_it_and_goes_back_to_auto_the_default(qtbot, backend, make_window, tuned_model):
    window = make_window(backend)
    assert window.engine_panel.select_model("Mine")
    assert window.models.delete("Mine")
    assert not tuned_model.exists() and not tuned_model.with_suffix(".md").exists()
    assert window.engine_panel.model_name() == "auto"  # not the shipped model alone: old prints keep theirs
    assert window.engine_panel.model.findData("Mine") < 0
    assert "Model" in [m.title().replace("&", "") for m in window.menus.values()]


def test_the_old_prints_model_comes_with_the_app_reaches_the_batch_and_cannot_be_deleted(qtbot, backend, make_window,
                                                                                         models_dir, write_photo,
                                                                                         tmp_path):
    from engine.named_models import BUNDLED

    window = make_window(backend)
    panel = window.engine_panel
    assert panel.select_model("old-prints") and panel.choice().weights == BUNDLED["old-prints"]
    window.models.delete_chosen()
    assert "comes with the app" in window.status_label.text() and BUNDLED["old-prints"].is_file()
    assert "old prints" in window.models.card_text().lower()  # its own card, not the shipped model's
    window.engine_panel.set_choice(ColorizeSettings(size=64, batch_size=2, weights=BUNDLED["old-prints"]))
    assert panel.model_name() == "old-prints"  # a saved choice finds it again by its file
    window.prefs.set_output_dir(tmp_path / "out")
    window.queue_presenter.add_paths([write_photo(tmp_path / "in" / "a.png")])
    assert window.batch.start_batch()
    qtbot.waitUntil(lambda: not window.controller.running, timeout=60_000)
    assert window.queue.rows()[0].status == Status.DONE
    assert window.queue.rows()[0].run_key.model.weights == BUNDLED["old-prints"]


def test_a_model_taught_again_under_its_name_is_loaded_again_not_taken_from_the_cache(tmp_path):
    from gui.bridge.worker import CachedFactory

    made = []
    factory = CachedFactory(lambda s: made.append(s) or object())
    weights = tmp_path / "Mine.pt"
    weights.write_bytes(b"first")
    settings = ColorizeSettings(weights=weights)
    assert factory(settings) is factory(settings) and len(made) == 1
    weights.write_bytes(b"second, longer")  # replaced (Keep after teaching under the same name)
    factory(settings)
    assert len(made) == 2


def test_a_gain_that_rounds_to_nothing_reads_plus_zero():
    text = teach.verdict_text({"photos": 4, "gain_db": -0.001, "interval": None, "verdict": "within chance"})
    assert "+0.00 dB" in text and "-0.00" not in text


def test_discard_deletes_the_tuned_model_and_the_choice_stays(qtbot, backend, make_window, models_dir,
                                                              colour_folder):
    window, dialog = teach_window(make_window, backend, colour_folder(24), "Gone", (*TINY, "--minutes", "0.02"))
    qtbot.waitUntil(lambda: "24 photos found" in dialog.count_label.text(), timeout=5000)
    assert window.teach.start()
    qtbot.waitUntil(lambda: window.teach.run is None, timeout=180_000)
    assert dialog.phase == "result", dialog.message()
    assert (models_dir / "Gone.pt").is_file()
    dialog.discard_button.click()
    assert not (models_dir / "Gone.pt").exists() and not (models_dir / "Gone.work").exists()
    assert window.engine_panel.model_name() == "shipped" and window.engine_panel.model.findData("Gone") < 0
    assert "Discarded" in window.status_label.text()


def test_closing_the_dialog_or_the_window_while_training_stops_the_process(qtbot, backend, make_window, models_dir,
                                                                          colour_folder, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    answers = [QMessageBox.StandardButton.No, QMessageBox.StandardButton.Yes]
    asked: list[str] = []
    monkeypatch.setattr(QMessageBox, "question", lambda _parent, _title, text, *a: (asked.append(text),
                                                                                     answers.pop(0))[1])
    folder = colour_folder(24)
    window, dialog = teach_window(make_window, backend, folder, "Closed", (*TINY, "--minutes", "5"))
    qtbot.waitUntil(lambda: "24 photos found" in dialog.count_label.text(), timeout=5000)
    assert window.teach.start()
    assert dialog.progress_box.title() == "Teaching “Closed” for about 10 minutes"  # the dialog's (5: the test's)
    process = window.teach.run.process
    qtbot.waitUntil(lambda: process.processId() > 0, timeout=5000)
    dialog.reject()  # Esc, or the title bar's close button: asked first, and "No" goes on training
    assert asked == ["Stop teaching “Closed”? What it has learned so far is not kept."]
    assert window.teach.dialog is dialog and window.teach.run is not None
    dialog.reject()  # "Yes"
    assert window.teach.dialog is None
    qtbot.waitUntil(lambda: window.teach.run is None, timeout=5000)
    assert not (models_dir / "Closed.work").exists()

    dialog = window.teach.open_dialog()  # a fresh dialog; then the window closes mid-run
    window.teach.add_folders([folder])
    dialog.name_edit.setText("Closed")
    qtbot.waitUntil(lambda: "24 photos found" in dialog.count_label.text(), timeout=5000)
    assert window.teach.start()
    pid = window.teach.run.process.processId()
    qtbot.waitUntil(lambda: (models_dir / "Closed.work").is_dir(), timeout=60_000)
    window.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert window.teach.run is None and not (models_dir / "Closed.work").exists()


def test_the_name_and_time_fields_keep_their_place_as_the_setup_lines_come_and_go(qtbot, backend, make_window,
                                                                                  models_dir, colour_folder):
    """A click aimed at Name landed in Training time when a line above it appeared."""
    window = make_window(backend)
    dialog = window.teach.open_dialog()
    qtbot.waitExposed(dialog)

    def places():
        QApplication.processEvents()
        return [w.mapTo(dialog, w.rect().topLeft()).y() for w in (dialog.name_edit, dialog.minutes_spin)]

    empty = places()
    window.teach.add_folders([colour_folder(24)])
    qtbot.waitUntil(lambda: "24 photos found" in dialog.count_label.text(), timeout=5000)
    assert dialog.message() and places() == empty  # "Give the tuned model a name", the estimate: no move
    dialog.name_edit.setText("Family")
    assert places() == empty


def test_keeping_a_model_says_what_it_replaced():
    from gui.presenters.teach import kept_in_place_of

    assert "in place of Auto" in kept_in_place_of("auto", "Family")
    assert kept_in_place_of("old-prints", "Family") == ", in place of Old prints"
    assert kept_in_place_of("Family", "Family") == ""  # taught again under its own name: nothing replaced


def test_a_taught_model_to_start_from_is_passed_by_its_file_and_never_replaced_by_the_tune(
        qtbot, backend, make_window, tuned_model, colour_folder):
    window, dialog = teach_window(make_window, backend, colour_folder(30), "Mine")
    qtbot.waitUntil(lambda: "30 photos found" in dialog.count_label.text(), timeout=5000)
    bases = [dialog.base_combo.itemData(i) for i in range(dialog.base_combo.count())]
    assert "Mine" in bases and "Broken" not in bases  # a file that is no model is nothing to start from
    dialog.base_combo.setCurrentIndex(bases.index("Mine"))
    assert "taught before" in dialog.base_combo.toolTip()  # each choice says what it is for
    dialog.replace_box.setChecked(True)
    text, kind, refused = window.teach.problem()
    assert refused and kind == "error" and "the model to start from" in text  # Replace cannot write over its start
    assert dialog.replace_box.isHidden()  # and is not offered for it
    dialog.base_combo.setCurrentIndex(bases.index("old-prints"))
    assert "scans of old prints" in dialog.base_combo.toolTip() and not dialog.replace_box.isHidden()
    dialog.name_edit.setText("Mine again")
    assert not window.teach.problem()[2]
    models = backend.models()
    assert teach.base_argument(models, "Mine") == str(tuned_model)  # by its file: a name may also be a file's
    assert teach.base_argument(models, "old-prints") == "old-prints" and teach.base_argument(models, "shipped") is None


def test_a_tune_refuses_to_write_over_the_model_it_starts_from(models_dir, tuned_model, tmp_path):
    from engine.training.tune import TuneError, TuneSettings, run_tune

    with pytest.raises(TuneError, match="the one to start from"):
        run_tune(TuneSettings(photos=[tmp_path], name="Mine", base=tuned_model, replace=True))
    assert tuned_model.is_file()


def test_the_result_page_stays_on_the_screen_and_a_long_name_leaves_room_for_the_tuned_models_pictures(
        qtbot, tmp_path):
    from PySide6.QtCore import QPoint

    from gui.views.teach_dialog import CAPTION_WIDTH, TeachDialog

    picture = tmp_path / "p.png"
    cv2.imwrite(str(picture), colour_image(0, 200, 150))
    name = "opencv_scenetext-segmented-word04-and-some-more-words-of-a-long-file-name.jpg"
    examples = [{"name": name, "gain_db": 0.81, "original": picture, "start": picture, "tuned": picture}] * 3
    dialog = TeachDialog()
    qtbot.addWidget(dialog)
    room = dialog.screen().availableGeometry()
    dialog.resize(700, 300)
    dialog.move(QPoint(room.x() + room.width() - 500, room.y() + room.height() - 200))  # low and right, as left
    dialog.show()
    qtbot.waitExposed(dialog)
    dialog.set_phase("running")
    dialog.show_result("Better: closer to the true colours (+0.31 dB)", "better", examples)
    frame = dialog.frameGeometry()
    assert room.contains(frame.topLeft()) and frame.right() <= room.right() and frame.bottom() <= room.bottom()
    caption = dialog.examples.grid.itemAtPosition(1, 0).widget()
    assert caption.toolTip() == name and "…" in caption.text() and caption.text().endswith("+0.81 dB")
    assert caption.fontMetrics().horizontalAdvance(caption.text().split("  ·  ")[0]) <= CAPTION_WIDTH
    pictures = [dialog.examples.grid.itemAtPosition(2, col).widget() for col in range(3)]
    scroll = dialog.examples.parentWidget()  # the scroll area's viewport: the tuned model's picture in sight
    assert all(p.pixmap().width() > 0 for p in pictures)
    assert pictures[2].mapTo(dialog.examples, pictures[2].rect().topRight()).x() <= scroll.width()


def test_a_window_too_low_or_too_wide_for_the_screen_is_moved_onto_it():
    from PySide6.QtCore import QPoint, QRect, QSize

    from gui.views.placement import on_screen

    room = QRect(0, 30, 1366, 738)
    assert on_screen(QPoint(700, 500), QSize(900, 700), room) == QPoint(466, 68)  # up and left, just enough
    assert on_screen(QPoint(100, 100), QSize(300, 200), room) == QPoint(100, 100)  # already on it: where it was
    assert on_screen(QPoint(-50, 900), QSize(2000, 900), room) == QPoint(0, 30)  # larger than the room: its corner


def test_a_model_kept_while_a_batch_runs_says_the_batch_goes_on_as_it_began_and_run_again_after_it(
        qtbot, make_window, slow_backend, grey_photos):
    window = make_window(slow_backend)
    window.queue_presenter.add_paths(grey_photos(4))
    with qtbot.waitSignal(window.controller.finished, timeout=60_000):
        assert window.batch.start_batch()
        window.teach.say_kept("Kept 'Family': it colorizes from now on.")
        line = window.status_label.text()
        assert line.startswith("Kept 'Family'") and "The batch running goes on as it began" in line
        assert "Run Again" in line  # not "it colorizes every photo now" alone, while four are made the old way
