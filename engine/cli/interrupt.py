"""Ctrl+C during a run: the first stops after the photos in progress, which are written and counted like any other;
a second stops at once (``KeyboardInterrupt``). Without this, the photos in progress were written after the count.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Protocol


class Cancellable(Protocol):
    @property
    def cancelled(self) -> bool: ...
    def cancel(self) -> None: ...


@contextmanager
def first_ctrl_c_cancels(control: Cancellable) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
        yield
        return

    def on_ctrl_c(_signum: int, _frame: FrameType | None) -> None:
        if control.cancelled:
            raise KeyboardInterrupt
        control.cancel()
        print("\nstopping after the photos in progress (Ctrl+C again stops at once)", file=sys.stderr)

    previous = signal.signal(signal.SIGINT, on_ctrl_c)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
