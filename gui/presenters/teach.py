"""Model > Teach from Colour Photos…: the teach dialog's logic.

The training runs in another process (``main.py tune ... --progress-json``, by ``gui.model.tune_process``): the
window only reads the lines it prints, so it stays responsive, and Cancel ends that process (terminate, then kill
after two seconds) and removes what it wrote (``NAME.work``; the model is saved only at the very end). Everything
here runs on the UI thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QSettings, Slot
from PySide6.QtWidgets import QFileDialog, QWidget

from engine.messages import counted
from gui.model.models import AUTO, SHIPPED, display_name
from gui.model.settings import TeachChoices, load_teach, save_teach
from gui.model.teach import (
    PhotoCounter,
    base_argument,
    count_text,
    estimate_text,
    photos_problem,
    start_models,
    start_words,
    step_text,
    verdict_text,
)
from gui.model.tune_process import TuneProcess, tune_arguments
from gui.presenters.backend import Backend
from gui.views.teach_dialog import TeachDialog

log = logging.getLogger(__name__)


class TeachPresenter(QObject):
    """``models_changed(name)`` after a teach: the Engine panel lists the models again and chooses ``name`` (None:
    the choice stays). ``extra_args`` go to ``tune`` after the rest (tests: ``("--batch", "2", "--crop", "64")``).
    The folders and time of the last tune started are offered again (``qsettings``; None: nothing is remembered).
    """

    extra_args: Sequence[str] = ()

    def __init__(self, backend: Backend, models_changed: Callable[[str | None], str | None], say: Callable[[str], None],
                 parent: QWidget, program: str | None = None, qsettings: QSettings | None = None,
                 say_kept: Callable[[str], None] | None = None) -> None:
        super().__init__(parent)
        self.qsettings = qsettings
        self.backend, self.models_changed, self.say, self._parent = backend, models_changed, say, parent
        self.say_kept = say_kept or say  # the window adds what Run Again would redo with the kept model
        self.program = program  # None: this interpreter (sys.executable)
        self.dialog: TeachDialog | None = None
        self.run: TuneProcess | None = None
        self.counter = PhotoCounter(self)
        self.counter.counted.connect(self._on_counted)
        self._generation = 0
        self._count: tuple[int, bool] | None = (0, False)  # (photos, capped); None while counting
        self._name, self._base = "", SHIPPED  # what the running (or finished) tune saves under, and starts from
        self._budget_s = 600.0
        self._card: dict[str, Any] | None = None
        self.steps_seen = 0

    def open_dialog(self) -> TeachDialog:
        """Show the dialog (one at a time, not modal: the window goes on working beside it)."""
        if self.dialog is None:
            d = self.dialog = TeachDialog(self._parent)
            d.add_folder_clicked.connect(self.choose_folder)
            d.folders_changed.connect(self._recount)
            d.settings_changed.connect(self._update)
            d.start_clicked.connect(self.start)
            d.cancel_clicked.connect(self.cancel)
            d.keep_clicked.connect(self.keep)
            d.discard_clicked.connect(self.discard)
            d.close_requested.connect(self.close)
            self._count = (0, False)
            last = load_teach(self.qsettings) if self.qsettings is not None else TeachChoices()
            d.set_minutes(last.minutes)
            d.base_combo.set_bases(start_models(self.backend.models()), last.base)
            d.add_folders([f for f in last.folders if f.is_dir()])  # one moved or unplugged since is left out
            self._update()
        self.dialog.show()
        self.dialog.raise_()
        self.dialog.activateWindow()
        return self.dialog

    def choose_folder(self) -> None:
        near = self.dialog.folders()[-1].parent if self.dialog is not None and self.dialog.folders() else Path.home()
        folder = QFileDialog.getExistingDirectory(self.dialog, "Add a folder of colour photos", str(near))
        if folder:
            self.add_folders([Path(folder)])

    def add_folders(self, folders: Sequence[Path]) -> None:
        self.open_dialog().add_folders([Path(f) for f in folders])

    # -- the setup: count, estimate, what stops Start ------------------------------------------------------------
    @Slot()
    def _recount(self) -> None:
        if self.dialog is None:
            return
        folders = self.dialog.folders()
        self._count = None if folders else (0, False)
        if folders:
            self._generation = self.counter.count(folders)
            self.dialog.set_count_text("Counting the photos…")
        self._update()

    @Slot(int, int, bool)
    def _on_counted(self, generation: int, photos: int, capped: bool) -> None:
        if generation == self._generation and self.dialog is not None:
            self._count = (photos, capped)
            self._update()

    def problem(self) -> tuple[str, str, bool]:
        """(what to say under the setup, its kind: "error", "warning" or "", whether Start is refused)."""
        d = self.dialog
        assert d is not None
        if not d.folders():
            return "Add a folder of colour photos (Add Folder…, or drop folders on the list)", "", True
        if self._count is None:
            return "Counting the photos…", "", True
        text, refused = photos_problem(self._count[0])
        if refused:
            return text, "error", True
        name = d.name()
        if not name:
            return "Give the tuned model a name", "", True
        bad = self.backend.model_name_problem(name)
        if bad:
            return bad, "error", True
        if name == d.base_combo.base():
            return f"'{name}' is the model to start from: give the new one another name", "error", True
        if self.backend.model_taken(name) and not d.replace_confirmed():
            return (f"A model named '{name}' exists: tick “Replace” to overwrite it when the training ends, or "
                    "choose another name"), "error", True
        return text, "warning" if text else "", False

    @Slot()
    def _update(self) -> None:
        d = self.dialog
        if d is None or self.run is not None:
            return
        d.show_replace(bool(d.name()) and self.backend.model_taken(d.name()) and d.name() != d.base_combo.base())
        if self._count is not None:
            photos, capped = self._count
            d.set_count_text(count_text(photos, capped) if d.folders() else "No folders yet")
            d.set_estimate_text(estimate_text(photos, d.minutes()) if photos else "")
        text, kind, _ = self.problem()
        d.set_message(text, kind)

    # -- the run -------------------------------------------------------------------------------------------------
    @Slot()
    def start(self) -> bool:
        """Start the tune in its own process; False (and why, under the setup) where it cannot start."""
        d = self.open_dialog()
        if self.run is not None:
            return False
        text, _kind, refused = self.problem()
        if refused:
            d.set_message(f"Cannot start: {text}", "error")
            return False
        self._name, self._budget_s, self._card, self.steps_seen = d.name(), d.minutes() * 60, None, 0
        self._base = d.base_combo.base() or SHIPPED
        if self.qsettings is not None:
            save_teach(self.qsettings, TeachChoices(tuple(d.folders()), d.minutes(), self._base))
        args = tune_arguments(d.folders(), self._name, d.minutes(), replace=d.replace_confirmed(),
                              extra=self.extra_args, base=base_argument(self.backend.models(), self._base))
        run = self.run = TuneProcess(args, self.program, self)
        run.reported.connect(self._on_event)
        run.ended.connect(self._on_ended)
        d.set_phase("running")
        d.set_training_title(f"Teaching “{self._name}” for about {counted(round(d.minutes()), 'minute')}")
        d.set_stage("Reading the photos…")
        run.start()
        self.say(f"Teaching the model '{self._name}' from your colour photos (in a separate process)…")
        return True

    @Slot()
    def cancel(self) -> None:
        if self.run is not None and self.run.running():
            self.run.cancel()
            if self.dialog is not None:
                self.dialog.cancelling()

    @Slot(object)
    def _on_event(self, event: dict[str, Any]) -> None:
        d, kind = self.dialog, event["event"]
        if kind == "done":
            self._card = event.get("card") if isinstance(event.get("card"), dict) else None
        if d is None:
            return
        if kind == "photos":
            notes = "".join(f"\n{note}" for note in event.get("notes") or [])
            photos = counted(int(event.get("photos", 0)), "colour photo")
            d.set_stage(f"Training on {event.get('trained_on')} of {photos} ({event.get('held_out')} held out to "
                        f"measure it){notes}")
            d.set_progress(None, "timing the first steps")
        elif kind == "step":
            self.steps_seen += 1
            left = float(event.get("seconds_left") or 0.0)
            d.set_progress(1 - left / self._budget_s if self._budget_s > 0 else None, step_text(event))
            if isinstance(event.get("ce"), int | float):
                d.loss_plot.add(float(event.get("step", self.steps_seen)), float(event["ce"]))
        elif kind == "measuring":
            d.set_stage(f"Measuring the held-out photos: {counted(int(event.get('photos', 0)), 'photo')}, "
                        f"{start_words(self._base)} against the tuned one…")
            d.set_progress(None, "measuring")

    @Slot(int, str, bool)
    def _on_ended(self, exit_code: int, message: str, cancelled: bool) -> None:
        run, self.run = self.run, None
        if run is not None:
            run.deleteLater()
        d = self.dialog
        if exit_code == 0 and not cancelled and self._card is not None:
            held = self._card.get("tune", {}).get("heldout", {})
            text = verdict_text(held, self._base)
            self.say(f"The model '{self._name}' is trained: {text} Keep or discard it.")
            if d is not None:
                d.set_progress(1.0, "done")
                d.set_stage(f"Done: '{self._name}' trained")
                d.show_result(text, str(held.get("verdict", "")), list(held.get("examples") or []),
                              display_name(self._base) if self._base != SHIPPED else "Shipped model")
            else:  # the dialog was closed while the last lines came: it is saved, so listed
                self.models_changed(None)
            return
        self.backend.remove_tune_work(self._name)  # the model is written only at the end: nothing else to remove
        if cancelled:
            text, kind = "Cancelled: nothing was saved (the training's work folder was removed)", "info"
        else:
            text, kind = f"The training stopped: {message or 'it ended without its result'}", "error"
        self.say(text)
        if d is not None:
            d.set_phase("setup")
            self._update()
            d.set_message(text, kind)

    # -- the result ----------------------------------------------------------------------------------------------
    @Slot()
    def keep(self) -> None:
        name = self._name
        self._dismiss()
        before = self.models_changed(name)
        if before is not None:  # None: it could not be chosen, and the line says why
            self.say_kept(f"Kept '{name}': it colorizes from now on{kept_in_place_of(before, name)}.")

    @Slot()
    def discard(self) -> None:
        name = self._name
        problem = self.backend.delete_model(name)
        self._dismiss()
        self.models_changed(None)
        self.say(f"Could not discard the model '{name}': {problem}" if problem
                 else f"Discarded the model '{name}': the other models and your choice are as they were")

    @Slot()
    def close(self) -> None:
        """Close, Esc or the title bar: a running tune is cancelled; a result not chosen yet is kept, not chosen."""
        d = self.dialog
        if d is None:
            return
        if self.run is not None:
            if not d.confirm_stop(self._name):
                return
            self.cancel()
        elif d.phase == "result":
            self.models_changed(None)
            self.say(f"Kept the model '{self._name}' (choose it in the Engine panel's Model list)")
        self._dismiss()

    def _dismiss(self) -> None:
        self.counter.stop()
        if self.dialog is not None:
            self.dialog.dismiss()
            self.dialog.deleteLater()
            self.dialog = None

    def shutdown(self) -> None:
        """The window is closing: kill a running tune and remove its work (no signal arrives after this)."""
        if self.run is not None:
            self.run.kill_now()
            self.backend.remove_tune_work(self._name)
            self.run = None
        self._dismiss()


def kept_in_place_of(before: str, kept: str) -> str:
    """", in place of …": the model a kept one took the place of in the Engine panel (nothing where it was itself).
    Auto is named with what it did, since one model now colours old prints too.
    """
    if before == AUTO:
        return ", old-print scans too, in place of Auto"
    return f", in place of {display_name(before)}" if before != kept else ""
