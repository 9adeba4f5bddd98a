"""Decode ahead: photos read and prepared in worker threads while the model works, handed out in input order.

How far ahead is bounded twice: by count (``lookahead`` photos queued) and by pixels (decoded photos
waiting, plus those already taken for the batch being built, about ``max_pixels``). Cancel drops the
queue at once: decodes that have not started are cancelled, never run just to be thrown away.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from ..colorizer import Prepared, prepare
from ..imageio import MAX_PIXELS, DecodedImage, ImageError, MadeHere, decode
from ..messages import short_reason
from ..options import ALREADY_IN_COLOUR, Job
from ..print_look import looks_due, looks_like_old_print

log = logging.getLogger(__name__)


@dataclass
class Decoded:
    """One photo read and prepared for the model, or why it is not: ``error`` (failed) or ``skip``."""

    job: Job
    out: Path | None
    image: DecodedImage | None = None
    prepared: Prepared | None = None
    ms: float = 0.0
    error: str | None = None
    skip: str | None = None
    looks_old: bool | None = None  # read as an old print's scan (``print_look``; None: not looked at); advice only

    @property
    def pixels(self) -> int:
        return self.prepared.L.size if self.prepared is not None else 0


def decode_photo(job: Job, out: Path | None, skip: str, *, size: int, skip_colour: bool,
                 max_pixels: int = MAX_PIXELS, measure_look: bool = True) -> Decoded:
    """Read ``job``'s photo and prepare it at working size ``size``; errors become ``Decoded.error``."""
    d = Decoded(job, out)
    if skip:
        d.skip = skip
        return d
    t = time.perf_counter()
    try:
        d.image = decode(job.path, max_pixels, refuse_outputs=True)
        if d.image.is_colour and skip_colour:
            d.skip = ALREADY_IN_COLOUR
        else:
            d.prepared = prepare(d.image.pixels, size)
            if measure_look and looks_due(job.index):
                d.looks_old = not d.image.is_colour and looks_like_old_print(d.image.pixels, d.prepared.L)
    except MadeHere as err:  # found among the photos: not a failure, nothing to colour
        d.skip = str(err)
    except ImageError as err:
        d.error = str(err)
    except MemoryError:
        d.error = "not enough memory to decode this photo"
    except Exception as err:  # noqa: BLE001 - one odd photo must not end the batch
        log.warning("decoding %s failed unexpectedly", job.path, exc_info=True)
        d.error = f"could not read this photo ({short_reason(err)})"
    if d.error is not None:
        d.image = d.prepared = None
    d.ms = 1000 * (time.perf_counter() - t)
    return d


class DecodeAhead:
    """Decodes ``jobs`` in worker threads ahead of use; ``take`` hands them out in input order.

    ``start(job)`` runs on the caller's thread, in input order (output names are planned there), and
    returns the work for a decode thread. Use as a context manager: leaving it cancels what has not
    started and waits for the decodes that are running (each about one photo's time).
    """

    def __init__(self, jobs: Sequence[Job], start: Callable[[Job], Callable[[], Decoded]], *, workers: int,
                 lookahead: int, max_pixels: int) -> None:
        self._jobs = jobs
        self._start = start
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="decode")
        self._queue: deque[tuple[Job, Future[Decoded]]] = deque()
        self._next = 0
        self.lookahead = max(1, lookahead)
        self.max_pixels = max_pixels
        self.taken_pixels = 0  # pixels handed out and still held by the caller (the batch being built)

    def __enter__(self) -> DecodeAhead:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        self.cancel_rest()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __bool__(self) -> bool:
        """Whether any photo is left to take."""
        return bool(self._queue) or self._next < len(self._jobs)

    def _buffered(self) -> int:
        return self.taken_pixels + sum(f.result().pixels for _, f in self._queue if f.done() and not f.cancelled())

    def fill(self) -> None:
        """Start decodes until ``lookahead`` are queued or the decoded ones fill the pixel budget."""
        while self._next < len(self._jobs) and len(self._queue) < self.lookahead \
                and (not self._queue or self._buffered() < self.max_pixels):
            job = self._jobs[self._next]
            self._next += 1
            self._queue.append((job, self._pool.submit(self._start(job))))

    def head(self) -> Future[Decoded]:
        """The next photo's decode (started if it was not); only while ``self`` is true."""
        self.fill()
        return self._queue[0][1]

    def take(self) -> Decoded:
        """The next photo, decoded (waits for it); its pixels count as taken until ``release_taken``."""
        future = self.head()
        self._queue.popleft()
        d = future.result()
        self.taken_pixels += d.pixels
        self.fill()
        return d

    def release_taken(self) -> None:
        """The photos taken so far have gone to the model: they no longer count against the budget."""
        self.taken_pixels = 0

    def cancel_rest(self) -> list[Job]:
        """Stop: cancel the decodes that have not started; returns every job not taken, in order.

        Decodes already running finish in their threads (their results are dropped).
        """
        rest = [job for job, _ in self._queue] + list(self._jobs[self._next :])
        for _, future in self._queue:
            future.cancel()
        self._queue.clear()
        self._next = len(self._jobs)
        return rest
