"""One progress bar for ``colorize`` and ``train``.

On a terminal it is redrawn in place and fitted to the terminal's width; anywhere else (a log file,
a pipe, CI) it writes a plain line every ``every`` steps, or nothing when ``every`` is 0, so logs
never fill with carriage returns.
"""

from __future__ import annotations

import shutil
import sys
import time
from typing import TextIO


def format_eta(seconds: float | None) -> str:
    """``m:ss``, or ``h:mm:ss`` past an hour; ``--:--`` when not known yet."""
    if seconds is None:
        return "--:--"
    s = max(0, int(seconds + 0.5))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class ProgressBar:
    """``[#####.....] 12/40 3.10 photos/s ETA 0:09 note``.

    ``first``: the count the run resumed from (the rate counts only this run's steps).
    ``time_left`` in ``update``: a time budget that caps the ETA (training with ``--max-minutes``).
    ``skipped`` in ``update``: how many of the steps counted took no work (``--skip-existing``): they move the
    bar but not the rate, so a resumed run's ETA is the time its remaining work takes.
    """

    def __init__(self, total: int, *, unit: str = "it", every: int = 0, first: int = 0,
                 stream: TextIO | None = None, width: int = 28) -> None:
        self.total, self.unit, self.every, self.first, self.width = total, unit, every, first, width
        self.stream = stream if stream is not None else sys.stderr
        self.count = first
        self.skipped = 0
        self.start = time.monotonic()
        isatty = getattr(self.stream, "isatty", None)
        self.on_terminal = bool(isatty and isatty())
        self._drawn = 0  # characters on the terminal line, to clear it

    def line(self, secs: float, note: str = "", time_left: float | None = None) -> str:
        """The bar's text after ``secs`` seconds (no carriage return, no newline)."""
        done = self.count - self.first - self.skipped
        rate = done / secs if secs > 0 else 0.0
        eta = (self.total - self.count) / rate if rate > 0 else None
        if self.count >= self.total:
            eta = 0.0
        if time_left is not None:
            eta = min(eta, time_left) if eta is not None else time_left
        fill = int(self.width * min(max(self.count, 0), self.total) / self.total) if self.total > 0 else self.width
        skipped = f" ({self.skipped} skipped)" if self.skipped else ""
        return (f"[{'#' * fill}{'.' * (self.width - fill)}] {self.count}/{self.total}{skipped} "
                f"{rate:.2f} {self.unit}/s ETA {format_eta(eta)} {note}").rstrip()

    def update(self, count: int, note: str = "", time_left: float | None = None, skipped: int | None = None) -> None:
        self.count = count
        if skipped is not None:
            self.skipped = skipped
        if self.on_terminal:
            columns = shutil.get_terminal_size((100, 24)).columns
            text = self.line(time.monotonic() - self.start, note, time_left)[: max(columns - 1, 20)]
            self.stream.write("\r" + text + " " * max(0, self._drawn - len(text)))
            self._drawn = len(text)
        elif self.every > 0 and (count % self.every == 0 or count == self.total):
            self.stream.write(self.line(time.monotonic() - self.start, note, time_left) + "\n")
        else:
            return
        self.stream.flush()

    def close(self, keep: bool = False) -> None:
        """Clear the bar from the terminal (so a message can take the line), or ``keep`` it and end the line."""
        if self.on_terminal and self._drawn:
            self.stream.write("\n" if keep else "\r" + " " * self._drawn + "\r")
            self.stream.flush()
            self._drawn = 0
