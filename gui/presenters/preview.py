"""The preview's presenter: the selected (or newest) photo on the before/after view, read from the cache at once
or from disk off the UI thread, with its hints (``gui.presenters.hints.HintEditor``), and Export Comparison.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from PySide6.QtCore import QObject, QTimer, Slot
from PySide6.QtWidgets import QWidget

from engine.options import IN_COLOUR, PhotoResult, Status
from gui.model.preview_loader import PreviewLoader
from gui.model.previews import PreviewCache
from gui.model.queue_model import QueueModel
from gui.presenters.hints import HintEditor
from gui.views.busy import BusyCursor
from gui.views.comparison_export import export_dialog, full_size
from gui.views.export_panel import ExportPanel
from gui.views.preview import BeforeAfterView
from gui.views.queue_table import QueueTable

PREVIEW_SIZE = 800  # longest side of the previews the worker sends back
LOADING_AFTER_MS = 250  # a photo read from disk for longer than this shows "Loading…" instead of the last one
REMOVED_TEXT = "Removed from the queue. Select a photo to see it here."


class PreviewPresenter(QObject):
    """Selection -> preview -> hints. ``shown_key`` is the queue key of the photo on show (None: none)."""

    def __init__(self, queue: QueueModel, table: QueueTable, preview: BeforeAfterView, hints: HintEditor,
                 export_panel: ExportPanel, say: Callable[[str], None], parent: QWidget) -> None:
        super().__init__(parent)
        self.queue, self.table, self.preview, self.hints = queue, table, preview, hints
        self.export_panel, self.say, self._parent = export_panel, say, parent
        self.previews = PreviewCache()
        self.latest_key: int | None = None
        self.shown_key: int | None = None
        self.loading_key: int | None = None  # the photo being read from disk to be shown
        self._busy_cursor = BusyCursor()
        self.loader = PreviewLoader(PREVIEW_SIZE)
        self.loader.loaded.connect(self._on_loaded)
        self.loader.failed.connect(self._on_load_failed)
        table.selection_changed.connect(self._on_selection)
        queue.rowsRemoved.connect(self._forget_removed)

    def selected_key(self) -> int | None:
        rows = self.table.selected_rows()
        return self.queue.row(rows[-1]).key if rows else None

    def _on_selection(self) -> None:
        """The selected photo; with none selected, the one on show stays (a trial's cleared selection jumped the
        preview to the queue's last photo), and where none is, the latest one finished.
        """
        key = self.selected_key()
        if key is not None:
            self.show_key(key)
        elif self.latest_key is not None and (self.shown_key is None or self.queue.row_of(self.shown_key) is None):
            self.show_key(self.latest_key)

    def photo_done(self, key: int, r: PhotoResult) -> None:
        """A batch result for row ``key``: keep its preview, and show it where it is the photo to look at."""
        selected = self.selected_key()
        if r.status == Status.DONE and r.preview is not None:
            self.previews.put(key, r.preview.L, r.preview.ab)
            self.latest_key = key
        if (selected == key and r.status != Status.CANCELLED) or (
                selected is None and r.status == Status.DONE and r.preview is not None):
            self.show_key(key)  # the photo on show just finished (or failed): show its outcome

    def queued(self, text: str, offer_action: bool = True) -> None:
        """Photos were queued (or a run coloured none): say ``text`` on the preview while no photo is on show."""
        if self.shown_key is None:
            self.preview.clear(text, offer_action)

    def queue_cleared(self) -> None:
        self.latest_key = self.shown_key = None
        self.preview.clear("The queue is empty. Drop photos or folders here.")
        self.hints.show(None, None)

    def show_key(self, key: int) -> None:
        """Show a queued photo: from the cache at once, else read from disk off the UI thread (``_on_loaded``)."""
        i = self.queue.row_of(key)
        if i is None:
            return
        row = self.queue.row(i)
        cached = self.previews.get(key)
        if cached is not None:
            self.loading_key = None
            self.busy(False)
            self._present(key, *cached)
            return
        self.loading_key = key
        shown = row.output if row.status == Status.DONE else row.existing if row.status == Status.SKIPPED else None
        self.loader.request(key, row.path, shown)  # a photo skipped as its output exists: that output
        self.busy(True)
        QTimer.singleShot(LOADING_AFTER_MS, self, lambda: self._say_loading(key))

    def _say_loading(self, key: int) -> None:
        i = self.queue.row_of(key)
        if self.loading_key == key and i is not None:
            self._show_nothing()
            self.preview.clear(f"Loading {self.queue.row(i).shown_name}…", offer_action=False)

    def _show_nothing(self) -> None:
        self.shown_key = None
        self.hints.show(None, None)

    @Slot(int, object, object)
    def _on_loaded(self, key: int, L: np.ndarray, ab: np.ndarray | None) -> None:
        if key != self.loading_key:
            return  # another photo was selected meanwhile
        self.loading_key = None
        self.busy(False)
        if self.queue.row_of(key) is None:
            self._removed_while_loading()
        else:
            self._present(key, L, ab)

    @Slot(int, str)
    def _on_load_failed(self, key: int, reason: str) -> None:
        if key != self.loading_key:
            return
        self.loading_key = None
        self.busy(False)
        i = self.queue.row_of(key)
        if i is None:
            self._removed_while_loading()
            return
        row = self.queue.row(i)
        reason = row.message if row.status == Status.FAILED and row.message else reason
        self.preview.show_error(f"{row.shown_name}: cannot show a preview.\n\n{reason}")
        self._show_nothing()

    def _removed_while_loading(self) -> None:
        self._show_nothing()
        self.preview.clear(REMOVED_TEXT)

    def _present(self, key: int, L: np.ndarray, ab: np.ndarray | None) -> None:
        i = self.queue.row_of(key)
        if i is None:
            return
        row = self.queue.row(i)
        self.shown_key = key
        missing = (f"failed · {row.message}" if row.status == Status.FAILED
                   else f"skipped · {row.message}" if row.status == Status.SKIPPED and row.message
                   else "not colorized yet")
        in_colour = " (in colour: its lightness)" if IN_COLOUR in row.message else ""  # not "grey" unsaid
        self.preview.show_photo(L, ab, row.shown_name + in_colour, missing=missing)
        made_with = (row.run_key.model, row.run_key.hints) if row.status == Status.DONE and row.run_key else None
        self.hints.show(key, row.path, made_with if ab is not None else None)

    def busy(self, on: bool) -> None:
        """A busy cursor while the window waits for a photo to load (it stays responsive)."""
        self._busy_cursor.set(on)

    def _forget_removed(self) -> None:
        """The photo on show left the queue: show nothing, so no hint is added to a photo no longer queued."""
        if self.shown_key is not None and self.queue.row_of(self.shown_key) is None:
            self.shown_key = None
            self.preview.clear(REMOVED_TEXT)
            self.hints.show(None, None)

    def set_wipe(self, on: bool) -> None:
        self.preview.set_mode("wipe" if on else "side")

    def export_comparison(self) -> Path | None:
        """File > Export Comparison…: the photo on screen, before and after, as one captioned image."""
        i = None if self.shown_key is None else self.queue.row_of(self.shown_key)
        after = self.preview.after_image()
        if i is None or after.isNull():
            self.say("Nothing to export: select a colorized photo first")
            return None
        row = self.queue.row(i)
        strength = self.preview.strength_percent()
        full = None
        hinted_since = row.run_key is not None and tuple(row.run_key.hints) != tuple(self.hints.hints())
        if row.status == Status.DONE and row.output is not None and row.run_key is not None and not hinted_since:
            made_at, output = row.run_key.export.strength, row.output

            def full() -> tuple[np.ndarray, np.ndarray]:  # the exported photo at its own size, at the strength shown
                self.busy(True)  # a large scan takes seconds to decode and join
                try:
                    return full_size(row.path, output, strength / 100 / made_at if made_at > 0 else 0.0)
                finally:
                    self.busy(False)

        written = export_dialog(self._parent, self.preview.before_image(), after, row.path,
                                self.export_panel.choice().output_dir, strength, full_size=full)
        if written is not None:  # the file on disk has not the hints on screen: only the preview's size has them
            self.say(f"Exported the comparison to {written}" + (" at the preview's size: the hints changed since the "
                     "photo was colorized (Run Again, then it can be exported at full size)" if hinted_since else ""))
        return written

    def stop(self) -> None:
        """The window is closing: stop the loader's thread and the hint editor's."""
        self.loader.stop()
        self.busy(False)
        self.hints.close()
