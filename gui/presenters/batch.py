"""The batch's presenter: Start, Run Again, Pause and Cancel; the rows, progress bar, figures and status line
as results arrive; and the offer to run again once settings changed since photos were made.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Slot
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMessageBox, QProgressBar, QWidget

from engine.messages import counted
from engine.options import BatchSummary, ExportOptions, PhotoResult, Status
from engine.print_look import old_print_advice
from gui.model.hint_store import HintStore
from gui.model.models import OLD_PRINTS, display_name
from gui.model.outputs_check import CopiesToAsk, OutputsCheck
from gui.model.queue_model import RUNNABLE, QueueModel
from gui.model.request import BatchRequest, QueuedPhoto
from gui.model.run_keys import changed_text, nothing_to_run_text, out_of_date, run_key
from gui.model.settings import AppSettings
from gui.presenters.batch_controller import BatchController, progress_format
from gui.presenters.preview import PREVIEW_SIZE, PreviewPresenter
from gui.views.charts import SummaryPanel, TimingChart
from gui.views.engine_panel import EnginePanel
from gui.views.export_panel import ExportPanel
from gui.views.queue_table import QueueTable
from gui.views.taken_dialog import ask_about_taken


@dataclass(frozen=True)
class BatchViews:
    """The widgets a batch fills in: the settings it locks, the figures it draws, the progress bar."""

    engine_panel: EnginePanel
    export_panel: ExportPanel
    timing: TimingChart
    summary: SummaryPanel
    progress: QProgressBar


class BatchPresenter(QObject):
    """``settings()`` snapshots the window's settings, ``save()`` writes them out; ``shortcut(name)`` names an
    action's shortcut; ``selected_keys()`` are the queue rows selected.
    """

    def __init__(self, controller: BatchController, queue: QueueModel, table: QueueTable, hint_store: HintStore,
                 viewer: PreviewPresenter, views: BatchViews, settings: Callable[[], AppSettings],
                 save: Callable[[], None], selected_keys: Callable[[], list[int]], say: Callable[[str], None],
                 shortcut: Callable[[str], str], copies_to_ask_about: CopiesToAsk, parent: QWidget) -> None:
        super().__init__(parent)
        self.controller, self.queue, self.table, self.hint_store = controller, queue, table, hint_store
        self.viewer = viewer
        self.views, self.settings, self.save, self.selected_keys = views, settings, save, selected_keys
        self.say, self.shortcut, self._parent = say, shortcut, parent
        self.outputs = OutputsCheck(copies_to_ask_about, self)
        self.taken_box: QMessageBox | None = None  # the question before a run whose outputs exist already
        self.pause_action: QAction | None = None  # set once the window's actions exist
        self.failure_box: QMessageBox | None = None
        self._failed = False
        self.offer = RunAgainOffer(self)
        self._whom = ""  # what the running batch colorizes, as the status line says it ("3 photos")
        self._requeued: list[tuple[int, Status, str]] = []  # Run Again's rows as they were, till its run starts
        c = controller
        c.started.connect(self._on_started)
        c.image_started.connect(self._on_image_started)
        c.image_done.connect(self._on_image_done)
        c.failed.connect(self._on_failed)
        c.finished.connect(self._on_finished)
        c.running_changed.connect(self.lock_panels)
        c.paused_changed.connect(self._on_paused)
        c.tick.connect(self._show_progress)
        views.engine_panel.compare_toggled.connect(self.update_compare_columns)

    def start_batch(self, only: set[int] | None = None, selected: bool = False, if_exists: str = "") -> bool:
        """Snapshot the settings and the runnable rows (of ``only``, the row keys, when given; ``selected``: they
        are the table's selection) into a request, and start the worker. Where at least half of the photos have
        outputs already and Export would write copies, asks first and returns False; ``if_exists``: the answer,
        for this run only.
        """
        if self.controller.running or self.outputs.busy:
            return False
        problem = self.views.export_panel.problem()
        if problem:
            self.say(f"Cannot start: {problem}")
            return False
        photos = self._photos(only)
        if not photos:
            self.say("Nothing to colorize: add photos first" if not self.queue.rows()
                     else nothing_to_run_text(self.shortcut("run_again")))
            return False
        s = self.settings()
        if if_exists:
            s = replace(s, export=replace(s.export, if_exists=if_exists))
        elif (taken := self.outputs.count(photos, s.export, lambda n: self._counted(n, [p.key for p in photos],
                                                                                 s.export, only, selected))) is None:
            self.say(f"Looking for outputs already in {s.export.output_dir}…")  # a large queue, on a thread
            return False
        elif taken:
            self._ask_about_taken(taken, len(photos), s.export.output_dir, only, selected)
            return False
        request = BatchRequest(tuple(photos), s.model, s.export, compare=s.compare, preview_size=PREVIEW_SIZE,
                               model_name=s.model_name, look_paths=tuple(r.path for r in self.queue.rows()))
        for p in photos:  # each photo's run key carries its own hints
            self.queue.begin_run([p.key], run_key(s, p.hints))
        self.views.timing.clear()
        self.views.summary.clear()
        progress = self.views.progress
        progress.setRange(0, len(photos))
        progress.setValue(0)
        progress.setFormat("%v / %m · ETA –")
        self.save()
        self._failed = False
        self.controller.start(request)
        total, self._requeued = len(self.queue.rows()), []
        self._whom = (f"the {counted(len(photos), 'selected photo')} of {total} (with none selected, Run Again takes "
                      "all)" if selected and len(photos) < total else counted(len(photos), "photo"))
        self.say(f"Loading the model for {self._whom}…")
        return True

    def _photos(self, only: set[int] | None) -> list[QueuedPhoto]:
        return [replace(p, hints=self.hint_store.get(p.path)) for p in self.queue.runnable()
                if only is None or p.key in only]

    def _counted(self, taken: int, keys: list[int], export: ExportOptions, only: set[int] | None,
                 selected: bool) -> None:
        if self.settings().export != export or [p.key for p in self._photos(only)] != keys:
            self.start_batch(only, selected)  # Export or the queue changed while counting: count them anew
        elif taken:
            self._ask_about_taken(taken, len(keys), export.output_dir, only, selected)
        else:
            self.start_batch(only, selected, if_exists=export.if_exists)

    def _ask_about_taken(self, taken: int, total: int, folder: Path, only: set[int] | None, selected: bool) -> None:
        def answer(choice: str) -> None:
            self.taken_box = None
            if choice:
                self.start_batch(only, selected, if_exists=choice)
            else:
                self._not_started("the photos' outputs exist already")

        self.taken_box = ask_about_taken(self._parent, taken, total, folder, answer)

    def _not_started(self, why: str) -> None:
        for key, status, message in self._requeued:  # Run Again's photos as they were
            self.queue.set_status([key], status, message=message)
        self._requeued = []
        self.say(f"Not started: {why}")

    def queue_changed(self, *_: object) -> None:
        """Photos added or removed between runs (an Undo of Clear Queue too): the bar and the preview follow."""
        if not self.controller.running:
            show_queue(self.views.progress, self.views.summary, self.queue)
            if self.queue.rowCount() and self.viewer.shown_key is None:  # not "The queue is empty" any more
                self.viewer.queued(f"{counted(self.queue.rowCount(), 'photo')} in the queue: select one to see it.",
                                   offer_action=False)

    def run_again(self) -> bool:
        """Put the selected photos (or all) back in the queue and start: colorize them again."""
        if self.controller.running or self.outputs.busy:
            return False
        selected = self.selected_keys()
        keys = selected or [r.key for r in self.queue.rows()]
        rows = {r.key: r for r in self.queue.rows()}
        self._requeued = [(k, rows[k].status, rows[k].message) for k in keys if k in rows]
        self.queue.requeue(keys)
        return self.start_batch(only=set(keys), selected=bool(selected))  # a failed photo outside waits for Start

    def set_paused(self, paused: bool) -> None:
        (self.controller.pause if paused else self.controller.resume)()

    def cancel_batch(self) -> None:
        if self.outputs.busy:
            self.outputs.drop()
            self._not_started("cancelled while looking for outputs that exist already")
        elif self.controller.running:
            self.controller.cancel()
            self._check_pause(False)
            self.say("Cancelling: finishing the photos in progress…")

    def _check_pause(self, on: bool) -> None:
        if self.pause_action is not None and self.pause_action.isChecked() != on:
            self.pause_action.setChecked(on)

    def lock_panels(self, running: bool) -> None:
        self.views.engine_panel.setEnabled(not running)
        self.views.export_panel.set_locked(running)

    @Slot(int)
    def _on_image_started(self, index: int) -> None:
        """The engine took up this photo: show it as working until its result comes."""
        req = self.controller.request
        if req is not None and 0 <= index < len(req.photos):
            self.queue.set_status([req.photos[index].key], Status.WORKING, only_from=(Status.QUEUED,))

    @Slot(str)
    def _on_started(self, description: str) -> None:
        self.say(f"Colorizing {self._whom} with {description}")
        self.offer.offering = False  # the status line is the run's now: no offer to say again for a selection
        if model := description.partition(" · ")[2]:  # auto's choice, shown while the run goes on
            self.views.summary.show_model(model)

    @Slot(object)
    def _on_image_done(self, r: PhotoResult) -> None:
        req = self.controller.request
        if req is None or not 0 <= r.index < len(req.photos):
            return
        key = req.photos[r.index].key
        self.queue.apply_result(key, r)
        self.viewer.photo_done(key, r)
        self.views.timing.add_result(r)
        p = self.controller.progress
        if p is not None and r.status != Status.CANCELLED:
            self.views.progress.setValue(p.processed)
            self._show_progress()
            if not self.controller.paused:
                what = r.message if r.status != Status.DONE else "done"
                self.say(f"{p.processed} of {p.total}: {r.source.name} {what}")

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self._failed = True
        self.say(f"Could not run the batch: {message}")
        box = QMessageBox(QMessageBox.Icon.Warning, "Colorizer", f"The batch could not run.\n\n{message}",
                          QMessageBox.StandardButton.Ok, self._parent)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()  # not exec(): the window (and tests) keep running
        self.failure_box = box

    @Slot(object)
    def _on_finished(self, summary: BatchSummary) -> None:
        req = self.controller.request
        if req is not None:
            self.queue.set_status((p.key for p in req.photos), Status.QUEUED, only_from=(Status.WORKING,))
        self._check_pause(False)
        self.views.summary.show_summary(summary)
        advice = None
        if summary.chosen_model:  # auto: "Old prints, chosen by the photos' look: ..." ("Auto, ... folder by folder")
            self.views.summary.show_model(summary.model_choice if summary.done else "– (no photo colorized)")
        elif req is not None:
            advice = old_print_advice(summary.looks_old, summary.looked, req.model_name == OLD_PRINTS, OLD_PRINTS)
            model = f"{display_name(req.model_name)} (chosen in the Engine panel)"
            self.views.summary.show_model(
                f"{model}. {summary.looks_old} of {summary.looked} photos looked at seem to be scans of old prints: "
                "\"Old prints\" may colour them better" if advice else model)
        self.views.progress.setFormat("%v / %m · " + ("cancelled" if summary.cancelled else
                                                      "stopped" if summary.stopped_reason else "done"))
        self.update_compare_columns()
        if self._failed:
            return  # _on_failed already said why
        if not summary.done:  # the preview's "N photos queued. Press Start" would be stale
            self.viewer.queued("Cancelled before any photo was colorized." if summary.cancelled else
                               "No photo was colorized: each row's Message says why. Select a photo to see it.",
                               offer_action=False)
        export = req.export if req is not None else self.views.export_panel.choice()
        # and what Run Again would still redo: a run of a selection leaves the other changed photos as they were
        self.offer.update(lead=finished_text(summary, note_made_by(self.queue, summary, req), export, bool(advice)))

    @Slot(bool)
    def _on_paused(self, paused: bool) -> None:
        if (action := self.pause_action) is not None:  # its text and tips say what a click does now
            action.setText("&Resume" if paused else "&Pause")
            action.setStatusTip(tip := "Go on colorizing" if paused else "Pause after the photos in progress")
            action.setToolTip(f"{tip} ({self.shortcut('pause')})")
        self._check_pause(paused)
        self.say("Paused: the photos in progress finish, then it waits. Resume with "
                 f"{self.shortcut('pause')}" if paused else "Resumed")
        self._show_progress()

    @Slot()
    def _show_progress(self) -> None:
        """The count and the ETA (counting down, not while paused) on the progress bar."""
        if self.controller.running and (p := self.controller.progress) is not None:
            self.views.progress.setFormat(progress_format(p))
            self.views.summary.show_running(p.processed, p.total)

    def update_compare_columns(self, *_: object) -> None:
        self.table.show_compare_columns(self.views.engine_panel.comparing() or self.queue.has_comparison())


class RunAgainOffer:
    """The status bar's offer of Run Again once settings or hints changed since done photos were made; it follows
    the selection, since Run Again takes the selected photos: a hint placed on one photo, then another selected,
    must not read as if Run Again would redo the first.
    """

    def __init__(self, batch: BatchPresenter) -> None:
        self.batch = batch
        self.offering = False

    def update(self, stale: list[int] | None = None, lead: str = "") -> None:
        """Settings or hints changed: where done photos were made with others (``stale``, worked out here unless
        given), say what Run Again redoes; after ``lead``, the change just made, where one is to be said too.
        """
        b = self.batch
        if b.controller.running:
            if lead:  # the change reaches the next run; a photo selected after this one ends offers Run Again
                b.say(f"{lead} The batch running goes on as it began; Run Again ({b.shortcut('run_again')}) after "
                      "it redoes its photos.")
                self.offering = True
            return
        stale = stale_keys(b.queue, b.settings(), b.hint_store) if stale is None else stale
        if stale:
            selected = set(b.selected_keys())
            b.say(" ".join(filter(None, [lead, changed_text(len(stale), b.shortcut("run_again"), len(selected),
                                                             len(selected.intersection(stale)), b.queue.rowCount())])))
        elif lead or self.offering:  # changed back (a hint added, then removed): the offer no longer holds
            b.say(lead or "The colorized photos are up to date with these settings")
        self.offering = bool(stale)

    def selection_changed(self) -> None:
        """Run Again takes the selection: an offer on show is said again for it (and nothing once none holds)."""
        stale = stale_keys(self.batch.queue, self.batch.settings(), self.batch.hint_store) if self.offering else []
        if stale:
            self.update(stale)
        else:
            self.offering = False


def show_queue(progress: QProgressBar, summary: SummaryPanel, queue: QueueModel) -> None:
    """Between runs: the photos left to run, or where none is left the queue's "N / N · done", or idle (and no
    figures in the summary: its photos are no longer queued).
    """
    if not queue.rowCount():
        summary.clear()
    counts = queue.counts()
    runnable, rows = sum(counts[s] for s in RUNNABLE), queue.rowCount()
    progress.setRange(0, max(1, runnable or rows))
    progress.setValue(0 if runnable else rows)
    progress.setFormat(f"{counted(runnable, 'photo')} to run" if runnable else "%v / %m · done" if rows else "idle")


def finished_text(summary: BatchSummary, before: list[tuple[str, str]], export: ExportOptions, advice: bool) -> str:
    """The status line after a run; ``before``: (model before, model now) of each photo whose model changed."""
    text = summary.line()
    if summary.chosen_model and before:  # Auto chose anew for a queue that grew: say it, the colours changed
        moved = "; ".join(f"{counted(before.count(c), 'photo')} made before by {display_name(c[0])} came from "
                          f"{display_name(c[1])}" for c in dict.fromkeys(before))
        text += (f"; {moved} this time, Auto judging the look of the queue's folders (a model chosen in the "
                 "Engine panel keeps one)")
    if summary.stopped_reason:
        text += f" ({summary.stopped_reason})"
    if summary.done:
        text += f" → {export.output_dir}"
    if summary.renamed and export.if_exists == "new_name":
        text += " (as 'photo (1)', their own names being taken: Export's \"If it exists\" can replace or skip instead)"
    elif summary.renamed:  # Replace or Skip could not help: another photo of the run, or an input, had the name
        text += " (as 'photo (1)': another photo of the run or an input had the name; its row says which)"
    return f"{text}. Most look like old prints: try \"Old prints\" (Engine panel)" if advice else text


def note_made_by(queue: QueueModel, summary: BatchSummary, req: BatchRequest | None) -> list[tuple[str, str]]:
    """Each row's model, as the batch chose it for the photo's folder; (before, now) where it changed."""
    if req is None:
        return []
    main = summary.chosen_model or req.model_name
    by_model: dict[str, list[int]] = {}
    for p in req.photos:  # a comparison ran one model for every photo
        by_model.setdefault(main if req.compare else summary.folder_models.get(p.path.parent, main), []).append(p.key)
    return [(was, model) for model, keys in by_model.items() for was in queue.note_made_by(keys, model)]


def stale_keys(queue: QueueModel, settings: AppSettings, hints: HintStore) -> list[int]:
    """The done photos made with other settings or hints than these; a photo skipped for its output, given hints."""
    return [r.key for r in queue.rows()
            if r.status == Status.DONE and out_of_date(r.run_key, run_key(settings, hints.get(r.path)))
            or r.status == Status.SKIPPED and r.existing is not None and hints.get(r.path)]
