"""The batch pipeline: decode ahead in threads, infer in batches, render and write in threads.

On the CPU (and in compare mode) the model calls run with no decode or write beside them (quiet.py says
why); on a GPU the I/O overlaps them.

``BatchPipeline.run`` runs on the caller's thread (the GUI's worker thread, or the CLI's main
thread) and calls ``on_started`` when it takes up a photo and ``on_result`` once per photo, in
input order, both on that thread. The parts: ``DecodeAhead`` (decode_ahead.py) reads photos ahead
of the model, ``Colorizer.infer_photos`` runs the model with its out-of-memory ladder, and
``OrderedWrites`` (ordered_writes.py) writes and reports in input order.

Pause and cancel act between photos: no new photo is taken up once either is asked for. A pause
first finishes the photos already taken up (colorized, written and reported, so none is left
"working"), then holds until resumed. A cancel stops at once: the model call and the writes already
running finish (whole: writes are atomic); every other photo is reported as cancelled, and the
decodes and writes queued for them are cancelled, not run.

Reliability rules: a photo that cannot be read, colorized or written fails alone with a one-line
reason and the batch goes on; the batch stops (the rest reported as cancelled with the reason)
only when nothing more can be written (disk full, read-only output). Memory is bounded: decoded
photos waiting and outputs waiting to be written are limited in number and in pixels, and
full-resolution work goes in strips.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from functools import partial
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from ..colorizer import Colorizer, Inference, Prepared, ab_rows, ab_source, pack, pack_hints
from ..hints import Hint
from ..imageio import MAX_PIXELS
from ..messages import one_line, short_reason
from ..options import BatchSummary, ExportOptions, Job, PhotoResult, Preview, Status
from ..partials import PARTIAL_MARK, clean_partials
from .decode_ahead import DecodeAhead, Decoded, decode_photo
from .diffs import DiffHistogram
from .ordered_writes import OrderedWrites, WriteOutcome, render_from_source, write_photo
from .planning import EXISTS, OutputPlanner
from .quiet import gate_for

__all__ = ["BatchPipeline", "RunControl", "render_from_source"]

log = logging.getLogger(__name__)

POLL_S = 0.1  # how often a wait for a decode looks at pause and cancel from other threads
_Outcome = tuple[PhotoResult, Callable[[], WriteOutcome] | None]  # a photo's result and its write, if any


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
        """Block while paused; returns on resume or cancel."""
        while not self._running.wait(POLL_S):
            pass


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


def io_threads(cores: int | None = None) -> int:
    """Decode (and encode) threads: half the cores, 2 to 8. Two cores keep two each (on the CPU the model runs
    alone anyway, quiet.py); a GPU machine's 16 cores get 8 each, as a GPU at batch 16 eats photos faster than two
    threads decode them.
    """
    return max(2, min(8, (cores or os.cpu_count() or 2) // 2))


def engine_label(colorizer: Colorizer) -> str:
    """What a comparison names: engine, precision (resolved) and batch size, e.g. "optimized bf16, batch 4"."""
    s = colorizer.settings
    return f"{s.engine} {s.precision}, batch {s.batch_size}"


def _unwritable(folder: Path) -> str | None:
    """Why no file can be written in ``folder`` (a read-only disk or folder), or None where one can."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".", suffix=PARTIAL_MARK, dir=folder)  # removed by a clean-up if left
    except OSError as err:
        return f"cannot write in the output folder {folder}: {err.strerror or err}"
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return None


def _result_of(d: Decoded) -> PhotoResult:
    """A photo's result as far as decoding goes: done so far, or failed, or skipped."""
    r = PhotoResult(d.job.index, d.job.path, Status.DONE, decode_ms=d.ms, looks_old=d.looks_old)
    if d.image is not None:
        r.width, r.height = d.image.size
    if d.error is not None:
        r.status, r.message = Status.FAILED, d.error
    elif d.skip is not None:
        r.status, r.message, r.existing = Status.SKIPPED, d.skip, d.out if d.skip == EXISTS else None
    return r


