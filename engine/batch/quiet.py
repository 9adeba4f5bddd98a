"""Model calls on the CPU, and every timed one, run with no decode or write alongside.

Why: the CPU runtimes use every core, and a JPEG decode or encode beside a model call slowed it about
six-fold on 2 cores (16 photos of 3200 x 2400: 0.37-0.42 s of model time alone, 2.3-3.6 s beside the
I/O) while saving less than that in overlap: held apart, the batch ran 6.5-7.0 photos/s instead of
3.6-4.9 (4 runs each; 28-29 against 25-27 photos/s on 40 smaller photos; docs/quiet-gate-timing.txt, from
tools/quiet_gate_timing.py). In compare mode the two engines, timed one after the other, were slowed
unequally: the speed-up read 1.1x-1.5x in three runs of the same photos (0.8x-3x in the app), and
4.2x-6.0x with the calls held apart.
Background work may overlap other background work; a model call waits for the running background work
to finish, and holds new work until it is done.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")


class QuietGate:
    """Shared entry for background work, exclusive entry for a timed call (which goes first when waiting)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._background = 0  # background tasks running
        self._timed_waiting = 0
        self._timed = False

    @contextmanager
    def background(self) -> Iterator[None]:
        with self._cond:
            while self._timed or self._timed_waiting:
                self._cond.wait()
            self._background += 1
        try:
            yield
        finally:
            with self._cond:
                self._background -= 1
                self._cond.notify_all()

    @contextmanager
    def timed(self) -> Iterator[None]:
        with self._cond:
            self._timed_waiting += 1
            try:
                while self._timed or self._background:
                    self._cond.wait()
            finally:  # also on Ctrl-C while waiting: a count left behind would hold every background task
                self._timed_waiting -= 1
                self._cond.notify_all()
            self._timed = True
        try:
            yield
        finally:
            with self._cond:
                self._timed = False
                self._cond.notify_all()

    def wrap(self, work: Callable[[], T]) -> Callable[[], T]:
        """``work`` run as background work."""
        def gated() -> T:
            with self.background():
                return work()
        return gated


class NoGate:
    """Every overlap allowed: a GPU model call overlapping CPU work, with nothing timed against it."""

    @contextmanager
    def background(self) -> Iterator[None]:
        yield

    @contextmanager
    def timed(self) -> Iterator[None]:
        yield

    def wrap(self, work: Callable[[], T]) -> Callable[[], T]:
        return work


def gate_for(device_type: str, comparing: bool) -> QuietGate | NoGate:
    """The gate a batch needs: model calls alone on the CPU, or when two engines are timed against each other."""
    return QuietGate() if device_type == "cpu" or comparing else NoGate()
