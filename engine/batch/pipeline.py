"""The batch pipeline: decode ahead in threads, infer in batches, encode and write in threads.

``BatchPipeline.run`` runs on the caller's thread (the GUI's worker thread, or the CLI's
main thread) and calls ``on_result`` there, once per photo, in input order.

Reliability rules: a photo that cannot be read, colorized or written fails alone with a
one-line reason and the batch goes on; the batch stops (the rest reported as cancelled with
the reason) only when nothing more can be written (disk full, read-only output). Memory is
bounded: decoded photos waiting and outputs waiting to be written are limited in number and
in pixels, and full-resolution work goes in strips.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from ..color import join_lab, strips
from ..colorizer import Colorizer, Prepared, ab_rows, ab_source, is_out_of_memory, pack, prepare, reprepare
from ..imageio import (MAX_PIXELS, DecodedImage, ImageError, OutputUnwritable, clean_partials, decode, encode,
                       one_line, short_reason, write_error)
from ..options import MIN_WORK, BatchSummary, ExportOptions, Job, PhotoResult, Preview
from .planning import OutputPlanner

log = logging.getLogger(__name__)


class RunControl:
    """Cancel and pause, honoured between photos. Safe to call from any thread."""

    def __init__(self) -> None:
        self._cancel = threading.Event()
        self._running = threading.Event()
        self._running.set()

    def cancel(self) -> None:
        self._cancel.set()
        self._running.set()

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    def wait_if_paused(self) -> None:
        while not self._running.wait(0.1):
            pass


@dataclass
class _Decoded:
    job: Job
    out: Path | None
    image: DecodedImage | None = None
    prepared: Prepared | None = None
    ms: float = 0.0
    error: str | None = None
    skip: str | None = None

    @property
    def pixels(self) -> int:
        return self.prepared.L.size if self.prepared is not None else 0


def _preview_from_source(item: Prepared, source: np.ndarray, size: int) -> Preview:
    """A preview from ``ab_source``'s output, without making the full-resolution ab."""
    h, w = item.shape
    s = min(1.0, size / max(h, w))
    if s >= 1:
        return Preview(item.L.copy(), ab_rows(source, h, 0, h))
    dsize = (max(1, round(w * s)), max(1, round(h * s)))
    interp = cv2.INTER_AREA if dsize[1] <= source.shape[0] else cv2.INTER_LINEAR
    return Preview(cv2.resize(item.L, dsize, interpolation=cv2.INTER_AREA),
                   cv2.resize(source, dsize, interpolation=interp).reshape(dsize[1], dsize[0], 2))


def _to_depth(rgb: np.ndarray, out: np.ndarray) -> None:
    """Float RGB 0..1 into ``out`` (uint8 or uint16), rounded; ``rgb`` is used as scratch."""
    top = 65535.0 if out.dtype == np.uint16 else 255.0
    rgb *= top
    rgb += 0.5
    np.clip(rgb, 0, top, out=rgb)
    out[...] = rgb  # truncates: with the 0.5 above, rounds


def render_from_source(L: np.ndarray, source: np.ndarray, image: DecodedImage) -> np.ndarray:
    """The colour photo in the input's bit depth (uint8, or uint16 for 16-bit inputs).

    The full-size ab is made strip by strip from ``ab_source``'s output, so memory stays bounded.
    """
    H, W = L.shape
    out = np.empty((H, W, 3), np.uint16 if image.pixels.dtype == np.uint16 else np.uint8)
    for r0, r1 in strips(H, W):
        _to_depth(join_lab(L[r0:r1], ab_rows(source, H, r0, r1)), out[r0:r1])
    return out


def _done_future(value: object) -> Future:
    f: Future = Future()
    f.set_result(value)
    return f


