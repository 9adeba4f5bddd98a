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
from PySide6.QtCore import QEvent, QObject, QPoint, Qt, Signal, Slot
from PySide6.QtGui import QAction, QCursor, QKeyEvent, QKeySequence, QMouseEvent, QUndoStack
from PySide6.QtWidgets import QMenu, QWidget

from engine.hints import Hint
from engine.options import BatchSummary, ColorizeSettings
from gui.model.hint_store import NO_HINTS_TEXT, Hints, HintStore, SetHints, path_key
from gui.presenters.backend import Recolourer
from gui.views.busy import BusyCursor
from gui.views.hint_rings import Ring, RingEdits, colour_menu, popup_beside
from gui.views.preview import BeforeAfterView, ZoomView

CLICK_SLOP = 4  # a press and release closer than this (px) is a click, not a pan
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
        self._rings: list[Ring] = []
        self._edits = RingEdits(self, self.remove, self.move, self.recolour_hint, self.drag, self._drag_back)
        # A drag: the colour it asked for last (shown when it comes), every place it asked for (answers for places
        # it has left are dropped, not kept), and the one answer of its own kept in the cache (the one shown).
        self._drag_want: tuple[int, Hints, ColorizeSettings] | None = None
        self._drag_asked: set[tuple[int, Hints, ColorizeSettings]] = set()
        self._dragged: tuple[int, Hints, ColorizeSettings] | None = None
        self._replacing: int | None = None  # the hint whose colour the open suggestions replace
        self._press: dict[QObject, QPoint] = {}
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
        self._drag_want, self._dragged = None, None  # a drag's last answer stays in the cache: Undo may want it
        self._change(index, "Move Hint", x=min(max(x, 0.0), 1.0), y=min(max(y, 0.0), 1.0))

    def drag(self, index: int, x: float, y: float) -> None:
        """A hint on its way: the preview follows it, with no undo step or write until the release (``move``).
        Requests pile up faster than the model answers; its worker keeps the newest.
        """
        hints, L, key = list(self.hints()), self.preview.grey(), self.key
        held = [r for r in self._rings if r.index == index and r.held]
        if not held or not 0 <= index < len(hints) or L is None or key is None or self.recolourer is None:
            return  # a step queued before a release, or before another photo came on show
        if self._drag_want is None:  # a new drag: the last one's places are forgotten
            self._drag_asked.clear()
        hints[index] = replace(hints[index], x=min(max(x, 0.0), 1.0), y=min(max(y, 0.0), 1.0))
        for ring in self._rings:  # the same hint on the other side follows too
            if ring.index == index and not ring.held:
                ring.setPos(held[0].pos())
        want = self._drag_want = (key, tuple(hints), self.settings())
        cached = self._results.get(want)
        if cached is not None:
            self.preview.set_colour(cached)
        else:
            self._drag_asked.add(want)
            self.recolourer.request(key, L, want[1], want[2], self.path)

    def _cancel_drag(self, held: list[Ring]) -> None:
        for ring in held:
            ring.held = False  # let go: the mouse's release then neither moves it nor calls it back
            ring.ungrabMouse()
        self._drag_back(held[0].index)

    def _drag_back(self, index: int) -> None:
        """A drag let go where it began: nothing to keep; the colour of the hints as they are, which the drag's
        requests may have displaced in the model's queue.
        """
        self._drag_want = None
        for ring in self._rings:
            ring.setPos(ring.hint_pos())
        self.recolour()

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
        asked = (key, hints, settings)
        current = key == self.key and (hints, settings) == (self.hints(), self.settings())
        if asked in self._drag_asked and not current:
            # A drag's answer: shown if it is for where the hint is now, and only the newest kept, so a drag does
            # not push Undo's colours out of the cache; for a place the drag has left, dropped.
            self._drag_asked.discard(asked)
            if asked != self._drag_want:
                return
            if self._dragged is not None:
                self._results.pop(self._dragged, None)
            self._dragged = asked
            self._keep(key, hints, settings, ab)
            self.preview.set_colour(ab)
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
                                       else self.set_colour(index, rgb), self.store.recent_colours())
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
            self._mouse(watched, self._viewports[watched], event)
            return False
        if watched in self._views and isinstance(event, QKeyEvent) and kind in (
                QEvent.Type.ShortcutOverride, QEvent.Type.KeyPress):
            held = [r for r in self._rings if r.held]
            if held and (event.matches(QKeySequence.StandardKey.Undo) or event.key() == Qt.Key.Key_Escape):
                event.accept()  # Undo or Escape mid-drag takes the drag back, not the edit before it
                if kind == QEvent.Type.KeyPress:
                    self._cancel_drag(held)
                return True
            selected = [r for r in self._rings if r.isSelected()]
            if event.key() in (Qt.Key.Key_Delete, Qt.Key.Key_Backspace) and selected:
                event.accept()  # Delete removes the hint here, not the queue's photos
                if kind == QEvent.Type.KeyPress:
                    self.remove(selected[0].index)
                return True
        return False

    def _mouse(self, viewport: QObject, view: ZoomView, event: QMouseEvent) -> None:
        """A left press and release without moving (a click, not a pan) on the photo asks for colours there."""
        if event.button() != Qt.MouseButton.LeftButton:
            return
        pos = event.position().toPoint()
        if event.type() == QEvent.Type.MouseButtonPress:
            on_ring = isinstance(view.itemAt(pos), Ring)
            grabs_wipe = view is self._views[0] and self.preview.near_wipe_line(pos)
            self._press[viewport] = pos if not (on_ring or grabs_wipe) else QPoint(-10_000, -10_000)
        else:
            start = self._press.pop(viewport, None)
            if start is not None and (pos - start).manhattanLength() < CLICK_SLOP:
                self.click(view, pos)

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
