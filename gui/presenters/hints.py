"""Colour hints on the preview: click to add one (the model's likeliest colours there, or Other…), drag a ring
to move it, a right-click (or a click, then Delete) to remove it, View > Show Hints to hide them. Every change is
one command on the window's undo stack, and the preview re-colours after it (``gui.bridge.worker.Recolourer``, off
this thread).

A hint's point is relative to the photo (``engine.hints.Hint``): the preview's scene is the photo at preview
size, so x = scene x / width. Results are kept per (photo, hints, model settings), so Undo shows the previous
colour at once and a change of weights or size never brings back a preview made with the old ones.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QEvent, QObject, QPoint, Signal, Slot
from PySide6.QtGui import QAction, QCursor, QKeyEvent, QKeySequence, QMouseEvent, QUndoStack
from PySide6.QtWidgets import QMenu, QWidget

from engine.hints import Hint
from engine.options import BatchSummary, ColorizeSettings
from gui.model.hint_store import NO_HINTS_TEXT, Hints, HintStore, SetHints, path_key
from gui.model.run_keys import pixels_of
from gui.presenters.backend import Recolourer
from gui.presenters.hint_drag import HintDrag
from gui.presenters.photo_clicks import PhotoClicks
from gui.views.busy import BusyCursor
from gui.views.hint_rings import Ring, RingEdits, colour_menu, popup_beside, ring_key
from gui.views.preview import BeforeAfterView, ZoomView

KEEP_RESULTS = 12  # re-coloured previews kept for Undo (a few MB each)


def show_hints_action(parent: QObject) -> QAction:
    action = QAction("Show &Hints", parent)
    action.setCheckable(True)
    action.setChecked(True)
    action.setShortcut(QKeySequence("Ctrl+H"))
    action.setToolTip("Show the colour hints (Ctrl+H). Click the photo to add one; drag a hint to "
                      "move it; right-click it (or click it, then Delete) to remove it")
    return action


class HintEditor(QObject):
    """The hints of the photo on show: rings on both preview sides, the edit commands, and the re-colouring."""

    preview_updated = Signal(int)  # the preview on show now has the colour for its current hints (queue key)
    suggestions_shown = Signal()  # the colour popup for a click is open (``menu``)

    def __init__(self, preview: BeforeAfterView, store: HintStore, stack: QUndoStack, recolourer: Recolourer | None,
                 settings: Callable[[], ColorizeSettings], status: Callable[[str], None],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.preview, self.store, self.stack, self.recolourer = preview, store, stack, recolourer
        self.settings, self.status = settings, status
        self.key: int | None = None
        self.path: Path | None = None
        self.menu: QMenu | None = None
        self._results: OrderedDict[tuple[int, Hints, ColorizeSettings], np.ndarray] = OrderedDict()
        self._pixels: ColorizeSettings | None = None  # the settings that decide a preview's colour, last seen
        self._rings: list[Ring] = []
        self.drag = HintDrag(self)
        self._edits = RingEdits(self, self.remove, self.move, self.recolour_hint, self.drag.step, self.drag.back)
        self._replacing: int | None = None  # the hint whose colour the open suggestions replace
        self._clicks = PhotoClicks(preview, self.click)
        self._click_at = QPoint(0, 0)
        self._parent_widget = parent
        self._busy_cursor = BusyCursor()  # from a click until the model has answered: the wait seen, the window live
        self.show_action = show_hints_action(self)
        self.show_action.toggled.connect(self._draw)
        views = preview.photo_views()
        self._viewports: dict[QObject, ZoomView] = {view.viewport(): view for view in views}
        self._views: tuple[ZoomView, ...] = views
        for viewport, view in self._viewports.items():
            viewport.installEventFilter(self)
            view.installEventFilter(self)
        store.changed.connect(self._on_store_changed)
        if recolourer is not None:
            recolourer.recoloured.connect(self._on_recoloured)
            recolourer.suggestions.connect(self._on_suggestions)
            recolourer.refused.connect(self._on_refused)
            recolourer.idle.connect(self._on_idle)  # a slot of this QObject: queued to the UI thread

    # -- the photo on show ------------------------------------------------------------------------------
    def show(self, key: int | None, path: Path | None,
             made_with: tuple[ColorizeSettings, Hints] | None = None) -> None:
        """The preview now shows this queue row's photo (None: nothing, or an error). ``made_with``: the model
        settings and hints of the batch run whose colour the preview shows (None: no batch colour).
        """
        self.key, self.path = (key, path) if self.preview.grey() is not None else (None, None)
        if self.menu is not None:
            self.menu.close()
        self._draw()
        if self.key is None:
            return
        ab = self.preview.colour()
        if ab is not None and made_with is not None:  # the batch's colour: it replaces a preview made the same way
            self._keep(self.key, tuple(made_with[1]), made_with[0], ab)
        hints, settings = self.hints(), self.settings()
        shown = made_with is not None and ab is not None and made_with == (settings, hints)
        cached = self._results.get((self.key, hints, settings))
        if cached is not None and not shown:
            self.preview.set_colour(cached)
        elif not shown and hints:  # stored hints (a restart, Load Hints, Undo elsewhere) that nothing shows yet
            self.recolour()

    def hints(self) -> Hints:
        return self.store.get(self.path) if self.path is not None else ()

    def _draw(self) -> None:
        for ring in self._rings:
            if ring.scene() is not None:
                ring.scene().removeItem(ring)
        self._rings = []
        L = self.preview.grey()
        if self.path is None or L is None or not self.show_action.isChecked():
            return
        h, w = L.shape
        for scene in self.preview.scenes():
            for i, hint in enumerate(self.hints()):
                ring = Ring(self._edits, i, hint, w, h)
                scene.addItem(ring)
                self._rings.append(ring)

    # -- edits (each one undo command) -------------------------------------------------------------------
    def _edit(self, after: Sequence[Hint], text: str) -> None:
        if self.path is None:
            return
        self.stack.push(SetHints(self.store, {self.path: (self.hints(), after)}, text))

    def add(self, x: float, y: float, rgb: tuple[int, int, int]) -> None:
        self._edit(self.hints() + (Hint(min(max(x, 0.0), 1.0), min(max(y, 0.0), 1.0), rgb),), "Add Hint")

    def move(self, index: int, x: float, y: float) -> None:
        self.drag.landed()
        self._change(index, "Move Hint", x=min(max(x, 0.0), 1.0), y=min(max(y, 0.0), 1.0))

    def set_colour(self, index: int, rgb: tuple[int, int, int]) -> None:
        self._change(index, "Change Hint Colour", rgb=rgb)

    def _change(self, index: int, text: str, **fields: Any) -> None:
        hints = list(self.hints())
        if 0 <= index < len(hints):
            hints[index] = replace(hints[index], **fields)
            self._edit(hints, text)

    def remove(self, index: int) -> None:
        if 0 <= index < len(hints := self.hints()):
            self._edit(hints[:index] + hints[index + 1:], "Remove Hint")

    def clear(self) -> None:
        if self.hints():
            self._edit((), "Clear Hints")

    # -- the model -----------------------------------------------------------------------------------------
    def _on_store_changed(self, changed: str) -> None:
        if self.path is None or changed not in ("", path_key(self.path)):  # "": several photos at once
            return
        self._draw()
        self.recolour()

    def recolour(self) -> None:
        """Show the colour for the current hints: kept from before (Undo), or asked of the model."""
        L, key = self.preview.grey(), self.key
        if L is None or key is None:
            return
        hints, settings = self.hints(), self.settings()
        cached = self._results.get((key, hints, settings))
        if cached is not None:
            self._results.move_to_end((key, hints, settings))
            self.preview.set_colour(cached)
            self.preview_updated.emit(key)
        elif self.recolourer is not None:
            self._busy_cursor.set(True)  # before the request: its answer may come at once
            self.recolourer.request(key, L, hints, settings, self.path)

    def settings_changed(self) -> None:
        """Another model or working size: a hinted photo's live colour is made anew (what Run Again would give; not
        for a batch size); an unhinted one goes on showing the file written.
        """
        pixels, self._pixels = self._pixels, pixels_of(self.settings())
        if self.hints() and pixels != self._pixels:
            self.recolour()

    def follow_batch(self, summary: BatchSummary) -> None:
        """After a batch that chose its model by look: previews with "auto" use that model from now on, and what
        was coloured with "auto" before may have come from the other one, so it is not shown again.
        """
        if not summary.chosen_model or self.recolourer is None:
            return
        self.recolourer.follow(summary.chosen_weights, summary.folder_models)
        for k in [k for k in self._results if k[2].by_look]:
            del self._results[k]
        if self.settings().by_look and self.hints():  # the photo on show, hinted: its colour from that model now
            self.recolour()

    def _on_recoloured(self, key: int, hints: Hints, settings: ColorizeSettings, ab: np.ndarray) -> None:
        current = key == self.key and (hints, settings) == (self.hints(), self.settings())
        if not current and self.drag.answer((key, hints, settings), ab):
            return
        self._keep(key, hints, settings, ab)
        if current:  # older answers: kept only
            self.preview.set_colour(ab)
            self.preview_updated.emit(key)

    def _keep(self, key: int, hints: Hints, settings: ColorizeSettings, ab: np.ndarray) -> None:
        self._results[(key, hints, settings)] = ab
        self._results.move_to_end((key, hints, settings))
        while len(self._results) > KEEP_RESULTS:
            self._results.popitem(last=False)

    def _on_refused(self, key: int, reason: str) -> None:
        if key == self.key:
            self.status(reason if reason == NO_HINTS_TEXT else f"The model could not give colours for the preview: "
                                                               f"{reason}")

    # -- clicks and keys on the preview ---------------------------------------------------------------------
    def click(self, view: ZoomView, pos: QPoint) -> bool:
        """A click at viewport ``pos``: ask the model for its likeliest colours there. False where no hint goes."""
        L = self.preview.grey()
        if L is None or self.key is None or not self.show_action.isChecked():
            return False
        point = view.mapToScene(pos)
        h, w = L.shape
        x, y = point.x() / w, point.y() / h
        if not (0.0 <= x <= 1.0 and 0.0 <= y <= 1.0):
            return False
        self._click_at = view.viewport().mapToGlobal(pos)
        return self._suggest(self.key, L, x, y, self.hints(), replacing=None)

    def recolour_hint(self, index: int) -> None:
        """A double-click on a hint: the model's colours at its place (as if it were not there) to replace its own."""
        L, hints = self.preview.grey(), self.hints()
        if L is not None and self.key is not None and 0 <= index < len(hints):
            self._click_at = QCursor.pos()
            self._suggest(self.key, L, hints[index].x, hints[index].y, hints[:index] + hints[index + 1:], index)

    def _suggest(self, key: int, L: np.ndarray, x: float, y: float, hints: Hints, replacing: int | None) -> bool:
        if self.recolourer is None:
            self.status(NO_HINTS_TEXT)
            return False
        self._replacing = replacing
        self._busy_cursor.set(True)  # before the request: its answer may come at once
        self.recolourer.suggest(key, L, x, y, hints, self.settings(), self.path)
        return True

    def _on_suggestions(self, key: int, x: float, y: float, colours: list[tuple[int, int, int]]) -> None:
        if key != self.key:
            return
        index, self._replacing = self._replacing, None
        menu = self.menu = colour_menu(self._parent_widget, colours, lambda rgb: self.add(x, y, rgb) if index is None
                                       else self.set_colour(index, rgb), self.store.recent_colours(),
                                       self._click_at)
        menu.destroyed.connect(lambda *_: setattr(self, "menu", None) if self.menu is menu else None)
        popup_beside(menu, self._click_at)
        self.suggestions_shown.emit()

    @Slot()
    def _on_idle(self) -> None:
        self._busy_cursor.set(False)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if watched in self._viewports and kind == QEvent.Type.Enter and self.key is not None \
                and self.recolourer is not None:
            # The mouse came onto the photo: load the model now, so a first click does not wait for the weights
            # (only then: a user who never hints keeps no second model).
            self.recolourer.warm(self.settings())
        if watched in self._viewports and isinstance(event, QMouseEvent) and kind in (
                QEvent.Type.MouseButtonPress, QEvent.Type.MouseButtonRelease):
            self._clicks.mouse(watched, self._viewports[watched], event)
            return False
        if watched in self._views and isinstance(event, QKeyEvent) and kind in (
                QEvent.Type.ShortcutOverride, QEvent.Type.KeyPress):
            act = ring_key(event, self._rings, self.remove, self.drag.cancel)
            if act is not None:
                event.accept()  # the key is the hints' here, not the window's shortcut
                if kind == QEvent.Type.KeyPress:
                    act()
                return True
        return False

    def close(self) -> None:
        """Stop the model's thread and write the hints out (the window is closing)."""
        for viewport, view in self._viewports.items():
            viewport.removeEventFilter(self)
            view.removeEventFilter(self)
        self._viewports, self._views = {}, ()
        self.store.flush()
        self._busy_cursor.set(False)
        if self.recolourer is not None:
            self.recolourer.stop()
            self.recolourer = None
