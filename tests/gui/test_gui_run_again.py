"""Run Again: finished photos can be colorized again (selected or all), replacing their own outputs, and it
is offered when settings that change the output changed since their run (not compare mode or batch size).
"""

from __future__ import annotations

from PySide6.QtCore import QItemSelectionModel

from gui.model.queue_model import COL_BASELINE

TIMEOUT_MS = 60_000


def _run(qtbot, window, action: str = "start"):
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS) as blocker:
        window.actions_by_name[action].trigger()
    return blocker.args[0]


def test_ticking_compare_offers_nothing_and_run_again_compares_every_photo_in_place(qtbot, make_window, backend,
                                                                                     grey_photos, tmp_path):
    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(3))
    _run(qtbot, window)
    outputs = [r.output for r in window.queue.rows()]
    window.set_status("")
    window.engine_panel.compare.setChecked(True)  # the photos would come out the same: nothing to offer
    window.engine_panel.batch_size.setValue(window.engine_panel.batch_size.value() + 1)
    assert "colorized with other settings or hints" not in window.status_label.text()
    assert not window.actions_by_name["start"].isEnabled()  # every photo is done: Start has nothing to run
    assert not window.batch.start_batch()
    assert "Run Again" in window.status_label.text()  # ...and says what does the rest, not a dead end
    assert window.actions_by_name["run_again"].isEnabled()

    summary = _run(qtbot, window, "run_again")  # asked for all the same: each photo compared
    assert summary.total == 3 and summary.done == 3 and summary.compare_speedup is not None
    assert [r.status for r in window.queue.rows()] == ["done"] * 3
    assert all(window.queue.data(window.queue.index(i, COL_BASELINE)) for i in range(3))
    assert [r.output for r in window.queue.rows()] == outputs  # replaced in place: no "(1)" copies beside them
    assert sorted(p.name for p in (tmp_path / "out").rglob("*.png")) == sorted(p.name for p in outputs)


def test_run_again_with_a_selection_colorizes_only_the_selected_photos(qtbot, make_window, backend, grey_photos,
                                                                       tmp_path):
    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(3))
    _run(qtbot, window)
    first_outputs = [r.output for r in window.queue.rows()]
    window.table.selectionModel().select(window.queue.index(1, 0), QItemSelectionModel.SelectionFlag.ClearAndSelect
                                         | QItemSelectionModel.SelectionFlag.Rows)
    said: list[str] = []
    say = window.batch.say
    window.batch.say = lambda text: said.append(text) or say(text)
    summary = _run(qtbot, window, "run_again")
    assert "the 1 selected photo of 3" in said[0] and "none selected" in said[0]  # what it runs, not all of it
    assert any(t.startswith("Colorizing the 1 selected photo of 3") for t in said)  # ...once the model is loaded
    assert summary.total == 1 and summary.done == 1
    rows = window.queue.rows()
    assert [r.status for r in rows] == ["done"] * 3
    assert rows[0].output == first_outputs[0] and rows[2].output == first_outputs[2]
    assert rows[1].output == first_outputs[1] and rows[1].output.is_file()  # its own output replaced, no copy
    assert len(list((tmp_path / "out").rglob("*.png"))) == 3


def test_run_again_with_a_selection_leaves_a_failed_photo_outside_it_alone(qtbot, make_window, backend,
                                                                          grey_photos, tmp_path):
    window = make_window(backend)
    bad = tmp_path / "bad.jpg"
    bad.write_bytes(b"not a photo at all")
    window.queue_presenter.add_paths([*grey_photos(2), bad])
    _run(qtbot, window)
    assert [r.status for r in window.queue.rows()] == ["done", "done", "failed"]
    window.table.selectionModel().select(window.queue.index(0, 0), QItemSelectionModel.SelectionFlag.ClearAndSelect
                                         | QItemSelectionModel.SelectionFlag.Rows)
    summary = _run(qtbot, window, "run_again")
    assert summary.total == 1 and summary.done == 1 and summary.failed == 0
    assert [r.status for r in window.queue.rows()] == ["done", "done", "failed"]
    summary = _run(qtbot, window)  # Start still retries it
    assert summary.total == 1 and summary.failed == 1


def test_no_offer_while_the_settings_are_those_of_the_last_run(qtbot, make_window, backend, grey_photos):
    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(2))
    _run(qtbot, window)
    size = window.engine_panel.work_size.value()
    window.engine_panel.work_size.setValue(size + 64)
    assert "colorized with other settings or hints" in window.status_label.text()
    window.engine_panel.work_size.setValue(size)  # back to the settings the photos were made with
    assert "colorized with other settings or hints" not in window.status_label.text()
    assert "up to date" in window.status_label.text()  # the offer is taken back, not left standing


