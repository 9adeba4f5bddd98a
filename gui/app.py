"""Starts the GUI: ``python main.py [PATH...] [--output DIR] [--start]``.

This is the composition root: it builds the engine backend (``gui.bridge``, the only package that
pulls in torch) and injects it into the window. Developer options, read from the environment:

- ``COLORIZER_UNTRAINED=1``: use a randomly initialised model instead of the trained weights
  (screenshots and demos before training has finished; the colours are meaningless).
- ``COLORIZER_SCREENSHOT=PREFIX``: save ``PREFIX-mid.png`` half-way through the batch and
  ``PREFIX-done.png`` after it (last photo selected), then quit (use with ``--start``);
  ``COLORIZER_SCREENSHOT_SIZE=WxH`` sizes the window first.

Logging (``gui.logfile``): ``COLORIZER_LOG_LEVEL=DEBUG|INFO|WARNING|ERROR``, and ``COLORIZER_LOG_DIR``
for the rotating log file that Help > Show Log File opens.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSettings, QTimer
from PySide6.QtWidgets import QApplication

from gui.logfile import start_logging
from gui.model.settings import APPLICATION, ORGANIZATION

if TYPE_CHECKING:
    from gui.main_window import MainWindow
    from gui.presenters.backend import Backend

log = logging.getLogger(__name__)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="main.py",
        description="Colorizer: bring grayscale photos to colour. Without a subcommand the window opens "
                    "(subcommands: colorize, bench, train, readout, evaluate).")
    p.add_argument("paths", nargs="*", type=Path, metavar="PATH", help="photos or folders to queue")
    p.add_argument("--output", type=Path, metavar="DIR",
                   help="the export folder for this run (the saved export folder is left as it is)")
    p.add_argument("--start", action="store_true", help="start colorizing the queued photos at once")
    p.add_argument("--hints", type=Path, metavar="FILE",
                   help="colour hints for the queued photos, the file `colorize --hints` reads (as File > Load Hints)")
    return p.parse_args(argv)


def build_window(args: argparse.Namespace, backend: Backend, settings: QSettings | None = None) -> MainWindow:
    """The window with the command line applied: PATHs queued, the export folder set for this run only."""
    from gui import main_window

    window = main_window.MainWindow(backend, settings)
    if args.output is not None:
        window.prefs.set_output_dir(args.output.expanduser().resolve(), remember=False)
    if args.paths:
        window.queue_presenter.add_paths(args.paths)
    if args.hints is not None:
        window.hint_files.load_file(args.hints.expanduser())  # a bad file says why in the status bar
    return window


def starts(args: argparse.Namespace, window: MainWindow) -> bool:
    """Whether ``--start`` starts the batch: not when every PATH given failed to queue, so the status line keeps
    saying why (a missing folder) rather than "Nothing to colorize".
    """
    return bool(args.start) and (bool(window.queue.rows()) or not args.paths)


def make_backend() -> Backend:
    from gui.bridge.worker import Backend as EngineBackend

    if os.environ.get("COLORIZER_UNTRAINED") == "1":
        from gui.bridge.untrained import untrained_factory

        log.warning("COLORIZER_UNTRAINED=1: using an untrained model; its colours are meaningless")
        return EngineBackend(factory=untrained_factory)
    return EngineBackend()


def log_unexpected_errors() -> None:
    """An exception escaping a Qt slot is logged with its traceback: to stderr, and to the log file for reports."""
    previous = sys.excepthook

    def hook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        if issubclass(kind, KeyboardInterrupt):
            previous(kind, value, tb)
        else:
            log.error("unexpected error", exc_info=(kind, value, tb))

    sys.excepthook = hook


def run_app(argv: list[str]) -> int:
    args = parse_args(argv)
    start_logging()
    log_unexpected_errors()
    warn_broken_bindings()
    app = QApplication.instance() or QApplication([sys.argv[0] if sys.argv else "colorizer"])
    app.setOrganizationName(ORGANIZATION)
    app.setApplicationName(APPLICATION)
    window = build_window(args, make_backend())
    shots = os.environ.get("COLORIZER_SCREENSHOT")
    taker = None  # kept alive (with the window, its parent) until the app returns
    if shots:
        from gui.devtools import ScreenshotTaker, parse_size

        taker = ScreenshotTaker(window, Path(shots), size=parse_size(os.environ.get("COLORIZER_SCREENSHOT_SIZE")))
    window.show()
    if starts(args, window):
        QTimer.singleShot(0, window.batch.start_batch)
    status = app.exec()
    del taker
    tear_down(window)
    return status


# PySide6 6.12.0 drops a reference to None/True/False on some calls pyqtgraph makes all the time
# (QGraphicsItem.scene(), parentItem(), ...): after a long session the count reaches zero and Python
# aborts ("Fatal Python error: bool_dealloc", exit 134). pyproject.toml excludes it; warn if it is here.
BROKEN_BINDINGS = ("6.12.0",)


def warn_broken_bindings() -> str | None:
    """The warning logged when the installed PySide6 is a release known to crash this app, else None."""
    import PySide6

    if PySide6.__version__ not in BROKEN_BINDINGS:
        return None
    text = (f"PySide6 {PySide6.__version__} has a reference-counting bug that crashes the app after long "
            "sessions; install a supported release: pip install 'PySide6-Essentials>=6.8,<6.12'")
    log.warning(text)
    return text


def tear_down(window: MainWindow) -> None:
    """Close and delete the window while Python and the QApplication are both whole.

    Left to interpreter shutdown, its plots were destroyed in arbitrary order while Qt still called
    their Python methods; closing first stops the batch thread and the timers (MainWindow.closeEvent).
    """
    import gc

    import shiboken6

    if shiboken6.isValid(window):
        if window.isVisible():
            window.ask_quit = lambda *_: True  # the app is ending already: nothing to ask
            window.close()
        shiboken6.delete(window)
    gc.collect()
