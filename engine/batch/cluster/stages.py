"""The row stages of a cluster round: decode in CPU tasks, colorize in a pool of actors, render and write in CPU tasks.

Each stage is the local run's own code (``decode_photo``, ``Colorizer.infer_photos``, ``write_photo``),
so a photo fails with the same reasons and is written by the same atomic writer. Ray pickles these
functions and the actor class by module path: they stay top-level here.
"""

from __future__ import annotations

import logging
import pickle
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ...color import lightness
from ...colorizer import Colorizer, Prepared, ab_source
from ...hints import Hint
from ...imageio import DecodedImage, ImageError
from ...messages import short_reason
from ...options import ColorizeSettings, ExportOptions, Job, Status
from ..decode_ahead import Decoded, decode_photo
from ..ordered_writes import write_photo
from .storage import fetch, put

log = logging.getLogger(__package__)  # records under the cluster run's one name, engine.batch.cluster


@dataclass
class Work:
    """One photo as it goes through the stages; rows carry it pickled (numpy arrays of any shape)."""

    index: int
    src: str
    src_fs: int
    out: str
    status: Status = Status.WORKING  # until it is written, fails or is skipped
    message: str = ""
    image: DecodedImage | None = None
    small: np.ndarray | None = None  # the working-size L; after colorizing, the one the model was given
    ab: np.ndarray | None = None  # the model's half-size ab for ``small``
    width: int = 0
    height: int = 0
    decode_ms: float = 0.0
    infer_ms: float = 0.0
    encode_ms: float = 0.0
    engine: str = ""
    looks_old: bool | None = None  # read as an old print's scan by the decode stage (advice only; None: not looked at)
    in_colour: bool = False  # the input was in colour: colorized from its lightness
    hints: tuple[Hint, ...] = ()  # the photo's colour hints travel with it, as relative points and colours
    weights: str | None = None  # another model than the pool's, for this photo (auto's folder by folder choice)

    def fail(self, message: str, status: Status = Status.FAILED) -> None:
        self.status, self.message, self.image, self.small, self.ab = status, message, None, None, None


@dataclass(frozen=True)
class StageContext:
    """What every task needs besides its rows (pickled once per stage)."""

    size: int
    export: ExportOptions
    filesystems: tuple[Any, ...]
    out_fs: int
    measure_look: bool = True  # ``BatchPipeline``'s: photos read for the old-prints advice


def _decode_work(w: Work, ctx: StageContext) -> None:
    """Read and prepare one photo with the local run's own ``decode_photo``: the same reasons on failure."""
    t = time.perf_counter()
    job = Job(w.index, Path(w.src), Path(w.src).parent)
    skip_colour = ctx.export.colour_inputs == "skip"
    if w.src_fs < 0:
        d = decode_photo(job, None, "", size=ctx.size, skip_colour=skip_colour, measure_look=ctx.measure_look)
    else:
        with tempfile.TemporaryDirectory(prefix="colorizer-in-") as folder:
            try:
                local = fetch(ctx.filesystems[w.src_fs], w.src, folder)
            except ImageError as err:
                d = Decoded(job, None, error=str(err))
            else:
                d = decode_photo(replace(job, path=local), None, "", size=ctx.size, skip_colour=skip_colour,
                                 measure_look=ctx.measure_look)
    if d.image is not None:
        w.width, w.height = d.image.size
    if d.error is not None:
        w.fail(d.error)
    elif d.skip is not None:
        w.fail(d.skip, Status.SKIPPED)
    else:
        assert d.prepared is not None and d.image is not None
        w.image, w.small = d.image, d.prepared.small  # the full-size L is made again by the writer, not shipped
        w.looks_old = d.looks_old
        w.in_colour = d.image.is_colour
    w.decode_ms = 1000 * (time.perf_counter() - t)