def test_unticking_compare_after_a_compared_batch_offers_nothing(qtbot, make_window, backend, grey_photos):
    """The photos would come out the same and were measured: nothing to run again for."""
    window = make_window(backend)
    window.engine_panel.compare.setChecked(True)
    window.queue_presenter.add_paths(grey_photos(2))
    _run(qtbot, window)
    window.set_status("")
    window.engine_panel.compare.setChecked(False)
    assert "colorized with other settings or hints" not in window.status_label.text()
    window.engine_panel.work_size.setValue(window.engine_panel.work_size.value() + 64)
    assert "All 2 photos were colorized with other settings or hints" in window.status_label.text()


def test_moving_the_strength_slider_after_a_batch_offers_run_again(qtbot, make_window, backend, grey_photos):
    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(2))
    _run(qtbot, window)
    window.preview.bar.strength.setValue(140)
    assert "All 2 photos were colorized with other settings or hints" in window.status_label.text()
    assert window.status_label.text().endswith("Run Again (Ctrl+R) redoes them.")  # none selected: every photo
    window.table.selectionModel().select(window.queue.index(1, 0), QItemSelectionModel.SelectionFlag.ClearAndSelect
                                         | QItemSelectionModel.SelectionFlag.Rows)
    window.preview.bar.strength.setValue(120)
    assert "redoes the selected photo; with none selected, all 2." in window.status_label.text()  # ...a selection
    _run(qtbot, window, "run_again")  # the selected photo made at 120; the other still at 100
    window.preview.bar.strength.setValue(130)
    window.preview.bar.strength.setValue(120)
    text = window.status_label.text()
    assert text == ("1 of the 2 photos was colorized with other settings or hints; the selected photo was not. To "
                    "redo it, select it, then Run Again (Ctrl+R).")
    window.table.clearSelection()  # none selected: Run Again takes both, not the one changed, and says so
    assert window.status_label.text().endswith("Run Again (Ctrl+R) redoes all 2; select it first to redo only it.")


def test_clearing_the_selection_keeps_the_photo_on_show(qtbot, make_window, backend, grey_photos):
    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(3))
    _run(qtbot, window)
    first = window.queue.row(0).key
    window.table.selectionModel().select(window.queue.index(0, 0), QItemSelectionModel.SelectionFlag.ClearAndSelect
                                         | QItemSelectionModel.SelectionFlag.Rows)
    qtbot.waitUntil(lambda: window.viewer.shown_key == first, timeout=TIMEOUT_MS)
    window.table.clearSelection()
    assert window.viewer.shown_key == first  # not the last photo finished, as a trial saw


def test_a_run_again_cancelled_then_started_still_replaces_the_photos_own_outputs(qtbot, make_window, slow_backend,
                                                                                  grey_photos, tmp_path):
    window = make_window(slow_backend, batch_size=1)
    window.queue_presenter.add_paths(grey_photos(8))
    _run(qtbot, window)
    outputs = sorted(p.name for p in (tmp_path / "out").rglob("*.png"))
    def cancel(_result):
        window.batch.cancel_batch()  # after the first photo

    window.controller.image_done.connect(cancel)
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS):
        assert window.batch.run_again()
    window.controller.image_done.disconnect(cancel)
    assert [r.status for r in window.queue.rows()].count("queued") >= 1
    _run(qtbot, window)  # Start takes the cancelled ones
    assert [r.status for r in window.queue.rows()] == ["done"] * 8
    assert sorted(p.name for p in (tmp_path / "out").rglob("*.png")) == outputs  # no "(1)" copies


def test_the_offer_with_only_unchanged_photos_selected_does_not_call_them_up_to_date():
    """A failed photo selected is not "up to date": the offer says only that it is not among those changed."""
    from gui.model.run_keys import changed_text

    text = changed_text(3, "Ctrl+R", selected=1, selected_stale=0)
    assert text == ("All 3 photos were colorized with other settings or hints; the selected photo was not. To redo "
                    "them, select them, then Run Again (Ctrl+R).")
    assert changed_text(1, "Ctrl+R", selected=2, selected_stale=0, total=3).startswith(
        "1 of the 3 photos was colorized with other settings or hints; the selected photos were not.")
    assert changed_text(2, "Ctrl+R", selected=2, selected_stale=1, total=5).endswith(
        "Run Again (Ctrl+R) redoes the 2 selected photos; with none selected, all 5.")
    assert "up to date" not in changed_text(3, "Ctrl+R", selected=2, selected_stale=0)
