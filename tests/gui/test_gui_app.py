"""The command line of the window, and the rule that the GUI never imports torch itself."""

from __future__ import annotations

import logging.handlers
import os
import subprocess
import sys
from pathlib import Path

from helpers import ROOT
from PySide6.QtCore import QSettings

from gui.app import build_window, parse_args, starts


def test_command_line_paths_and_options_are_parsed():
    args = parse_args(["a.jpg", "folder", "--output", "out", "--start"])
    assert args.paths == [Path("a.jpg"), Path("folder")]
    assert args.output == Path("out") and args.start
    bare = parse_args([])
    assert bare.paths == [] and bare.output is None and not bare.start and bare.hints is None


def test_command_line_hints_file_gives_the_queued_photos_their_hints(qtbot, backend, grey_photos, tmp_path):
    from engine.hints import Hint, save_hints_file

    photos = grey_photos(2, folder="album")
    save_hints_file(tmp_path / "h.json", {photos[1].name: [Hint(0.25, 0.5, (200, 30, 30))]})
    window = build_window(parse_args([str(tmp_path / "album"), "--hints", str(tmp_path / "h.json")]),
                          backend, QSettings())
    qtbot.addWidget(window)
    assert window.hint_store.get(photos[1]) == (Hint(0.25, 0.5, (200, 30, 30)),)
    assert not window.hint_store.get(photos[0])
    window.close()


def test_command_line_queues_the_paths_sets_the_export_folder_and_runs(qtbot, backend, grey_photos, tmp_path):
    photos = grey_photos(3, folder="album")
    window = build_window(parse_args([str(tmp_path / "album"), "--output", str(tmp_path / "cli-out"), "--start"]),
                          backend, QSettings())
    qtbot.addWidget(window)
    window.engine_panel.work_size.setValue(64)
    assert [r.path for r in window.queue.rows()] == photos
    assert window.export_panel.choice().output_dir == tmp_path / "cli-out"
    with qtbot.waitSignal(window.controller.finished, timeout=60_000) as blocker:
        assert window.batch.start_batch()
    assert blocker.args[0].done == 3
    assert sorted(p.name for p in (tmp_path / "cli-out").iterdir()) == ["album"]  # the folder keeps its name
    assert sorted(p.name for p in (tmp_path / "cli-out" / "album").iterdir()) == [p.name for p in photos]
    window.close()


def test_start_with_only_a_missing_folder_keeps_saying_why_instead_of_starting(qtbot, backend, tmp_path):
    args = parse_args([str(tmp_path / "no-such-folder"), "--start"])
    window = build_window(args, backend, QSettings())
    qtbot.addWidget(window)
    assert not starts(args, window)
    assert "no-such-folder" in window.status_label.text()
    assert starts(parse_args(["--start"]), window)  # nothing given: Start says there is nothing to colorize
    window.close()


def test_gui_modules_do_not_import_torch():
    code = ("import sys; import gui.app, gui.main_window, gui.presenters.batch_controller, gui.views.charts, "
            "gui.views.preview, gui.model.queue_model, gui.model.settings, gui.views.engine_panel, "
            "gui.views.export_panel, gui.model.request, gui.devtools, gui.views.docks, gui.views.help_dialogs, "
            "gui.model.preview_loader, gui.views.busy, gui.model.run_keys, gui.model.previews; "
            "sys.exit('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"QT_QPA_PLATFORM": "offscreen", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr or "a gui module (other than gui.bridge) imported torch"


# -- the log file and Help > Show Log File --------------------------------------------------------------------

def test_the_gui_log_goes_to_a_rotating_file_in_the_overridable_log_folder():
    from gui import logfile

    folder = Path(os.environ["COLORIZER_LOG_DIR"])  # tests/conftest.py points it at a temporary folder
    path = logfile.start_file_log()
    try:
        assert path == folder / "colorizer.log" == logfile.log_file()
        logging.getLogger("gui.test").warning("something went wrong in the window")
        handler = next(h for h in logging.getLogger().handlers if h.get_name() == "colorizer-log-file")
        assert isinstance(handler, logging.handlers.RotatingFileHandler)
        assert handler.maxBytes <= 1_000_000 and handler.backupCount == 3
        handler.flush()
        assert "WARNING gui.test: something went wrong in the window" in path.read_text()
    finally:
        logfile.stop_file_log()
    assert all(h.get_name() != "colorizer-log-file" for h in logging.getLogger().handlers)


class _Desktop:
    opened: list[str] = []
    answer = True

    @classmethod
    def openUrl(cls, url):
        cls.opened.append(url.toLocalFile())
        return cls.answer


def test_help_show_log_file_opens_the_log_or_says_where_it_is(make_window, backend, monkeypatch):
    window = make_window(backend)
    help_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Help")
    assert "Show &Log File" in [a.text() for a in help_menu.actions()]
    monkeypatch.setattr("gui.presenters.help.QDesktopServices", _Desktop)
    _Desktop.opened = []
    log = Path(os.environ["COLORIZER_LOG_DIR"]) / "colorizer.log"

    assert not window.help.show_log_file()
    assert "No log file yet" in window.status_label.text() and _Desktop.opened == []

    log.write_text("INFO started\n")
    _Desktop.answer = False
    assert not window.help.show_log_file()
    assert window.status_label.text() == f"Could not open the log file; it is {log}"
    _Desktop.answer = True
    assert window.help.show_log_file()
    assert _Desktop.opened == [str(log), str(log)]