class BatchPipeline:
    """Colorizes many photos with I/O overlapping inference.

    Args:
        colorizer: the engine that colours.
        export: where outputs go.
        compare: a second engine run on the same batches (speed comparison); its outputs
            are not written, only timed and diffed.
        preview_size: when > 0, each result carries a preview at most this large.
        max_pixels: photos whose header claims more pixels are refused before decoding.
        max_buffered_pixels: decoded photos waiting for the model, and colorized photos waiting
            to be written, are held up to about this many pixels each (always at least one).
    """

    def __init__(self, colorizer: Colorizer, export: ExportOptions, *, compare: Colorizer | None = None,
                 decode_workers: int = 2, encode_workers: int = 2, preview_size: int = 0,
                 max_pixels: int = MAX_PIXELS, max_buffered_pixels: int = 64_000_000) -> None:
        self.colorizer = colorizer
        self.export = export.validated()
        self.compare = compare
        self.decode_workers = decode_workers
        self.encode_workers = encode_workers
        self.preview_size = preview_size
        self.max_pixels = max_pixels
        self.max_buffered_pixels = max_buffered_pixels

    def _decode(self, job: Job, out: Path | None, skip: str) -> _Decoded:
        d = _Decoded(job, out)
        if skip:
            d.skip = skip
            return d
        t = time.perf_counter()
        try:
            d.image = decode(job.path, self.max_pixels)
            if d.image.is_colour and self.export.colour_inputs == "skip":
                d.skip = "already in colour"
            else:
                d.prepared = prepare(d.image.pixels, self.colorizer.settings.size)
        except ImageError as err:
            d.error = str(err)
        except MemoryError:
            d.error = "not enough memory to decode this photo"
        except Exception as err:  # noqa: BLE001 - one odd photo must not end the batch
            log.debug("decoding %s failed", job.path, exc_info=True)
            d.error = f"could not read this photo ({short_reason(err)})"
        if d.error is not None:
            d.image = d.prepared = None
        d.ms = 1000 * (time.perf_counter() - t)
        return d

    def _encode(self, d: _Decoded, source: np.ndarray) -> tuple[float, str | None, OutputUnwritable | None]:
        """Render and write one photo. Returns (ms, error, the error when no photo can escape it)."""
        assert d.image is not None and d.prepared is not None and d.out is not None
        t = time.perf_counter()
        err_text: str | None = None
        fatal: OutputUnwritable | None = None
        try:
            try:
                d.out.parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise write_error(err, "the output folder") from None
            rgb = render_from_source(d.prepared.L, source, d.image)
            keep = self.export.keep_metadata
            encode(d.out, rgb, quality=self.export.jpeg_quality, alpha=d.image.alpha,
                   exif=d.image.exif if keep else None, icc=d.image.icc if keep else None)
        except OutputUnwritable as err:
            err_text, fatal = str(err), err
        except ImageError as err:
            err_text = str(err)
        except MemoryError:
            err_text = "not enough memory to write the output"
        except Exception as err:  # noqa: BLE001 - one odd photo must not end the batch
            log.debug("writing %s failed", d.out, exc_info=True)
            err_text = f"could not write the output ({short_reason(err)})"
        finally:
            d.image = d.prepared = None  # the future keeps ``d``: let its pixels go now
        return 1000 * (time.perf_counter() - t), err_text, fatal

    def run(self, jobs: Sequence[Job], on_result: Callable[[PhotoResult], None] | None = None,
            control: RunControl | None = None) -> BatchSummary:
        control = control or RunControl()
        summary = BatchSummary(total=len(jobs))
        start = time.perf_counter()
        out_dir = Path(self.export.output_dir)
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            summary.stopped_reason = f"cannot create the output folder {out_dir}: {err.strerror or err}"
        if summary.stopped_reason is None:
            clean_partials(out_dir)
        planner = OutputPlanner(self.export, jobs)
        pending_results: deque[tuple[PhotoResult, Future | None]] = deque()
        batch_size = self.colorizer.settings.batch_size
        lookahead = max(2 * batch_size, 4)
        max_pending_writes = 2 * batch_size + self.encode_workers
        budget = self.max_buffered_pixels
        fatal_writes = 0
        building = 0  # pixels of the batch being put together

        def emit(result: PhotoResult) -> None:
            summary.results.append(result)
            if result.status == "done":
                summary.done += 1
            elif result.status == "failed":
                summary.failed += 1
            elif result.status == "skipped":
                summary.skipped += 1
            if on_result is not None:
                on_result(result)

        def writes_waiting() -> tuple[int, int]:
            futs = [(r, f) for r, f in pending_results if f is not None and not f.done()]
            return len(futs), sum(r.width * r.height for r, _ in futs)

        def drain(block: bool) -> None:
            """Report finished photos in input order; ``block``: wait for all of them."""
            nonlocal fatal_writes
            while pending_results:
                result, fut = pending_results[0]
                if fut is not None:
                    if not block and not fut.done():
                        return
                    ms, err, fatal = fut.result()
                    result.encode_ms = ms
                    if err:
                        result.status, result.message, result.output = "failed", err, None
                        fatal_writes = fatal_writes + 1 if fatal else 0
                        # Nothing can be written: the disk is full or read-only, or no photo was written yet.
                        if fatal is not None and fatal_writes >= 2 and (
                                summary.done == 0 or fatal.whole_disk):
                            summary.stopped_reason = summary.stopped_reason or f"stopped: {err}"
                    else:
                        fatal_writes = 0
                pending_results.popleft()
                emit(result)

        def throttle_writes() -> None:
            """Wait for the oldest writes while too many photos (or pixels) wait to be written."""
            while pending_results:
                n, px = writes_waiting()
                if n <= 1 or (n <= max_pending_writes and px <= budget):
                    return
                head = next(f for _, f in pending_results if f is not None and not f.done())
                head.result()
                drain(block=False)

        with ThreadPoolExecutor(self.decode_workers, thread_name_prefix="decode") as dec_pool, \
                ThreadPoolExecutor(self.encode_workers, thread_name_prefix="encode") as enc_pool:
            queue: deque[Future[_Decoded]] = deque()
            next_job = 0

            def buffered() -> int:
                return building + sum(f.result().pixels for f in queue if f.done())

            def fill() -> None:
                nonlocal next_job
                while next_job < len(jobs) and len(queue) < lookahead and not control.cancelled \
                        and summary.stopped_reason is None and (not queue or buffered() < budget):
                    job = jobs[next_job]
                    try:
                        out, skip = planner.plan(job)
                    except (OSError, ValueError) as err:
                        queue.append(_done_future(_Decoded(job, None, error="cannot choose an output name "
                                                           f"({one_line(str(err), 120)})")))
                    else:
                        queue.append(dec_pool.submit(self._decode, job, out, skip))
                    next_job += 1

            fill()
            while queue:
                control.wait_if_paused()
                if control.cancelled or summary.stopped_reason is not None:
                    break
                batch: list[_Decoded] = []
                entries: list[tuple[PhotoResult, Future | None] | None] = []  # None: a photo of ``batch``
                building = 0
                while queue and len(batch) < batch_size and (not batch or building < budget // 2):
                    d = queue.popleft().result()
                    building += d.pixels
                    fill()
                    base = PhotoResult(d.job.index, d.job.path, "done", decode_ms=d.ms)
                    if d.image is not None:
                        base.width, base.height = d.image.size
                    if d.error is not None:
                        base.status, base.message = "failed", d.error
                        entries.append((base, None))
                    elif d.skip is not None:
                        base.status, base.message = "skipped", d.skip
                        entries.append((base, None))
                    else:
                        batch.append(d)
                        entries.append(None)
                done_batch = iter(self._infer_batch(batch, summary, enc_pool) if batch else [])
                pending_results.extend(e if e is not None else next(done_batch) for e in entries)
                building = 0
                drain(block=False)
                throttle_writes()
                fill()
            drain(block=True)
            cancelled_jobs = [f.result().job for f in queue] + list(jobs[next_job:])
            for f in queue:
                f.cancel()
        if control.cancelled or summary.stopped_reason is not None:
            summary.cancelled = control.cancelled
            for job in cancelled_jobs:
                emit(PhotoResult(job.index, job.path, "cancelled",
                                 summary.stopped_reason or "cancelled before it started"))
        summary.wall_s = time.perf_counter() - start
        return summary

    def _infer_batch(self, batch: list[_Decoded], summary: BatchSummary,
                     enc_pool: ThreadPoolExecutor) -> list[tuple[PhotoResult, Future | None]]:
        """Colorize one batch; returns each photo's result (and its write, if any), in batch order."""
        pending: list[tuple[PhotoResult, Future | None]] = []
        items = [d.prepared for d in batch if d.prepared is not None]
        notes = [""] * len(batch)
        canvas = pack(items)
        t = time.perf_counter()
        splits = self.colorizer.oom_splits
        ab_list: list[np.ndarray | None]
        ab_half: np.ndarray | None = None  # stays None when the batch had to be rescued photo by photo
        try:
            ab_half = self.colorizer.infer(canvas)
            ab_list = [ab_half[i] for i in range(len(batch))]
            if self.colorizer.oom_splits != splits:
                notes = [f"out of memory {self.colorizer.where}: colorized in smaller batches"] * len(batch)
        except Exception as err:  # noqa: BLE001 - one bad batch must not end the run
            if not is_out_of_memory(err):
                log.debug("inference failed", exc_info=True)
                reason = f"colorization failed: {short_reason(err, 160)}"
                for d in batch:
                    pending.append((PhotoResult(d.job.index, d.job.path, "failed", reason, decode_ms=d.ms), None))
                return pending
            self.colorizer.free_memory()
            ab_list = []
            for i, d in enumerate(batch):
                ab, item, note = self._rescue(d)
                ab_list.append(ab)
                if item is not None:
                    items[i] = item
                notes[i] = note
        infer_s = time.perf_counter() - t
        summary.infer_s += infer_s
        compare_ms = diff = None
        if self.compare is not None and ab_half is not None:
            try:
                t = time.perf_counter()
                other = self.compare.infer(canvas)
                c_s = time.perf_counter() - t
                summary.compare_infer_s += c_s
                compare_ms = 1000 * c_s / len(batch)
                diff = float(np.abs(other - ab_half).max())
                summary.max_abs_diff = diff if summary.max_abs_diff is None else max(summary.max_abs_diff, diff)
            except Exception:  # noqa: BLE001 - the comparison is a measurement, never a reason to fail a photo
                log.debug("the comparison engine failed", exc_info=True)
        for i, d in enumerate(batch):
            assert d.prepared is not None and d.image is not None
            ab = ab_list[i]
            if ab is None:
                pending.append((PhotoResult(d.job.index, d.job.path, "failed", notes[i], decode_ms=d.ms,
                                            width=d.image.size[0], height=d.image.size[1]), None))
                continue
            source = ab_source(ab, items[i])
            res = PhotoResult(d.job.index, d.job.path, "done", notes[i], output=d.out, decode_ms=d.ms,
                              infer_ms=1000 * infer_s / len(batch), compare_infer_ms=compare_ms, max_abs_diff=diff)
            res.width, res.height = d.image.size
            if self.preview_size > 0:
                res.preview = _preview_from_source(d.prepared, source, self.preview_size)
            pending.append((res, enc_pool.submit(self._encode, d, source)))
        return pending

    def _rescue(self, d: _Decoded) -> tuple[np.ndarray | None, Prepared | None, str]:
        """One photo the device had no memory for: (half-size ab, the item it was made from, note).

        Tried in turn: the photo alone (``infer`` already split the batch), a smaller working size,
        then the CPU. Never the grey input passed off as colour: (None, None, reason) if all fail.
        """
        c = self.colorizer
        assert d.prepared is not None
        where = c.where
        attempts: list[tuple[str, Prepared, Callable[[np.ndarray], np.ndarray]]] = [
            ("", d.prepared, c.infer)]
        size = max(d.prepared.small.shape)
        if size // 2 >= MIN_WORK:
            attempts.append((f"colorized at working size {size // 2}", reprepare(d.prepared, size // 2), c.infer))
        if not c.on_cpu:
            attempts.append(("colorized on the CPU", d.prepared, c.infer_on_cpu))
        last: BaseException | None = None
        for note, item, infer in attempts:
            try:
                ab = infer(pack([item]))[0]
            except Exception as err:  # noqa: BLE001
                last = err
                if not is_out_of_memory(err):
                    break
                c.free_memory()
                continue
            log.info("%s: out of memory %s, %s", d.job.path.name, where, note or "retried alone")
            return ab, item, f"out of memory {where}: {note or 'colorized alone'}"
        assert last is not None  # every attempt failed
        if not is_out_of_memory(last):
            return None, None, f"colorization failed after running out of memory {where}: {short_reason(last)}"
        return None, None, f"colorization failed: out of memory {where} ({short_reason(last)})"
