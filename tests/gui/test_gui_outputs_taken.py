"""A run whose photos mostly have outputs already asks first: copies of every photo are not written unasked."""

from __future__ import annotations

import threading

from PySide6.QtWidgets import QMessageBox

from gui.model import outputs_check

TIMEOUT_MS = 60_000


def _run(qtbot, window) -> None:
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS):
        assert window.batch.start_batch()


def _second_window(qtbot, make_window, backend, photos):
    """A later session of the app: the same photos queued again, exporting to the same folder."""
    window = make_window(backend)
    window.queue_presenter.add_paths(photos)
    return window


def _skipped_in_a_later_session(qtbot, make_window, backend, photos):
    """The photos run once, then queued again in a new window, whose question was answered Skip Them."""
    _run(qtbot, (first := _second_window(qtbot, make_window, backend, photos)))
    first.close()
    window = _second_window(qtbot, make_window, backend, photos)
    assert not window.batch.start_batch()
    _answer(qtbot, window, "Skip Them")
    return window


def _answer(qtbot, window, label: str | None) -> None:
    box = window.batch.taken_box
    assert box is not None and box.isVisible()
    button = next(b for b in box.buttons() if b.text() == label) if label else box.button(
        QMessageBox.StandardButton.Cancel)
    if label is None:
        button.click()
        return
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS):
        button.click()


def test_photos_whose_outputs_exist_ask_first_and_skip_them_on_request(qtbot, make_window, backend, grey_photos,
                                                                        tmp_path):
    photos = grey_photos(3)
    _run(qtbot, (first := _second_window(qtbot, make_window, backend, photos)))
    first.close()
    window = _second_window(qtbot, make_window, backend, photos)
    assert not window.batch.start_batch()  # asked, not started
    box = window.batch.taken_box
    assert f"All 3 photos to colorize have an output in {tmp_path / 'out'} already" in box.text()
    assert box.defaultButton().text() == "Skip Them"
    _answer(qtbot, window, "Skip Them")
    assert window.export_panel.choice().if_exists == "new_name"  # for this run only: the next one asks again
    assert [r.status for r in window.queue.rows()] == ["skipped"] * 3
    assert window.status_label.text().startswith("No photo colorized, 3 skipped")  # no "0.00 photos/s"
    assert "No photo was colorized" in window.preview.placeholder.label.text()  # not "Press Start"
    assert sorted(p.name for p in (tmp_path / "out").rglob("*.png")) == [f"photo{i:02d}.png" for i in range(3)]
    window.table.selectRow(1)  # a skipped photo shows the colour version it has on disk, not "not colorized yet"
    qtbot.waitUntil(lambda: not window.preview.after_image().isNull())
    assert window.queue.rows()[1].existing == tmp_path / "out" / "photo01.png"


def test_write_copies_writes_them_under_new_names_and_cancel_starts_nothing(qtbot, make_window, backend,
                                                                             grey_photos, tmp_path):
    photos = grey_photos(2)
    _run(qtbot, (first := _second_window(qtbot, make_window, backend, photos)))
    first.close()
    window = _second_window(qtbot, make_window, backend, photos)
    assert not window.batch.start_batch()
    _answer(qtbot, window, None)  # Cancel
    assert not window.controller.running and "Not started" in window.status_label.text()
    assert not window.batch.start_batch()  # asked again
    _answer(qtbot, window, "Write Copies")
    assert window.export_panel.choice().if_exists == "new_name"
    names = sorted(p.name for p in (tmp_path / "out").rglob("*.png"))
    assert names == ["photo00 (1).png", "photo00.png", "photo01 (1).png", "photo01.png"]


