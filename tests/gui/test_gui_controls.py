"""What the toolbar and menus offer, and when: only what can be done now, in plain words."""

from __future__ import annotations

TIMEOUT_MS = 60_000


def _run(qtbot, window):
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS) as blocker:
        assert window.batch.start_batch()
    return blocker.args[0]


def test_start_and_run_again_are_offered_only_when_they_have_something_to_do(qtbot, make_window, backend,
                                                                             grey_photos):
    window = make_window(backend)
    a = window.actions_by_name
    assert a["samples"].isVisible() and not a["start"].isEnabled() and not a["run_again"].isEnabled()
    window.queue_presenter.add_paths(grey_photos(1))
    assert "1 photo queued." in window.preview.placeholder.label.text()  # not "1 photos"
    assert a["start"].isEnabled() and not a["run_again"].isEnabled()  # nothing ran yet
    assert not a["samples"].isVisible()  # the samples are for trying the app, not beside one's own queue
    _run(qtbot, window)
    assert not a["start"].isEnabled() and a["run_again"].isEnabled()  # all done: Run Again is the way on
    window.queue_presenter.clear_queue()
    assert a["samples"].isVisible() and not a["start"].isEnabled()


def test_help_lists_each_action_by_its_name_not_the_undo_text_of_the_moment(qtbot, make_window, backend):
    window = make_window(backend)
    window.history.stack.push(_named_command("Add Hint"))
    text = window.help.help_text()
    assert "Undo Add Hint" not in text and "Undo" in text and "Redo" in text


def _named_command(text: str):
    from PySide6.QtGui import QUndoCommand

    command = QUndoCommand(text)
    return command
