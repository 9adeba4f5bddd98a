"""What reaches the user: errors as one printable line, and how much of the log to show.

Standard library only, so every layer of the engine and the GUI can use it.
"""

from __future__ import annotations

import logging
import os

LOG_LEVEL_ENV = "COLORIZER_LOG_LEVEL"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def printable(text: object) -> str:
    """``text`` whole, on one line: control characters (a newline in a file name) escaped, nothing cut."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in str(text))


def one_line(text: object, limit: int = 200) -> str:
    """The first non-empty line of ``text``, control characters escaped, at most ``limit`` characters."""
    for line in str(text).splitlines():
        if line.strip():
            line = printable(line.strip())
            return line if len(line) <= limit else line[: limit - 1] + "\u2026"
    return ""


def short_reason(err: BaseException, limit: int = 120) -> str:
    """An exception as a one-line reason for the user: its message, or its type when it has none."""
    return one_line(str(err), limit) or type(err).__name__


def log_level_from_env(default: int) -> tuple[int, str | None]:
    """The log level ``COLORIZER_LOG_LEVEL`` asks for, else ``default``; with a warning when it is not a level."""
    name = os.environ.get(LOG_LEVEL_ENV, "").strip().upper()
    if not name:
        return default, None
    if name not in LOG_LEVELS:
        return default, f"{LOG_LEVEL_ENV}={one_line(name, 40)} is not one of {', '.join(LOG_LEVELS)}; ignored"
    return logging.getLevelName(name), None


def counted(n: int, noun: str) -> str:
    """"1 photo", "3 photos": a count with its noun in the right number (nouns that take an -s)."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def part_of(part: int, total: int, noun: str) -> str:
    """"the photo", "all 3 photos", "2 of the 3 photos": some of a whole, its noun in the right number."""
    return f"the {noun}" if total == 1 else f"all {counted(total, noun)}" if part == total else \
        f"{part} of the {counted(total, noun)}"
