"""The one bridge between the GUI and the engine: the only gui module that imports the torch-backed
engine modules (it never imports torch itself; the import-linter contracts check both).

``BatchWorker`` is a QObject moved to a QThread by ``gui.presenters.batch_controller.BatchController``; it turns a
``BatchRequest`` into engine objects on the worker thread, runs ``BatchPipeline`` there and
reports through signals. ``Recolourer`` re-colours the preview on its own thread as colour hints
change. ``Backend`` bundles what the window needs from the engine, so the
window is built with one injected object and tests can inject an untrained model.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QObject, Signal, Slot

from engine.batch.inputs import collect_inputs, output_folder_inside
from engine.batch.model_choice import (
    BatchLook,
    FolderLooks,
    chosen,
    look_by_folder,
    look_of_batch,
    look_of_lightness,
    photos_in,
    weights_of,
)
from engine.batch.pipeline import BatchPipeline, RunControl, engine_label
from engine.batch.planning import copies_to_ask_about
from engine.color import grey_rgb
from engine.colorizer import Colorizer, Prepared, reprepare
from engine.devices import device_options, resolve_device
from engine.hints import Hint
from engine.messages import counted
from engine.options import ENGINES, BatchSummary, ColorizeSettings, ExportOptions, Job
from engine.runtimes.openvino_runtime import openvino_missing
from engine.weights import WeightsError, weights_meta
from gui.bridge import models
from gui.bridge.sampler import UtilizationSampler
from gui.model.hint_store import NO_HINTS_TEXT
from gui.model.models import ModelInfo, display_name
from gui.model.newest_only import NewestOnly
from gui.model.request import BatchRequest, QueuedPhoto

log = logging.getLogger(__name__)

ColorizerFactory = Callable[[ColorizeSettings], Colorizer]


class CachedFactory:
    """Builds colorizers with ``make`` and keeps the last few, so a second batch with the same
    settings does not load the weights again. Called on worker threads, one batch at a time.
    """

    def __init__(self, make: ColorizerFactory, keep: int = 2) -> None:
        self._make = make
        self._keep = keep
        self._cache: dict[tuple[ColorizeSettings, tuple[int, int] | None], Colorizer] = {}
        self._lock = threading.Lock()

    def __call__(self, settings: ColorizeSettings) -> Colorizer:
        key = (settings, _stamp(settings.weights))  # a model taught again under its name is loaded again
        with self._lock:
            if key not in self._cache:
                while len(self._cache) >= self._keep:
                    self._cache.pop(next(iter(self._cache)))
                self._cache[key] = self._make(settings)
            return self._cache[key]

    def release_buffers(self) -> None:
        """Between batches: the kept colorizers give back their buffers (a 512 px batch left 1.2 GB resident, 0.54 GB
        after this; the next batch ran as fast), keeping what is slow to make again.
        """
        with self._lock:
            for colorizer in self._cache.values():
                colorizer.release_buffers()


def _stamp(path: Path | None) -> tuple[int, int] | None:
    """When a weights file was written and its size: what tells a replaced file from the one loaded before."""
    try:
        st = path.stat() if path is not None else None
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size) if st is not None else None


class BatchWorker(QObject):
    """Runs one ``BatchRequest``. ``run`` executes on the worker thread; ``pause``, ``resume`` and
    ``cancel`` may be called from any thread (they only flip the thread-safe ``RunControl``).

    Signals (always in this order): ``started`` once the engines are built, ``image_started`` when the
    engine takes up a photo and ``image_done`` once per photo (both in input order; a photo cancelled
    before it started gets only ``image_done``), ``failed`` only when the batch could not run at all,
    ``finished`` last.
    """

    started = Signal(str)  # engine description, e.g. "optimized fp32 on cpu" (compare mode: both engines); " · " and
    # auto's choice after it, when the model was chosen by look
    image_started = Signal(int)  # the photo's position in request.photos
    image_done = Signal(object)  # engine.options.PhotoResult; .index is the position in request.photos
    failed = Signal(str)  # one line: weights missing, bad settings, ...
    finished = Signal(object)  # engine.options.BatchSummary

    def __init__(self, request: BatchRequest, factory: ColorizerFactory) -> None:
        super().__init__()
        self.request = request
        self._factory = factory
        self.control = RunControl()

    @Slot()
    def run(self) -> None:
        req = self.request
        summary = BatchSummary(total=len(req.photos))
        try:
            settings = req.model.validated()
            export = req.export.validated()
            looks = None
            if settings.by_look:  # the queue's look, so that running a few of its photos again keeps its models
                looks = look_by_folder(req.look_paths or [p.path for p in req.photos],
                                       stop=lambda: self.control.cancelled)
                if self.control.cancelled:  # during the look: no model to load, nothing chosen
                    summary.cancelled = True
                    return
            choice = _Choice(looks, req)
            others = {m: self._factory(chosen(settings, m)) for m in choice.others}
            settings = chosen(settings, choice.main) if looks is not None else settings
            routed = {i: others[m] for i, m in choice.routes.items()}
            colorizer = self._factory(settings)
            compare = (self._factory(replace(settings, engine="baseline", precision="fp32",
                                             device=colorizer.settings.device))  # the same device as the engine
                       if req.compare else None)
            description = colorizer.description
            if compare is not None:  # what is compared with what: "optimized bf16, batch 4 vs baseline fp32, ..."
                description = (f"{engine_label(colorizer)} vs {engine_label(compare)} "
                               f"on {colorizer.settings.device}")
            jobs = jobs_of(req.photos)
            hints = {i: p.hints for i, p in enumerate(req.photos) if p.hints}
            if hints and not colorizer.takes_hints:  # inert with these weights: say so, colorize without them
                description += f" (colour hints not used: {NO_HINTS_TEXT})"
                hints = {}
            elif hints:
                description += f" with colour hints on {counted(len(hints), 'photo')}"
            if choice.text:
                description += f" · {choice.text}"
            self.started.emit(description)
            pipeline = BatchPipeline(colorizer, export, compare=compare, preview_size=req.preview_size,
                                     hints=hints, measure_look=not choice.text, routed=routed)
            summary = pipeline.run(jobs, on_result=self.image_done.emit, control=self.control,
                                   on_started=lambda job: self.image_started.emit(job.index))
            if choice.text:
                summary.chosen_model, summary.chosen_weights = choice.main, weights_of(choice.main)
                summary.model_choice, summary.folder_models = choice.text, choice.folder_models
        except Exception as err:  # noqa: BLE001 - anything escaping here would leave the UI waiting forever
            log.exception("the batch could not run")
            message = str(err) or type(err).__name__
            summary.stopped_reason = message
            self.failed.emit(message)
        finally:
            if isinstance(self._factory, CachedFactory):  # before "finished": the next batch may use them then
                try:
                    self._factory.release_buffers()
                except Exception:  # noqa: BLE001 - memory kept is no reason to leave the window waiting
                    log.exception("giving back the batch's buffers failed")
            self.finished.emit(summary)

    def pause(self) -> None:
        self.control.pause()

    def resume(self) -> None:
        self.control.resume()

    def cancel(self) -> None:
        self.control.cancel()

    @property
    def paused(self) -> bool:
        return self.control.paused


class Recolourer(NewestOnly):
    """The preview's model work as hints change, on its own QThread (never the UI thread).

    Only the newest pending re-colour and the newest pending suggestion are kept (suggestions run first:
    the user waits on the popup), so edits that arrive while the model runs, or requests for photos no
    longer on show, coalesce into one run after it. The model runs on the preview-size L at the smaller of
    the working size and the preview's size (a working size never upscales; full resolution is only joined
    at export), never compiled (a first click must not wait for ``torch.compile``). Replies:
    ``recoloured(key, hints, settings, ab)`` (ab at the preview's size; settings as requested),
    ``suggestions(key, x, y, colours)`` for a click, ``refused(key, reason)`` when the model cannot
    (weights without hint inputs: ``NO_HINTS_TEXT``).
    """

    recoloured = Signal(int, object, object, object)  # key, tuple[Hint, ...], ColorizeSettings, ab (h x w x 2)
    suggestions = Signal(int, float, float, object)  # key, x, y, [(r, g, b), ...] most likely first
    refused = Signal(int, str)  # key, why
    doubted = Signal(int, object, object, object)  # key, tuple[Hint, ...], ColorizeSettings, doubt (h x w, 0..1)
    PRIORITY = ("suggest", "colour", "doubt", "warm")  # the user waits on the popup first, then on the colour

    def __init__(self, make: ColorizerFactory) -> None:
        super().__init__("recolour")
        self._factory = CachedFactory(make, keep=2)  # "auto" moves between two models
        self._auto: tuple[Path | None, dict[Path, Path | None]] | None = None  # "auto": the last batch's choice

    def follow(self, weights: Path | None, folders: dict[Path, str] | None = None) -> None:
        """"auto" previews use the model a batch chose for the photo's folder (``BatchSummary.folder_models``, the
        queue's folders); a folder it did not see, as before any batch, its own look; any thread.
        """
        self._auto = (weights, {f: weights_of(m) for f, m in (folders or {}).items()})

    def request(self, key: int, L: np.ndarray, hints: tuple[Hint, ...], settings: ColorizeSettings,
                source: Path | None = None) -> None:
        """Re-colour photo ``key`` (L: its preview-size lightness; ``source``: its file, whose tone "auto" reads
        before any batch) with ``hints``; replaces any pending request.
        """
        self._post("colour", key, (L, source, tuple(hints), settings))

    def suggest(self, key: int, L: np.ndarray, x: float, y: float, hints: tuple[Hint, ...],
                settings: ColorizeSettings, source: Path | None = None) -> None:
        """The model's most likely colours at (x, y) of photo ``key``, as ``suggestions``."""
        self._post("suggest", key, (L, source, x, y, tuple(hints), settings))

    def doubt(self, key: int, L: np.ndarray, hints: tuple[Hint, ...], settings: ColorizeSettings,
              source: Path | None = None) -> None:
        """Where the model is unsure of photo ``key``'s colour with ``hints``, as ``doubted`` (at L's size)."""
        self._post("doubt", key, (L, source, tuple(hints), settings))

    @staticmethod
    def _look(source: Path | None, L: np.ndarray) -> BatchLook:
        """A photo as a run of its folder would judge it, before any run: the folder's photos read as a run reads
        them (a tone is seen in the files, not in L); the photo's lightness where none can be read.
        """
        look = _folder_look(source.parent) if source is not None else None
        return look if look is not None and look.sampled else look_of_lightness(L)

    def warm(self, settings: ColorizeSettings) -> None:
        """Load the model for ``settings`` now, before the first click waits for it (a photo came on show)."""
        self._post("warm", -1, (settings,))

    def _failed(self, kind: str, key: int, err: Exception) -> None:
        log.error("the preview's model run (%s) failed", kind, exc_info=err)
        self.refused.emit(key, str(err) or type(err).__name__)

    def _serve(self, kind: str, key: int, args: tuple[Any, ...]) -> None:
        asked: ColorizeSettings = args[-1]  # what the answer is for: the presenter matches it, "auto" or not
        settings = asked
        if settings.by_look:
            auto, source = self._auto, args[1] if kind != "warm" else None
            if auto is not None and (source is None or source.parent in auto[1] or not auto[1]):
                weights = auto[1].get(source.parent, auto[0]) if source is not None else auto[0]
                settings = replace(settings, by_look=False, weights=weights)  # the model a batch chose for it
            else:  # before any batch, or a folder queued since: as a run of its folder would choose
                settings = chosen(settings, self._look(source, args[0]) if kind != "warm" else BatchLook(0, 0))
        colorizer = self._factory(replace(settings, compile=False).validated())
        if kind == "warm":
            return
        hints: tuple[Hint, ...] = args[-2]
        if kind == "doubt":  # a model without hint inputs has its doubt too
            L = np.ascontiguousarray(args[0], np.float32)
            self.doubted.emit(key, hints, asked, colorizer.doubt(grey_rgb(L), hints if colorizer.takes_hints else ()))
            return
        if not colorizer.takes_hints:
            self.refused.emit(key, NO_HINTS_TEXT)
            return
        L = np.ascontiguousarray(args[0], np.float32)
        if kind == "colour":
            item = reprepare(Prepared(L, L), colorizer.settings.size)
            ab = colorizer.predict([item], [hints] if hints else None)[0]
            self.recoloured.emit(key, hints, asked, ab)
        else:
            grey = grey_rgb(L)  # the grey whose lightness is L: suggest reads only L
            x, y = args[2], args[3]
            self.suggestions.emit(key, x, y, colorizer.suggest(grey, x, y, k=4, hints=hints))


class _Choice:
    """Auto's choice for one run, from the queue's ``looks`` (None: a model chosen by name): the run's ``main`` model,
    the ``others`` it routes photos to (``routes``: by request index), ``folder_models`` (every queue folder's model,
    for the previews and the rows) and ``text``, the Model row ("" where nothing was chosen by look). A comparison
    races one model: ``main`` for every photo.
    """

    def __init__(self, looks: FolderLooks | None, req: BatchRequest) -> None:
        self.main, self.others, self.text = "", set[str](), ""
        self.routes: dict[int, str] = {}
        self.folder_models: dict[Path, str] = {}
        if looks is None or not looks.overall.sampled:  # nothing readable: the shipped model, and the advice stays
            self.main = looks.main_model if looks is not None else ""
            return
        run = looks.for_photos([p.path for p in req.photos])
        self.main = run.main_model
        self.folder_models = {f: m for m, fs in looks.models.items() for f in fs}
        if req.compare and run.mixed:
            self.text = run.one_model_text(self.main, "a comparison runs one model", display_name)
            return
        self.text = f"{'Auto' if run.mixed else display_name(self.main)}, {run.why(display_name)}"
        self.routes = looks.routes([p.path for p in req.photos], self.main)
        self.others = set(self.routes.values())


PREVIEW_SAMPLE = 8  # a folder's photos a preview's look reads: a run reads 24, but a first hint must not wait 5 s


@lru_cache(maxsize=64)
def _folder_look(folder: Path) -> BatchLook:
    """A folder's look (up to ``PREVIEW_SAMPLE`` of its photos, evenly spread), read once while among the last 64
    asked for (previews ask again on every hint; the first hint in a folder of 12 MP scans waits about 1.7 s).
    """
    return look_of_batch(photos_in(folder), PREVIEW_SAMPLE)


def available_options() -> dict[str, Any]:
    """What this machine can run, with the reason for each option it cannot (tooltips).

    ``{"devices": {name: reason|None}, "auto_device": "cpu"|"cuda",
       "precisions": {"cpu"|"cuda": {name: reason|None}}, "engines": {name: reason|None}}``
    """
    auto = resolve_device("auto").type  # CUDA exactly when a usable GPU is present
    devices: dict[str, str | None] = {"auto": None, "cpu": None,
                                      "cuda": None if auto == "cuda" else "no usable CUDA GPU on this machine"}
    precisions = {name: {"auto": None, **support} for name, support in device_options().items()
                  if devices.get(name) is None}
    engines = {name: openvino_missing() if name == "openvino" else None for name in ENGINES}
    return {"devices": devices, "auto_device": auto, "precisions": precisions, "engines": engines}


def model_card(path: Path | None = None) -> tuple[dict[str, Any] | None, str | None]:
    """(card, None) for the installed weights, or (None, why not) when there are none or they are damaged."""
    try:
        meta = weights_meta(path)
    except WeightsError as err:
        return None, str(err)
    raw = meta.get("card")
    if not raw:
        return None, "the weights file carries no model card"
    try:
        return json.loads(raw), None
    except (TypeError, ValueError) as err:
        return None, f"the model card is not readable: {err}"


def jobs_of(photos: Sequence[QueuedPhoto]) -> list[Job]:
    """The engine's jobs for queued photos, in their order (the run's indices), with their queue places."""
    return [Job(i, p.path, p.root, p.replaces, p.number) for i, p in enumerate(photos)]


def collect(paths: Iterable[Path], beside: Iterable[tuple[Path, Path]] = (), leave_out: Path | None = None
            ) -> tuple[list[tuple[Path, Path]], list[str]]:
    """Files and folders (walked recursively, non-images ignored) -> [(photo, root folder)], problems.

    A folder's photos keep its own name in their output paths: folders queued one at a time must not mix, nor
    one of the name of a folder queued before (``beside``: the queue's (photo, root) pairs). ``leave_out``: the
    output folder, whose photos are never queued from a folder that holds it.
    """
    jobs, problems = collect_inputs([Path(p) for p in paths], keep_folder_names=True, beside=beside,
                                    leave_out=leave_out)
    return [(j.path, j.root) for j in jobs], problems


class Backend:
    """Everything the window needs from the engine, injected by ``gui.app``."""

    def __init__(self, factory: ColorizerFactory | None = None, weights: Path | None = None) -> None:
        self._make: ColorizerFactory = factory or Colorizer.create
        self.factory: ColorizerFactory = CachedFactory(self._make)
        self.weights = weights

    def make_recolourer(self) -> Recolourer:
        """The preview's hint service: its own colorizer (never shared with a running batch's thread)."""
        return Recolourer(self._make)

    def make_worker(self, request: BatchRequest) -> BatchWorker:
        return BatchWorker(request, self.factory)

    def make_sampler(self, device: str, parent: QObject | None = None) -> UtilizationSampler:
        return UtilizationSampler(device, parent=parent)

    def collect(self, paths: Iterable[Path], beside: Iterable[tuple[Path, Path]] = (), leave_out: Path | None = None
                ) -> tuple[list[tuple[Path, Path]], list[str]]:
        return collect(paths, beside, leave_out)

    def output_folder_inside(self, paths: Iterable[Path], output_dir: Path) -> Path | None:
        return output_folder_inside(paths, output_dir, keep_folder_names=True)  # the window keeps folders' names

    def copies_to_ask_about(self, photos: Sequence[QueuedPhoto], export: ExportOptions,
                            stop: Callable[[], bool] = lambda: False) -> int:
        return copies_to_ask_about(export, jobs_of(photos), stop)

    def available_options(self) -> dict[str, Any]:
        return available_options()

    def model_card(self) -> tuple[dict[str, Any] | None, str | None]:
        return model_card(self.weights)

    def models(self) -> list[ModelInfo]:
        return models.list_models()

    def model_name_problem(self, name: str) -> str | None:
        return models.name_problem(name)

    def model_taken(self, name: str) -> bool:
        return models.model_taken(name)

    def delete_model(self, name: str) -> str | None:
        return models.delete_model(name)

    def remove_tune_work(self, name: str) -> None:
        models.remove_tune_work(name)