def test_replace_them_replaces_the_old_outputs_in_place(qtbot, make_window, backend, grey_photos, tmp_path):
    photos = grey_photos(2)
    _run(qtbot, (first := _second_window(qtbot, make_window, backend, photos)))
    first.close()
    before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "out").rglob("*.png")}
    window = _second_window(qtbot, make_window, backend, photos)
    assert not window.batch.start_batch()
    _answer(qtbot, window, "Replace Them")
    after = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "out").rglob("*.png")}
    assert after.keys() == before.keys() and all(after[n] != before[n] for n in after)  # no copies: written anew
    assert window.export_panel.choice().if_exists == "new_name"  # for this run only


def test_running_again_its_own_outputs_or_a_few_taken_asks_nothing(qtbot, make_window, backend, grey_photos):
    photos = grey_photos(3)
    window = _second_window(qtbot, make_window, backend, photos[:1])
    _run(qtbot, window)
    window.batch.run_again()  # its own output: replaced, as Run Again does, no question
    assert window.batch.taken_box is None
    qtbot.waitUntil(lambda: not window.controller.running, timeout=TIMEOUT_MS)
    window.close()
    window = _second_window(qtbot, make_window, backend, photos)  # one of three taken: under half
    _run(qtbot, window)
    assert window.batch.taken_box is None


def test_the_question_about_one_photo_reads_as_one_and_cancel_answers_nothing(qtbot, tmp_path):
    from gui.views.taken_dialog import ask_about_taken

    answers: list[str] = []
    box = ask_about_taken(None, 1, 1, tmp_path, answers.append)
    qtbot.addWidget(box)
    assert box.text() == f"The photo to colorize has an output in {tmp_path} already."
    box.button(QMessageBox.StandardButton.Cancel).click()
    assert answers == [""]


def test_run_again_cancelled_at_the_question_leaves_its_photos_as_they_were(qtbot, make_window, backend, grey_photos):
    window = _skipped_in_a_later_session(qtbot, make_window, backend, grey_photos(2))  # their outputs exist
    assert not window.batch.run_again()  # Run Again on them: the question again
    _answer(qtbot, window, None)  # Cancel
    assert [(r.status, r.message) for r in window.queue.rows()] == [("skipped", "output exists")] * 2


def _count_held(window):
    """The window's count of existing outputs, made to wait for ``release`` (a slow network share)."""
    release, count = threading.Event(), window.batch.outputs._count
    window.batch.outputs._count = lambda *args, **kw: (release.wait(30), count(*args, **kw))[1]
    return release


def test_a_large_queue_is_counted_off_the_window_thread_then_asked(qtbot, make_window, backend, grey_photos,
                                                                  tmp_path, monkeypatch):
    photos = grey_photos(3)
    _run(qtbot, (first := _second_window(qtbot, make_window, backend, photos)))
    first.close()
    monkeypatch.setattr(outputs_check, "COUNT_HERE", 2)  # 3 photos count as a large queue
    window = _second_window(qtbot, make_window, backend, photos)
    release = _count_held(window)
    assert not window.batch.start_batch()  # returns while the disk is read: the window is not frozen
    assert window.status_label.text() == f"Looking for outputs already in {tmp_path / 'out'}…"
    assert window.batch.outputs.busy and window.batch.taken_box is None
    assert not window.batch.start_batch() and not window.controller.running  # Start again while counting: nothing
    release.set()
    qtbot.waitUntil(lambda: window.batch.taken_box is not None)
    assert "All 3 photos to colorize have an output" in window.batch.taken_box.text()
    _answer(qtbot, window, "Skip Them")
    assert [r.status for r in window.queue.rows()] == ["skipped"] * 3


def test_a_large_queue_with_no_outputs_starts_once_counted_for_the_folder_chosen_meanwhile(
        qtbot, make_window, backend, grey_photos, tmp_path, monkeypatch):
    photos = grey_photos(3)
    _run(qtbot, (first := _second_window(qtbot, make_window, backend, photos)))
    first.close()
    monkeypatch.setattr(outputs_check, "COUNT_HERE", 2)
    window = _second_window(qtbot, make_window, backend, photos)
    release = _count_held(window)
    assert not window.batch.start_batch()
    window.prefs.set_output_dir(tmp_path / "elsewhere")  # while the first folder is counted
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS):
        release.set()
    assert window.batch.taken_box is None  # nothing in the new folder: no question
    assert sorted(p.name for p in (tmp_path / "elsewhere").rglob("*.png")) == [f"photo{i:02d}.png" for i in range(3)]
    assert not list((tmp_path / "out").rglob("* (1).png"))