class _Tally:
    """Counts reported results into the summary and decides when nothing more can be written."""

    def __init__(self, summary: BatchSummary, on_result: Callable[[PhotoResult], None] | None) -> None:
        self.summary = summary
        self.on_result = on_result
        self._unwritable = 0  # writes failed in a row for a reason no photo can escape

    def emit(self, result: PhotoResult) -> None:
        if result.status == Status.FAILED:
            log.info("failed: %s: %s", result.source, result.message)
        elif result.message and result.status == Status.DONE:
            log.info("note: %s: %s", result.source, result.message)
        self.summary.add(result)
        if self.on_result is not None:
            self.on_result(result)

    def written(self, result: PhotoResult, outcome: WriteOutcome | None) -> None:
        if outcome is not None:
            result.encode_ms = outcome.ms
            if outcome.error:
                result.status, result.message, result.output = Status.FAILED, outcome.error, None
                self._unwritable = self._unwritable + 1 if outcome.fatal else 0
                # Nothing can be written: the disk is full or read-only, or no photo was written yet.
                if outcome.fatal is not None and self._unwritable >= 2 and (
                        self.summary.done == 0 or outcome.fatal.whole_disk):
                    self.summary.stopped_reason = self.summary.stopped_reason or f"stopped: {outcome.error}"
            else:
                self._unwritable = 0
        self.emit(result)


