"""Ctrl+C during a run: the first stops after the photos in progress, which are written and counted like any other;
a second quits at once, saying what was written (``os._exit``: unwinding the run's threads instead kept writing
photos after the count, and could end in a C++ abort). A photo left unfinished then is only a temporary file, which
the next run removes; no output name ever holds half a photo.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..batch.pipeline import RunControl


@contextmanager
def first_ctrl_c_cancels(control: RunControl, quit_text: Callable[[], str]) -> Iterator[None]:
    previous = signal.getsignal(signal.SIGINT)
    # Signals reach the main thread only; a run started in the background with SIGINT ignored stays deaf to it.
    if threading.current_thread() is not threading.main_thread() or previous is signal.SIG_IGN:
        yield
        return

    def on_ctrl_c(_signum: int, _frame: FrameType | None) -> None:
        if control.cancelled:
            _say(f"\n{quit_text()}\n")
            os._exit(130)
        control.cancel()
        _say("\nstopping after the photos in progress (Ctrl+C again quits without waiting for them)\n")

    signal.signal(signal.SIGINT, on_ctrl_c)
    try:
        yield
    finally:  # a handler set from C reads as None: Python's own then
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)


def _say(text: str) -> None:
    """os.write, not print: the progress bar may be inside a write to stderr when the signal comes."""
    try:
        os.write(sys.stderr.fileno(), text.encode())
    except (AttributeError, OSError, ValueError):  # a stderr with no file behind it (captured)
        print(text, end="", file=sys.stderr)