def _write_work(w: Work, ctx: StageContext) -> None:
    """Render and write with the local run's ``write_photo``: strips, atomic rename, the same reasons."""
    assert w.image is not None and w.ab is not None and w.small is not None
    t = time.perf_counter()
    item = Prepared(lightness(w.image.pixels), w.small)
    source = ab_source(w.ab, item)
    job = Job(w.index, Path(w.src), Path(w.src).parent)
    if ctx.out_fs < 0:
        outcome = write_photo(Decoded(job, Path(w.out), w.image, item), source, ctx.export)
    else:
        with tempfile.TemporaryDirectory(prefix="colorizer-out-") as folder:
            local = Path(folder) / f"out{Path(w.out).suffix}"
            outcome = write_photo(Decoded(job, local, w.image, item), source, ctx.export)
            if outcome.error is None:
                try:
                    put(ctx.filesystems[ctx.out_fs], local, w.out)
                except ImageError as err:
                    outcome = replace(outcome, error=str(err))
    if outcome.error is not None:
        w.fail(outcome.error)
    else:
        w.status, w.image, w.small, w.ab = Status.DONE, None, None, None
    w.encode_ms = 1000 * (time.perf_counter() - t)


def _rows(batch: dict[str, Any]) -> list[Work]:
    return [pickle.loads(b) for b in batch["work"]]


def _batch(works: list[Work]) -> dict[str, Any]:
    blobs = np.empty(len(works), dtype=object)
    blobs[:] = [pickle.dumps(w, protocol=5) for w in works]
    return {"index": np.array([w.index for w in works], dtype=np.int64), "work": blobs}


def decode_batch(batch: dict[str, Any], ctx: StageContext) -> dict[str, Any]:
    works = _rows(batch)
    for w in works:
        _decode_work(w, ctx)
    return _batch(works)


def write_batch(batch: dict[str, Any], ctx: StageContext) -> dict[str, Any]:
    works = _rows(batch)
    for w in works:
        if w.status == Status.WORKING:
            _write_work(w, ctx)
    return _batch(works)


class ColorizeActor:
    """One colorizer in the pool: loads the weights once, then colorizes batch after batch with
    ``Colorizer.infer_photos`` (its out-of-memory ladder and notes, as in a local run).

    The full-size L is not shipped to the actor: the working-size L stands in for it, which is all
    the model reads (the ladder's smaller working size is made from it). Each photo goes on with the
    working-size L the model was given, so the writer crops the ab at that size.
    ``hook`` (tests) is called with each photo's source before it is colorized. A photo that names other
    ``Work.weights`` is colorized by a second colorizer, loaded when the first such photo comes.
    """

    def __init__(self, settings: ColorizeSettings, threads: int, hook: Callable[[str], None] | None = None) -> None:
        import torch

        torch.set_num_threads(threads)
        self.settings = settings
        self.colorizer = Colorizer.create(settings)
        self.others: dict[str, Colorizer] = {}
        self.hook = hook

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        works = _rows(batch)
        ready = [w for w in works if w.status == Status.WORKING]
        if self.hook is not None:
            for w in ready:
                self.hook(w.src)
        for weights in dict.fromkeys(w.weights for w in ready):  # a model call per model
            self._colorize([w for w in ready if w.weights == weights], weights)
        return _batch(works)

    def _colorize(self, ready: list[Work], weights: str | None) -> None:
        t = time.perf_counter()
        items = [Prepared(w.small, w.small) for w in ready if w.small is not None]
        hints = [w.hints for w in ready] if any(w.hints for w in ready) else None
        try:
            if weights is not None and weights not in self.others:
                self.others[weights] = Colorizer.create(replace(self.settings, weights=Path(weights)))
            colorizer = self.colorizer if weights is None else self.others[weights]
            inferred = colorizer.infer_photos(items, hints)
        except Exception as err:  # noqa: BLE001 - one bad batch must not end the run
            log.debug("colorization failed", exc_info=True)
            for w in ready:
                w.fail(f"colorization failed: {short_reason(err, 160)}")
            return
        ms = 1000 * (time.perf_counter() - t) / len(ready)
        for w, inf in zip(ready, inferred, strict=True):
            if inf.note:
                log.info("%s: %s", Path(w.src).name, inf.note)
            if inf.ab is None:
                w.fail(inf.note)
                continue
            w.ab, w.small, w.message = inf.ab, inf.item.small, inf.note
            w.infer_ms, w.engine = ms, self.colorizer.description
