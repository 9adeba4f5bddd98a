"""Command line: colorize, bench, train, evaluate (``main.py`` sends anything else to the GUI).

Exit codes: 0 all succeeded, 1 some inputs failed (each named on stderr, one line each),
2 usage errors. An unexpected error is one ``error:`` line, after a WARNING with its traceback
for the bug report. ``--verbose`` shows everything the engine logs; ``COLORIZER_LOG_LEVEL``
(DEBUG, INFO, WARNING, ERROR) sets the level without it.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from ..messages import log_level_from_env, short_reason
from .parser import build_parser
from .usage import UsageError

__all__ = ["UsageError", "build_parser", "console_main", "log_level", "logging_to_stderr", "main"]

log = logging.getLogger(__name__)

NOISY_LOGGERS = ("PIL", "matplotlib", "urllib3", "filelock")


@contextmanager
def logging_to_stderr(level: int) -> Iterator[None]:
    """Log records at ``level`` and above go to the current stderr while the command runs; undone after."""
    root = logging.getLogger()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.setLevel(level)
    before = root.level
    root.addHandler(handler)
    root.setLevel(min(level, before))
    # --verbose is for our own story (device, precision, notes per photo), not the decoders' chunk by chunk.
    quiet = {name: logging.getLogger(name).level for name in NOISY_LOGGERS}
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(max(level, logging.INFO))
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(before)
        for name, lvl in quiet.items():
            logging.getLogger(name).setLevel(lvl)


def log_level(args: argparse.Namespace) -> tuple[int, str | None]:
    """``--verbose``, else ``COLORIZER_LOG_LEVEL``, else WARNING (INFO for ``train`` and ``tune``, which report)."""
    if getattr(args, "verbose", False):
        return logging.DEBUG, None
    return log_level_from_env(logging.INFO if args.command in ("train", "tune") else logging.WARNING)


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    level, problem = log_level(args)
    with logging_to_stderr(level):
        if problem:
            log.warning("%s", problem)
        try:
            return int(args.func(args))
        except UsageError as err:
            parser.error(str(err))  # exits 2
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130
        except Exception as err:  # noqa: BLE001 - the user gets one line, the log the traceback
            log.warning("unexpected error in %s (please report it with this traceback)", args.command,
                        exc_info=True)
            print(f"error: {short_reason(err, 300)}", file=sys.stderr)
            return 1
    return 0


def console_main() -> None:
    sys.exit(main(sys.argv[1:]))