def test_hints_given_to_a_photo_skipped_for_its_output_offer_run_again(qtbot, make_window, backend, grey_photos):
    from engine.hints import Hint

    photos = grey_photos(2)
    window = _skipped_in_a_later_session(qtbot, make_window, backend, photos)
    window.hint_store.set(photos[0], [Hint(0.5, 0.5, (200, 30, 30))])
    assert "1 of the 2 photos was colorized with other settings or hints" in window.status_label.text()
    assert "Run Again" in window.status_label.text()


def test_cancel_while_a_large_queue_is_counted_starts_nothing_and_restores_run_again_rows(
        qtbot, make_window, backend, grey_photos, monkeypatch):
    photos = grey_photos(3)
    _run(qtbot, (first := _second_window(qtbot, make_window, backend, photos)))
    first.close()
    monkeypatch.setattr(outputs_check, "COUNT_HERE", 2)
    window = _second_window(qtbot, make_window, backend, photos)
    assert not window.batch.start_batch()
    qtbot.waitUntil(lambda: window.batch.taken_box is not None)
    _answer(qtbot, window, "Skip Them")  # counted, asked, skipped: three skipped rows
    release = _count_held(window)
    assert not window.batch.run_again()  # counting now, Run Again's rows queued meanwhile
    actions = window.actions_by_name
    assert actions["cancel"].isEnabled() and not actions["start"].isEnabled()
    assert not window.batch.run_again()  # a second Run Again while counting: nothing
    actions["cancel"].trigger()
    release.set()
    qtbot.wait(300)  # the count's answer, had it been kept, would start or ask now
    assert not window.controller.running and window.batch.taken_box is None
    assert [(r.status, r.message) for r in window.queue.rows()] == [("skipped", "output exists")] * 3
    assert window.status_label.text() == "Not started: cancelled while looking for outputs that exist already"
    assert not actions["cancel"].isEnabled()


def test_photos_queued_while_counting_are_counted_before_the_question(qtbot, make_window, backend, grey_photos,
                                                                        monkeypatch):
    photos = grey_photos(4)
    _run(qtbot, (first := _second_window(qtbot, make_window, backend, photos)))
    first.close()
    monkeypatch.setattr(outputs_check, "COUNT_HERE", 2)
    window = _second_window(qtbot, make_window, backend, photos[:3])
    release = _count_held(window)
    assert not window.batch.start_batch()
    window.queue_presenter.add_paths(photos[3:])  # a fourth photo while the three are counted
    release.set()
    qtbot.waitUntil(lambda: window.batch.taken_box is not None)
    assert "All 4 photos to colorize have an output" in window.batch.taken_box.text()
    _answer(qtbot, window, "Skip Them")


def test_a_large_queue_exporting_with_replace_starts_at_once_without_looking(qtbot, make_window, backend,
                                                                             grey_photos, monkeypatch):
    """Replace or Skip asks nothing, so nothing is read first: no "Looking for outputs…" round trip."""
    photos = grey_photos(3)
    _run(qtbot, (first := _second_window(qtbot, make_window, backend, photos)))
    first.close()
    monkeypatch.setattr(outputs_check, "COUNT_HERE", 2)
    window = _second_window(qtbot, make_window, backend, photos)
    combo = window.export_panel.if_exists
    combo.setCurrentIndex(combo.findData("overwrite"))
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS):
        assert window.batch.start_batch()  # started now, not after a count on a thread
    assert not window.batch.outputs.busy and window.batch.taken_box is None
