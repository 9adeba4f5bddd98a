"""The queue: its table model, drag and drop of files and folders, removing, clearing, samples."""

from __future__ import annotations

import os
from pathlib import Path

from helpers import drag_event
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication

from engine.options import PhotoResult, Status
from gui.model.queue_model import COL_DIFF, COL_MESSAGE, COL_STATUS, COL_TIME, QueueModel


def _result(index: int, status: str = "done", **kw: object) -> PhotoResult:
    base = dict(index=index, source=Path("x"), status=status, message="", output=None, width=60, height=40,
                decode_ms=2.0, infer_ms=10.0, encode_ms=3.0, compare_infer_ms=None, max_abs_diff=None,
                p999_abs_diff=None, preview=None)
    base.update(kw)
    return PhotoResult(**{**base, "status": Status(base["status"])})  # type: ignore[arg-type]


def _drop(window, paths: list[Path]) -> tuple[bool, int]:
    """Send a real drag-enter and drop carrying file URLs, as a file manager does."""
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    centre = window.rect().center()
    enter = drag_event(QDragEnterEvent, centre, Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(window, enter)
    drop = drag_event(QDropEvent, centre, Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                      Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(window, drop)
    return enter.isAccepted(), window.queue.rowCount()


def test_queue_model_passes_qtmodeltester_through_adds_results_and_removals(qtmodeltester, tmp_path, write_photo):
    model = QueueModel()
    photos = [write_photo(tmp_path / f"p{i}.png", seed=i) for i in range(6)]
    model.add((p, tmp_path) for p in photos)
    model.apply_result(model.row(0).key, _result(0))
    model.apply_result(model.row(1).key, _result(1, "failed", message="cannot decode"))
    model.apply_result(model.row(2).key, _result(2, compare_infer_ms=25.0, max_abs_diff=0.5))
    model.remove_rows([3, 4])
    qtmodeltester.check(model)
    assert model.rowCount() == 4
    assert model.data(model.index(1, COL_STATUS)) == "failed"
    assert model.data(model.index(1, COL_MESSAGE)) == "cannot decode"
    assert model.data(model.index(0, COL_TIME)) == "15 ms"
    assert model.data(model.index(2, COL_DIFF)) == "0.5"  # per photo; the speed-up is the batch's


def test_results_find_their_row_after_earlier_rows_were_removed(tmp_path, write_photo):
    model = QueueModel()
    photos = [write_photo(tmp_path / f"p{i}.png", seed=i) for i in range(4)]
    model.add((p, tmp_path) for p in photos)
    last_key = model.row(3).key
    model.remove_rows([0, 1])
    assert model.apply_result(last_key, _result(0)) == 1
    assert model.row(1).status == "done" and model.row(1).path == photos[3]


def test_same_photo_is_never_queued_twice_even_through_a_symlink(tmp_path, write_photo):
    model = QueueModel()
    photo = write_photo(tmp_path / "a.png")
    link = tmp_path / "link.png"
    os.symlink(photo, link)
    assert model.add([(photo, tmp_path)]) == (1, 0)
    assert model.add([(photo, tmp_path), (link, tmp_path)]) == (0, 2)
    assert model.rowCount() == 1


def test_dropping_files_and_folders_queues_photos_recursively_and_ignores_other_files(make_window, backend,
                                                                                     tmp_path, write_photo):
    window = make_window(backend)
    album = tmp_path / "album"
    nested = [write_photo(album / "a.png"), write_photo(album / "sub" / "b.jpg"),
              write_photo(album / "sub" / "deeper" / "c.png")]
    (album / "notes.txt").write_text("not a photo")
    (album / "sub" / "data.csv").write_text("1,2")
    loose = write_photo(tmp_path / "loose.png")

    accepted, rows = _drop(window, [album, loose])
    assert accepted
    assert rows == 4
    queued = {window.queue.row(i).path for i in range(rows)}
    assert queued == {*nested, loose}
    # A dropped folder's photos keep its own name: their outputs go to out/album/..., not into out/ itself.
    assert all(window.queue.row(i).root == tmp_path for i in range(rows) if window.queue.row(i).path in nested)

    # Dropping the same things again (and one photo from inside the folder) queues nothing new.
    _, rows_again = _drop(window, [album, nested[1], loose])
    assert rows_again == 4
    assert "already in the queue" in window.status_label.text()


def test_folders_added_one_at_a_time_write_into_folders_of_their_own_names(qtbot, make_window, backend, tmp_path,
                                                                          write_photo):
    window = make_window(backend)
    archive = tmp_path / "archive"
    for year in ("1952_holidays", "1953_wedding"):
        write_photo(archive / year / "beach" / "IMG_0001.png")
        window.queue_presenter.add_paths([archive / year])  # one at a time, as from the Add Folder dialog
    with qtbot.waitSignal(window.controller.finished, timeout=60_000):
        assert window.batch.start_batch()
    out = tmp_path / "out"
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.png"))
    assert written == ["1952_holidays/beach/IMG_0001.png", "1953_wedding/beach/IMG_0001.png"]  # no "(1)" names


def test_drag_without_local_files_is_refused(make_window, backend):
    window = make_window(backend)
    mime = QMimeData()
    mime.setText("just some text")
    enter = drag_event(QDragEnterEvent, QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(window, enter)
    assert not enter.isAccepted()
    assert window.queue.rowCount() == 0


def test_remove_selected_and_clear_empty_the_queue(qtbot, make_window, backend, grey_photos):
    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(4))
    window.table.selectRow(1)
    window.actions_by_name["remove"].trigger()
    assert window.queue.rowCount() == 3
    assert [r.path.name for r in window.queue.rows()] == ["photo00.png", "photo02.png", "photo03.png"]
    assert window.table.selected_rows() == [1]  # the next photo takes the removed one's place, on screen too
    qtbot.waitUntil(lambda: window.viewer.shown_key == window.queue.row(1).key, timeout=5000)
    window.table.selectRow(2)
    window.actions_by_name["remove"].trigger()
    assert window.table.selected_rows() == [1]  # the last row removed: the one before it
    window.actions_by_name["clear"].trigger()
    assert window.queue.rowCount() == 0
    assert not window.actions_by_name["start"].isEnabled()
    # A removed photo may be queued again.
    assert window.queue_presenter.add_paths(grey_photos(1)) == 1


def test_try_the_sample_photos_queues_the_shipped_grey_samples(make_window, backend, tmp_path, write_photo):
    samples = tmp_path / "samples"
    write_photo(samples / "street.jpg")
    write_photo(samples / "harbour.png")
    (samples / "README.txt").parent.mkdir(exist_ok=True)
    (samples / "README.txt").write_text("credits")
    window = make_window(backend, samples_dir=samples)
    assert window.preview.placeholder.button.isVisible()
    window.actions_by_name["samples"].trigger()
    assert sorted(r.path.name for r in window.queue.rows()) == ["harbour.png", "street.jpg"]
    # queued as the folder they are: their outputs go under "samples/" in the output folder, apart from one's own
    assert all(r.path.relative_to(r.root).parts[0] == "samples" for r in window.queue.rows())


def test_sample_action_without_samples_says_so(make_window, backend, tmp_path):
    window = make_window(backend, samples_dir=tmp_path / "nothing-here")
    assert window.queue_presenter.queue_samples() == 0
    assert "No sample photos" in window.status_label.text()


def test_two_folders_of_one_name_queued_one_after_the_other_write_apart(qtbot, make_window, backend, tmp_path):
    from helpers import write_grey

    for box in ("box1", "box2"):
        write_grey(tmp_path / box / "scans" / "p.png", 40, 60, 0)
    window = make_window(backend)
    window.queue_presenter.add_paths([tmp_path / "box1" / "scans"])
    window.queue_presenter.add_paths([tmp_path / "box2" / "scans"])
    with qtbot.waitSignal(window.controller.finished, timeout=60_000):
        assert window.batch.start_batch()
    written = sorted(str(p.relative_to(tmp_path / "out")) for p in (tmp_path / "out").rglob("*.png"))
    assert written == ["box2/scans/p.png", "scans/p.png"]  # no "scans/p (1).png" beside the first box's


def test_a_folder_holding_the_output_folder_queues_its_photos_not_the_outputs_of_an_earlier_run(
        qtbot, make_window, backend, tmp_path, write_photo):
    window = make_window(backend)
    scans = tmp_path / "scans"
    for i in range(3):
        write_photo(scans / f"p{i}.png")
    window.prefs.set_output_dir(scans / "colour")
    window.queue_presenter.add_paths([scans])
    with qtbot.waitSignal(window.controller.finished, timeout=60_000):
        assert window.batch.start_batch()
    assert len(list((scans / "colour").rglob("*.png"))) == 3
    window.queue_presenter.clear_queue()
    window.queue_presenter.add_paths([scans])  # again, as after new scans came: the outputs are not photos
    assert sorted(r.path.name for r in window.queue.rows()) == ["p0.png", "p1.png", "p2.png"]
    assert "the outputs inside 'scans' were left out" in window.status_label.text()


def test_after_clear_queue_and_undo_the_status_bar_shows_no_stale_count_or_step(qtbot, make_window, backend,
                                                                                grey_photos):
    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(3))
    assert window.progress.format() == "3 photos to run"
    assert not window.preview.placeholder.button.isVisible()  # no "Try the Sample Photos" beside one's own photos
    window.summary.fields["photos"].setText("3 done of 3")  # as a run leaves it
    window.actions_by_name["clear"].trigger()
    assert window.progress.format() == "idle" and window.summary.fields["photos"].text() == "–"
    window.history.undo()
    assert window.status_label.text() == "Undone: Clear Queue (3 photos)"
    assert window.progress.format() == "3 photos to run"
    assert window.preview.placeholder.label.text() == "3 photos in the queue: select one to see it."
    window.history.redo()
    assert window.status_label.text() == "Redone: Clear Queue (3 photos)" and window.progress.format() == "idle"


def test_a_folder_colorized_into_itself_and_queued_again_queues_only_its_photos(qtbot, make_window, backend, tmp_path,
                                                                                write_photo):
    """The window keeps a folder's name: Export set to the folder writes into scans/scans, which a second Add
    Folder must not take for photos (a new-user trial saw it queued, and a level more each session).
    """
    window = make_window(backend)
    scans = tmp_path / "scans"
    for i in range(3):
        write_photo(scans / f"p{i}.png")
    window.prefs.set_output_dir(scans)
    window.queue_presenter.add_paths([scans])
    with qtbot.waitSignal(window.controller.finished, timeout=60_000):
        assert window.batch.start_batch()
    assert sorted(p.name for p in (scans / "scans").iterdir()) == ["p0.png", "p1.png", "p2.png"]
    window.queue_presenter.clear_queue()
    window.queue_presenter.add_paths([scans])
    assert sorted(r.path.relative_to(scans).as_posix() for r in window.queue.rows()) == ["p0.png", "p1.png", "p2.png"]
    assert "the outputs inside 'scans' were left out" in window.status_label.text()


def test_add_photos_and_add_folder_open_beside_the_last_queued_photo_however_it_came(make_window, backend, tmp_path,
                                                                                      write_photo, monkeypatch):
    window = make_window(backend)
    opened_in = []
    monkeypatch.setattr("gui.presenters.queue.QFileDialog.getExistingDirectory",
                        lambda parent, title, folder: opened_in.append(folder) or "")
    monkeypatch.setattr("gui.presenters.queue.QFileDialog.getOpenFileNames",
                        lambda parent, title, folder, patterns: opened_in.append(folder) or ([], ""))
    window.queue_presenter.choose_folder()
    assert opened_in == [str(Path.home())]  # nothing queued, nothing chosen before: home
    window.queue_presenter.add_paths([write_photo(tmp_path / "scans" / "box1" / "a.png")])  # as a drop would
    window.queue_presenter.choose_folder()
    window.queue_presenter.choose_files()
    assert opened_in[1:] == [str(tmp_path / "scans"), str(tmp_path / "scans" / "box1")]  # box1's neighbours; its photos
