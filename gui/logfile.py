"""The app's log: warnings on the terminal, and a small rotating file in the user's log folder.

A window has no terminal a user will read, so what goes wrong is kept in the file, which
Help > Show Log File opens for a bug report. ``COLORIZER_LOG_DIR`` moves the folder (the tests
point it at a temporary one); ``COLORIZER_LOG_LEVEL`` sets how much is logged (file: INFO by default).
"""

from __future__ import annotations

import logging
import os
from logging.handlers import RotatingFileHandler
from pathlib import Path

import platformdirs

from engine.messages import log_level_from_env, short_reason

LOG_DIR_ENV = "COLORIZER_LOG_DIR"
FILE_NAME = "colorizer.log"
MAX_BYTES = 300_000  # x (1 + BACKUPS) files: about a megabyte at most
BACKUPS = 3
_FILE_HANDLER = "colorizer-log-file"
_CONSOLE_HANDLER = "colorizer-console"

log = logging.getLogger(__name__)


def log_dir() -> Path:
    """``COLORIZER_LOG_DIR``, else the platform's user log folder (``~/.local/state/Colorizer/log`` on Linux)."""
    override = os.environ.get(LOG_DIR_ENV, "").strip()
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_log_dir("Colorizer", "Colorizer"))


def _handler(name: str) -> logging.Handler | None:
    return next((h for h in logging.getLogger().handlers if h.get_name() == name), None)


def log_file() -> Path:
    """The file being written now, or where it would be."""
    handler = _handler(_FILE_HANDLER)
    if isinstance(handler, RotatingFileHandler):
        return Path(handler.baseFilename)
    return log_dir() / FILE_NAME


def _attach(handler: logging.Handler, name: str, level: int) -> None:
    handler.set_name(name)
    handler.setLevel(level)
    root = logging.getLogger()
    root.addHandler(handler)
    if root.level == logging.NOTSET or root.level > level:
        root.setLevel(level)


def start_file_log(folder: Path | None = None) -> Path | None:
    """Keep log records in the rotating file (once per process): its path, or None when it cannot be written."""
    if _handler(_FILE_HANDLER) is not None:
        return log_file()
    path = (folder if folder is not None else log_dir()) / FILE_NAME
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = RotatingFileHandler(path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8")
    except OSError as err:
        log.warning("no log file: cannot write %s (%s)", path, short_reason(err))
        return None
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    _attach(handler, _FILE_HANDLER, log_level_from_env(logging.INFO)[0])
    return path


def stop_file_log() -> None:
    handler = _handler(_FILE_HANDLER)
    if handler is not None:
        logging.getLogger().removeHandler(handler)
        handler.close()


def start_logging() -> Path | None:
    """Warnings (or ``COLORIZER_LOG_LEVEL``) to stderr, and the file; the file's path, or None."""
    level, problem = log_level_from_env(logging.WARNING)
    if _handler(_CONSOLE_HANDLER) is None:
        console = logging.StreamHandler()
        console.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        _attach(console, _CONSOLE_HANDLER, level)
    path = start_file_log()
    if problem:
        log.warning("%s", problem)
    log.info("Colorizer started; log level %s", logging.getLevelName(logging.getLogger().level))
    return path
