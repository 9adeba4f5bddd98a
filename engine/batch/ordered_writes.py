"""Ordered writes: colour photos rendered and written in worker threads, reported in input order.

Results wait in input order; each is reported once its write (if it has one) is finished. Writes
waiting are bounded by count and by pixels: ``throttle`` blocks on the writes themselves
(``concurrent.futures.wait``), never on a separate snapshot of which ones are still running.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from dataclasses import dataclass

import numpy as np

from ..color import join_lab, strips
from ..colorizer import ab_rows
from ..imageio import DecodedImage, ImageError, OutputUnwritable, encode, write_error
from ..messages import short_reason
from ..options import ExportOptions, PhotoResult, Status
from .decode_ahead import Decoded

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WriteOutcome:
    """How one write went: its time, the reason it failed, and that reason when no photo can escape it."""

    ms: float
    error: str | None = None
    fatal: OutputUnwritable | None = None


def _to_depth(rgb: np.ndarray, out: np.ndarray) -> None:
    """Float RGB 0..1 into ``out`` (uint8 or uint16), rounded; ``rgb`` is used as scratch."""
    top = 65535.0 if out.dtype == np.uint16 else 255.0
    rgb *= top
    rgb += 0.5
    np.clip(rgb, 0, top, out=rgb)
    out[...] = rgb  # truncates: with the 0.5 above, rounds


def render_from_source(L: np.ndarray, source: np.ndarray, image: DecodedImage, strength: float = 1.0) -> np.ndarray:
    """The colour photo in the input's bit depth (uint8, or uint16 for 16-bit inputs).

    The full-size ab is made strip by strip from ``ab_source``'s output, so memory stays bounded.
    ``strength`` scales the ab (the chroma) as the GUI's preview does: 0 grey, 1 the model's own colour.
    """
    H, W = L.shape
    out = np.empty((H, W, 3), np.uint16 if image.pixels.dtype == np.uint16 else np.uint8)
    for r0, r1 in strips(H, W):
        ab = ab_rows(source, H, r0, r1)
        if strength != 1.0:
            ab *= np.float32(strength)
        _to_depth(join_lab(L[r0:r1], ab), out[r0:r1])
    return out


def write_photo(d: Decoded, source: np.ndarray, export: ExportOptions) -> WriteOutcome:
    """Render one photo from the model's ``source`` ab and write it (atomically) to ``d.out``."""
    assert d.image is not None and d.prepared is not None and d.out is not None
    t = time.perf_counter()
    error: str | None = None
    fatal: OutputUnwritable | None = None
    try:
        try:
            d.out.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise write_error(err, "the output folder") from None
        rgb = render_from_source(d.prepared.L, source, d.image, export.strength)
        keep = export.keep_metadata
        encode(d.out, rgb, quality=export.jpeg_quality, alpha=d.image.alpha,
               exif=d.image.exif if keep else None, icc=d.image.icc if keep else None,
               compression=d.image.compression)
    except OutputUnwritable as err:
        error, fatal = str(err), err
    except ImageError as err:
        error = str(err)
    except MemoryError:
        error = "not enough memory to write the output"
    except Exception as err:  # noqa: BLE001 - one odd photo must not end the batch
        log.warning("writing %s failed unexpectedly", d.out, exc_info=True)
        error = f"could not write the output ({short_reason(err)})"
    finally:
        d.image = d.prepared = None  # the future keeps ``d``: let its pixels go now
    return WriteOutcome(1000 * (time.perf_counter() - t), error, fatal)


class OrderedWrites:
    """Photo results in input order, each reported (``report``) once its write is finished.

    ``report(result, outcome)`` runs on the caller's thread, from ``add``, ``report_finished``,
    ``throttle`` and ``finish``; ``outcome`` is None for a photo with nothing to write.
    """

    def __init__(self, pool: Executor, report: Callable[[PhotoResult, WriteOutcome | None], None], *,
                 max_waiting: int, max_pixels: int) -> None:
        self._pool = pool
        self._report = report
        self._queue: deque[tuple[PhotoResult, Future[WriteOutcome] | None]] = deque()
        self.max_waiting = max_waiting
        self.max_pixels = max_pixels

    def __len__(self) -> int:
        """Results not reported yet."""
        return len(self._queue)

    def add(self, result: PhotoResult, write: Callable[[], WriteOutcome] | None = None) -> None:
        """Queue ``result`` behind the earlier ones; ``write`` (if any) starts now in a writer thread."""
        self._queue.append((result, self._pool.submit(write) if write is not None else None))
        self.report_finished()

    def unfinished(self) -> list[Future[WriteOutcome]]:
        """The writes still running or waiting for a writer thread."""
        return [f for _, f in self._queue if f is not None and not f.done()]

    def report_finished(self) -> None:
        """Report the results at the head of the line whose writes are finished; never waits."""
        while self._queue:
            result, write = self._queue[0]
            if write is not None and not write.done():
                return
            self._queue.popleft()
            self._report(result, write.result() if write is not None and not write.cancelled() else None)

    def cancel_waiting(self, reason: str) -> None:
        """Cancel the writes no writer thread has started: their photos are reported as cancelled.

        Writes already running finish (whole: writes are atomic) and are reported as usual.
        """
        for result, write in self._queue:
            if write is not None and write.cancel():
                result.status, result.message, result.output = Status.CANCELLED, reason, None

    def throttle(self, stop: Callable[[], bool] | None = None) -> None:
        """Wait while more than ``max_waiting`` writes (or ``max_pixels``) are unfinished; always allows one.

        Returns early once ``stop()`` is true (checked after each report).
        """
        while True:
            self.report_finished()
            if stop is not None and stop():
                return
            waiting = [(r, f) for r, f in self._queue if f is not None and not f.done()]
            if len(waiting) <= 1 or (len(waiting) <= self.max_waiting
                                     and sum(r.width * r.height for r, _ in waiting) <= self.max_pixels):
                return
            wait([f for _, f in waiting], return_when=FIRST_COMPLETED)  # returns at once if one has finished

    def finish(self) -> None:
        """Wait for every write and report every result."""
        while self._queue:
            self.report_finished()
            waiting = self.unfinished()
            if waiting:
                wait(waiting, return_when=FIRST_COMPLETED)