class BatchPipeline:
    """Colorizes many photos, I/O in threads around the model calls.

    Args:
        colorizer: the engine that colours.
        export: where outputs go.
        compare: a second engine run on the same batches (speed comparison); its outputs
            are not written, only timed and diffed.
        preview_size: when > 0, each result carries a preview at most this large.
        max_pixels: photos whose header claims more pixels are refused before decoding.
        max_buffered_pixels: decoded photos waiting for the model, and colorized photos waiting
            to be written, are held up to about this many pixels each (always at least one).
        hints: colour hints by ``Job.index`` (a hinted model only: ``ValueError`` otherwise). Each
            photo's hint map is made at its working size, again at a smaller one if memory runs out.
        measure_look: whether photos are read for an old print's look (``PhotoResult.looks_old``; those
            ``print_look.looks_due`` names), for the advice to use old-prints; off where the model was chosen by
            look already (each look costs up to ~60 ms a 12 MP scan in the decode threads).
        routed: photos (by ``Job.index``) coloured by another colorizer than ``colorizer`` (auto's folders whose
            look calls for the other model): the same working size, and no ``compare`` (it races one model).

    """

    def __init__(self, colorizer: Colorizer, export: ExportOptions, *, compare: Colorizer | None = None,
                 decode_workers: int | None = None, encode_workers: int | None = None, preview_size: int = 0,
                 max_pixels: int = MAX_PIXELS, max_buffered_pixels: int = 64_000_000,
                 hints: Mapping[int, Sequence[Hint]] | None = None, measure_look: bool = True,
                 routed: Mapping[int, Colorizer] | None = None) -> None:
        self.measure_look = measure_look
        self.hints = {i: tuple(h) for i, h in (hints or {}).items() if h}
        self.routed = dict(routed or {})
        if self.routed and (compare is not None or any(c.settings.size != colorizer.settings.size
                                                       for c in self.routed.values())):
            raise ValueError("photos routed to another model need the same working size, and no comparison")
        for i, h in self.hints.items():  # before any photo is read: these weights take hints
            self.routed.get(i, colorizer).check_hints([h])
        self.colorizer = colorizer
        self.export = export.validated()
        self.compare = compare
        self._gate = gate_for(colorizer.runtime.device.type, comparing=compare is not None)  # quiet.py says why
        self.decode_workers = decode_workers or io_threads()
        self.encode_workers = encode_workers or io_threads()
        self.preview_size = preview_size
        self.max_pixels = max_pixels
        self.max_buffered_pixels = max_buffered_pixels

    def run(self, jobs: Sequence[Job], on_result: Callable[[PhotoResult], None] | None = None,
            control: RunControl | None = None, on_started: Callable[[Job], None] | None = None) -> BatchSummary:
        """Colorize ``jobs``; ``on_started(job)`` when a photo is taken up (never for one cancelled before),
        ``on_result(result)`` once per photo, in input order, after its ``on_started``.
        """
        control = control or RunControl()
        summary = BatchSummary(total=len(jobs), engine=engine_label(self.colorizer),
                               precision=self.colorizer.settings.precision,
                               compare_engine=engine_label(self.compare) if self.compare is not None else None)
        diffs = DiffHistogram()
        tally = _Tally(summary, on_result)
        start = time.perf_counter()
        out_dir = Path(self.export.output_dir)
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            summary.stopped_reason = f"cannot create the output folder {out_dir}: {err.strerror or err}"
        else:  # a read-only folder says so before the first photo, not after two of them failed
            summary.stopped_reason = _unwritable(out_dir)
        if summary.stopped_reason is None:
            clean_partials(out_dir)
        log.info("batch started: %d photos with %s%s, working size %d, to %s (format %s, if an output exists: %s, "
                 "strength %.2f, colour inputs: %s), %d decode and %d encode threads%s", len(jobs), summary.engine,
                 f" vs {summary.compare_engine}" if summary.compare_engine else "", self.colorizer.settings.size,
                 out_dir, self.export.format, self.export.if_exists, self.export.strength, self.export.colour_inputs,
                 self.decode_workers, self.encode_workers, f", colour hints on {len(self.hints)}" if self.hints else "")

        def stopping() -> bool:
            return control.cancelled or summary.stopped_reason is not None

        batch_size = self.colorizer.settings.batch_size
        budget = self.max_buffered_pixels
        self._planner = planner = OutputPlanner(self.export, jobs)  # this run's: results say which it renamed
        start_decode = partial(self._start_decode, planner)
        rest: list[Job] = []
        with DecodeAhead(jobs, start_decode, workers=self.decode_workers, lookahead=max(2 * batch_size, 4),
                         max_pixels=budget) as ahead, \
                ThreadPoolExecutor(self.encode_workers, thread_name_prefix="encode") as encode_pool:
            writes = OrderedWrites(encode_pool, tally.written, max_waiting=2 * batch_size + self.encode_workers,
                                   max_pixels=budget)
            while ahead and not stopping():
                if control.paused:
                    writes.finish()  # the photos taken up are reported before holding: none stays "working"
                    held = time.perf_counter()
                    log.info("paused after %d of %d photos", summary.done + summary.failed + summary.skipped, len(jobs))
                    control.wait_if_paused()
                    summary.paused_s += time.perf_counter() - held
                    log.info("resumed after %.1f s", time.perf_counter() - held)
                    continue
                taken = self._take_batch(ahead, writes, control, summary, on_started)
                if stopping():
                    self._drop(taken, writes, summary.stopped_reason or "cancelled before it was colorized")
                    break
                self._colorize(taken, writes, summary, diffs, stopping)
                ahead.release_taken()
                writes.throttle(stop=stopping)
            if stopping():
                rest = ahead.cancel_rest()  # at once: queued decodes are cancelled, not waited for
                writes.cancel_waiting(summary.stopped_reason or "cancelled before it was written")
            writes.finish()
            for job in rest:
                tally.emit(PhotoResult(job.index, job.path, Status.CANCELLED,
                                       summary.stopped_reason or "cancelled before it started"))
        summary.cancelled = control.cancelled
        summary.p999_abs_diff = diffs.percentile(99.9)
        summary.wall_s = time.perf_counter() - start
        log.info("batch ended (%d queued): %s%s%s", len(jobs), summary.line(),
                 f" ({summary.stopped_reason})" if summary.stopped_reason else "",
                 f"; speed-up over {summary.compare_engine} {summary.compare_speedup:.2f}x"
                 if summary.compare_speedup else "")
        return summary

    def _start_decode(self, planner: OutputPlanner, job: Job) -> Callable[[], Decoded]:
        """Plan ``job``'s output (here, in input order) and return its decode, for a decode thread."""
        try:
            out, skip = planner.plan(job)  # skipped: ``out`` names the output already there, for the result
        except (OSError, ValueError) as err:
            failed = Decoded(job, None, error=f"cannot choose an output name ({one_line(str(err), 120)})")
            return lambda: failed
        return self._gate.wrap(partial(decode_photo, job, out, skip, size=self.colorizer.settings.size,
                                       max_pixels=self.max_pixels, skip_colour=self.export.colour_inputs == "skip",
                                       measure_look=self.measure_look))

    def _take_batch(self, ahead: DecodeAhead, writes: OrderedWrites, control: RunControl, summary: BatchSummary,
                    on_started: Callable[[Job], None] | None) -> list[Decoded]:
        """The photos for the next model call, taken up one by one (with the failed and skipped among them).

        Stops early, between two photos, on pause, cancel or a stop.
        """
        taken: list[Decoded] = []
        n = pixels = 0
        while ahead and n < self.colorizer.settings.batch_size and (not n or pixels < self.max_buffered_pixels // 2):
            if not self._wait_for_next(ahead, writes, control, summary):
                break
            d = ahead.take()
            if on_started is not None:
                on_started(d.job)
            taken.append(d)
            if d.prepared is not None:
                n += 1
                pixels += d.pixels
        return taken

    @staticmethod
    def _wait_for_next(ahead: DecodeAhead, writes: OrderedWrites, control: RunControl, summary: BatchSummary) -> bool:
        """Wait for the next photo's decode, reporting finished writes meanwhile; False on pause, cancel or stop."""
        head = ahead.head()
        while True:
            writes.report_finished()
            if control.paused or control.cancelled or summary.stopped_reason is not None:
                return False
            if head.done():
                return True
            pending: list[Future[Any]] = [head, *writes.unfinished()]
            wait(pending, timeout=POLL_S, return_when=FIRST_COMPLETED)

    @staticmethod
    def _drop(taken: list[Decoded], writes: OrderedWrites, reason: str) -> None:
        """Report photos taken up but not colorized: cancelled (the failed and skipped keep their result)."""
        for d in taken:
            if d.prepared is None:
                writes.add(_result_of(d))
            else:
                writes.add(BatchPipeline._cancelled(d, reason))

    def _colorize(self, taken: list[Decoded], writes: OrderedWrites, summary: BatchSummary,
                  diffs: DiffHistogram, stopping: Callable[[], bool]) -> None:
        """A model call for the photos taken up (one per model they are routed to); each photo's result (and write)
        queued in input order.
        """
        by_model: dict[int, tuple[Colorizer, list[Decoded]]] = {}
        for d in taken:
            if d.prepared is not None:
                c = self.routed.get(d.job.index, self.colorizer)
                by_model.setdefault(id(c), (c, []))[1].append(d)
        outcomes = {d.job.index: outcome for c, batch in by_model.values()
                    for d, outcome in zip(batch, self._infer(c, batch, summary, diffs, stopping), strict=True)}
        for d in taken:
            if d.prepared is None:
                writes.add(_result_of(d))
            else:
                writes.add(*outcomes[d.job.index])

    def _infer(self, c: Colorizer, batch: list[Decoded], summary: BatchSummary, diffs: DiffHistogram,
               stopping: Callable[[], bool]) -> list[_Outcome]:
        """Colorize one batch; each photo's result and its write (None: nothing to write), in batch order."""
        items = [d.prepared for d in batch if d.prepared is not None]
        points = [self.hints.get(d.job.index, ()) for d in batch]
        hints = points if any(points) else None
        inferred: list[Inference] | None = None
        try:
            with self._gate.timed():
                if not stopping():  # a cancel that came while the decodes and writes running beside finished
                    t = time.perf_counter()
                    inferred = c.infer_photos(items) if hints is None else c.infer_photos(items, hints)
                    infer_s = time.perf_counter() - t
        except Exception as err:  # noqa: BLE001 - one bad batch must not end the run
            log.warning("colorization failed", exc_info=True)
            reason = f"colorization failed: {short_reason(err, 160)}"
            return [(self._failed(d, reason), None) for d in batch]
        if inferred is None:
            why = summary.stopped_reason or "cancelled before it was colorized"
            return [(self._cancelled(d, why), None) for d in batch]
        summary.infer_s += infer_s
        compare_ms, photo_diffs = self._compare(items, hints, inferred, summary, diffs)
        if compare_ms is not None:
            summary.compared_infer_s += infer_s
        out: list[_Outcome] = []
        for i, (d, inf) in enumerate(zip(batch, inferred, strict=True)):
            assert d.prepared is not None
            if inf.note:
                log.info("%s: %s", d.job.path.name, inf.note)
            if inf.ab is None:
                out.append((self._failed(d, inf.note), None))
                continue
            source = ab_source(inf.ab, inf.item)
            res = _result_of(d)
            res.in_colour = d.image is not None and d.image.is_colour  # said once at the end, not in each message
            replaced = self._planner.replaced_own.get(d.job.index, "")  # not its own name: where to find it
            note = "; ".join(n for n in (d.image.note if d.image is not None else "", inf.note, replaced) if n)
            res.message, res.output, res.renamed = note, d.out, d.job.index in self._planner.renamed
            res.infer_ms, res.compare_infer_ms = 1000 * infer_s / len(batch), compare_ms
            if photo_diffs is not None:
                res.p999_abs_diff, res.max_abs_diff = photo_diffs[i]
            if self.preview_size > 0:
                res.preview = _preview_from_source(d.prepared, source, self.preview_size)
            out.append((res, self._gate.wrap(partial(write_photo, d, source, self.export))))
        return out

    @staticmethod
    def _cancelled(d: Decoded, reason: str) -> PhotoResult:
        return PhotoResult(d.job.index, d.job.path, Status.CANCELLED, reason)

    @staticmethod
    def _failed(d: Decoded, reason: str) -> PhotoResult:
        r = _result_of(d)
        r.status, r.message = Status.FAILED, reason
        return r

    def _compare(self, items: list[Prepared], hints: Sequence[Sequence[Hint]] | None, inferred: list[Inference],
                 summary: BatchSummary, diffs: DiffHistogram) -> tuple[float | None, list[tuple[float, float]] | None]:
        """The comparison engine on the same batch: (its ms per photo, each photo's (p99.9, max) |ab| difference).

        The differences are taken on each photo's own part of the canvas (not the padding), at the
        model's half size; every one is counted into ``diffs`` for the batch-wide 99.9th percentile.
        """
        ours = [i.ab for i in inferred if i.batched and i.ab is not None]
        if self.compare is None or len(ours) != len(items):
            return None, None  # rescued photo by photo: nothing comparable
        try:
            with self._gate.timed():
                t = time.perf_counter()
                raw = self.compare.infer(pack(items), pack_hints(items, hints))
                # Ours has its hints' corrections spread (infer_photos), inside its time: so must theirs.
                other = [self.compare.spread(theirs, item, hints[k] if hints is not None else ())
                         for k, (item, theirs) in enumerate(zip(items, raw, strict=True))]
                c_s = time.perf_counter() - t
            per_photo = []
            for item, ab, theirs in zip(items, ours, other, strict=True):
                h, w = ((n + 1) // 2 for n in item.small.shape)  # the photo's own part of the half-size canvas
                d = np.abs(theirs[:, :h, :w] - ab[:, :h, :w])
                per_photo.append((float(np.percentile(d, 99.9)), float(d.max())))
                diffs.add(d)
        except Exception:  # noqa: BLE001 - the comparison is a measurement, never a reason to fail a photo
            log.warning("the comparison engine failed", exc_info=True)
            return None, None
        summary.compare_infer_s += c_s
        worst = max(m for _, m in per_photo)
        summary.max_abs_diff = worst if summary.max_abs_diff is None else max(summary.max_abs_diff, worst)
        return 1000 * c_s / len(items), per_photo
