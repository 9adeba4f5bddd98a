"""Colour hints on the preview: click to add one (the model's likeliest colours there, or Other…), drag a ring
to move it, Delete or a right-click to remove it, View > Show Hints to hide them. Every change is one command
on the window's undo stack, and the preview re-colours after it (``gui.bridge.worker.Recolourer``, off this thread).

A hint's point is relative to the photo (``engine.hints.Hint``): the preview's scene is the photo at preview
size, so x = scene x / width. Results are kept per (photo, hints, model settings), so Undo shows the previous
colour at once and a change of weights or size never brings back a preview made with the old ones.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QEvent, QObject, QPoint, QPointF, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QAction, QBrush, QColor, QIcon, QKeySequence, QPen, QPixmap, QUndoCommand, QUndoStack
from PySide6.QtWidgets import (
    QColorDialog,
    QFileDialog,
    QGraphicsEllipseItem,
    QGraphicsItem,
    QGraphicsSceneMouseEvent,
    QMenu,
    QWidget,
)

from engine.hints import Hint, HintsFileError
from engine.messages import counted
from engine.options import ColorizeSettings
from gui.model.hint_store import NO_HINTS_TEXT, Hints, HintStore, load_summary, path_key
from gui.views.busy import BusyCursor
from gui.views.preview import BeforeAfterView, ZoomView

RING_RADIUS = 7  # screen pixels, at any zoom
CLICK_SLOP = 4  # a press and release closer than this (px) is a click, not a pan
KEEP_RESULTS = 12  # re-coloured previews kept for Undo (a few MB each)


class SetHints(QUndoCommand):
    """Photos' hints before and after an edit (add, move, remove, or a whole loaded file): redo sets the ``after``
    of each, undo its ``before``; one ``changed`` signal however many photos.
    """

    def __init__(self, store: HintStore, changes: dict[Path, tuple[Sequence[Hint], Sequence[Hint]]],
                 text: str) -> None:
        super().__init__(text)
        self.store = store
        self.changes = {path: (tuple(before), tuple(after)) for path, (before, after) in changes.items()}

    def redo(self) -> None:
        self.store.set_many({path: after for path, (_, after) in self.changes.items()})

    def undo(self) -> None:
        self.store.set_many({path: before for path, (before, _) in self.changes.items()})


class Ring(QGraphicsEllipseItem):
    """One hint on a scene: a small ring filled with its colour, the same size at every zoom."""

    def __init__(self, editor: HintEditor, index: int, hint: Hint, width: int, height: int) -> None:
        r = RING_RADIUS
        super().__init__(-r, -r, 2 * r, 2 * r)
        self.editor, self.index, self.hint = editor, index, hint
        self.size = (width, height)
        self.setPos(hint.x * width, hint.y * height)
        self.setBrush(QBrush(QColor(*hint.rgb)))
        self._pen(False)
        self.setZValue(10)
        self.setCursor(Qt.CursorShape.SizeAllCursor)
        self.setToolTip("Colour hint: drag to move; Delete or right-click removes it")
        for flag in (QGraphicsItem.GraphicsItemFlag.ItemIsMovable, QGraphicsItem.GraphicsItemFlag.ItemIsSelectable,
                     QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations,
                     QGraphicsItem.GraphicsItemFlag.ItemSendsGeometryChanges):
            self.setFlag(flag)

    def _pen(self, selected: bool) -> None:
        pen = QPen(QColor(255, 210, 0) if selected else QColor(255, 255, 255))
        pen.setWidthF(3 if selected else 2)
        self.setPen(pen)

    def itemChange(self, change: QGraphicsItem.GraphicsItemChange, value: Any) -> Any:
        if change == QGraphicsItem.GraphicsItemChange.ItemPositionChange:  # stay on the photo
            w, h = self.size
            return QPointF(min(max(value.x(), 0.0), w), min(max(value.y(), 0.0), h))
        if change == QGraphicsItem.GraphicsItemChange.ItemSelectedHasChanged:
            self._pen(bool(value))
        return super().itemChange(change, value)

    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        if event.button() == Qt.MouseButton.RightButton:
            event.accept()
            QTimer.singleShot(0, self.editor, lambda i=self.index: self.editor.remove(i))  # after this event
            return
        super().mousePressEvent(event)

    def mouseReleaseEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        super().mouseReleaseEvent(event)
        w, h = self.size
        if self.pos() != QPointF(self.hint.x * w, self.hint.y * h):  # dragged: redrawn after this event
            x, y = self.pos().x() / w, self.pos().y() / h
            QTimer.singleShot(0, self.editor, lambda i=self.index: self.editor.move(i, x, y))


class HintEditor(QObject):
    """The hints of the photo on show: rings on both preview sides, the edit commands, and the re-colouring."""

    preview_updated = Signal(int)  # the preview on show now has the colour for its current hints (queue key)
    suggestions_shown = Signal()  # the colour popup for a click is open (``menu``)

    def __init__(self, preview: BeforeAfterView, store: HintStore, stack: QUndoStack, recolourer: Any,
                 settings: Callable[[], ColorizeSettings], status: Callable[[str], None],
                 photos: Callable[[], list[tuple[Path, Path]]], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.preview, self.store, self.stack, self.recolourer = preview, store, stack, recolourer
        self.settings, self.status, self.photos = settings, status, photos
        self.key: int | None = None
        self.path: Path | None = None
        self.menu: QMenu | None = None
        self._results: OrderedDict[tuple[int, Hints, ColorizeSettings], np.ndarray] = OrderedDict()
        self._rings: list[Ring] = []
        self._press: dict[QObject, QPoint] = {}
        self._parent_widget = parent
        self._busy_cursor = BusyCursor()

        self.show_action = QAction("Show &Hints", self)
        self.show_action.setCheckable(True)
        self.show_action.setChecked(True)
        self.show_action.setShortcut(QKeySequence("Ctrl+H"))
        self.show_action.setToolTip("Show the colour hints (Ctrl+H). Click the photo to add one; drag a hint to "
                                    "move it; Delete or right-click removes it")
        self.show_action.toggled.connect(self._draw)
        self.save_action = QAction("Save &Hints…", self)
        self.save_action.setStatusTip("Save the queued photos' colour hints as a file (colorize --hints reads it)")
        self.save_action.triggered.connect(self.save_dialog)
        self.load_action = QAction("&Load Hints…", self)
        self.load_action.setStatusTip("Load colour hints from a file, for the queued photos it names")
        self.load_action.triggered.connect(self.load_dialog)

        self._viewports = {view.viewport(): view for view in (preview.before_view, preview.after_view)}
        self._views: tuple[ZoomView, ...] = (preview.before_view, preview.after_view)
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
        for scene in (self.preview.before_scene, self.preview.after_scene):
            for i, hint in enumerate(self.hints()):
                ring = Ring(self, i, hint, w, h)
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
        hints = list(self.hints())
        if 0 <= index < len(hints):
            old = hints[index]
            hints[index] = Hint(min(max(x, 0.0), 1.0), min(max(y, 0.0), 1.0), old.rgb)
            self._edit(hints, "Move Hint")

    def remove(self, index: int) -> None:
        hints = list(self.hints())
        if 0 <= index < len(hints):
            del hints[index]
            self._edit(hints, "Remove Hint")

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
            self._busy(True)  # before the request: its answer may come at once
            self.recolourer.request(key, L, hints, settings)

    def _busy(self, on: bool) -> None:
        """A busy cursor from a click until the model has answered: the wait is seen, the window stays live."""
        self._busy_cursor.set(on)

    def _on_recoloured(self, key: int, hints: Hints, settings: ColorizeSettings, ab: np.ndarray) -> None:
        self._keep(key, hints, settings, ab)
        if key == self.key and (hints, settings) == (self.hints(), self.settings()):  # older answers: kept only
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
        if self.recolourer is None:
            self.status(NO_HINTS_TEXT)
            return False
        self._busy(True)  # before the request: its answer may come at once
        self.recolourer.suggest(self.key, L, x, y, self.hints(), self.settings())
        return True

    def _on_suggestions(self, key: int, x: float, y: float, colours: list[tuple[int, int, int]]) -> None:
        if key != self.key:
            return
        menu = self.menu = QMenu(self._parent_widget)
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        menu.destroyed.connect(lambda *_: setattr(self, "menu", None) if self.menu is menu else None)
        for rgb in colours:
            swatch = QPixmap(16, 16)
            swatch.fill(QColor(*rgb))
            action = menu.addAction(QIcon(swatch), "#{:02x}{:02x}{:02x}".format(*rgb))
            action.triggered.connect(lambda _=False, c=rgb: self.add(x, y, c))
        menu.addSeparator()
        menu.addAction("Other…").triggered.connect(lambda: self._other(x, y, colours[0] if colours else None))
        menu.popup(getattr(self, "_click_at", QPoint(0, 0)))
        self.suggestions_shown.emit()

    def _other(self, x: float, y: float, start: tuple[int, int, int] | None) -> None:
        dialog = QColorDialog(QColor(*start) if start else QColor(128, 128, 128), self._parent_widget)
        dialog.setWindowTitle("Hint colour")
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.colorSelected.connect(lambda c: self.add(x, y, (c.red(), c.green(), c.blue())))
        dialog.open()

    @Slot()
    def _on_idle(self) -> None:
        self._busy(False)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if watched in self._viewports and kind == QEvent.Type.Enter and self.key is not None \
                and self.recolourer is not None:
            # The mouse came onto the photo: load the model now, so a first click does not wait for the weights
            # (only then: a user who never hints keeps no second model).
            self.recolourer.warm(self.settings())
        if watched in self._viewports and kind in (QEvent.Type.MouseButtonPress, QEvent.Type.MouseButtonRelease):
            view = self._viewports[watched]  # type: ignore[index]
            if event.button() != Qt.MouseButton.LeftButton:  # type: ignore[attr-defined]
                return False
            pos = event.position().toPoint()  # type: ignore[attr-defined]
            if kind == QEvent.Type.MouseButtonPress:
                on_ring = isinstance(view.itemAt(pos), Ring)
                grabs_wipe = view is self.preview.before_view and self.preview.near_wipe_line(pos)
                self._press[watched] = pos if not (on_ring or grabs_wipe) else QPoint(-10_000, -10_000)
            else:
                start = self._press.pop(watched, None)
                if start is not None and (pos - start).manhattanLength() < CLICK_SLOP:
                    self.click(view, pos)
            return False
        if watched in self._views and kind in (
                QEvent.Type.ShortcutOverride, QEvent.Type.KeyPress):
            key = event.key()  # type: ignore[attr-defined]
            selected = [r for r in self._rings if r.isSelected()]
            if key in (Qt.Key.Key_Delete, Qt.Key.Key_Backspace) and selected:
                event.accept()  # Delete removes the hint here, not the queue's photos
                if kind == QEvent.Type.KeyPress:
                    self.remove(selected[0].index)
                return True
        return False

    # -- files ------------------------------------------------------------------------------------------------
    def save_file(self, path: Path) -> int:
        n = self.store.save_file(path, self.photos())
        self.status(f"Saved the hints of {counted(n, 'photo')} to {path}")
        return n

    def load_file(self, path: Path) -> bool:
        """Load a hints file for the queued photos it names, as one undoable step."""
        photos = self.photos()
        try:
            match = self.store.read_file(path, photos)
        except HintsFileError as err:
            self.status(str(err))
            return False
        changes = {photos[i][0]: (self.store.get(photos[i][0]), hints) for i, hints in match.hints.items()}
        self.stack.push(SetHints(self.store, changes, f"Load Hints from {path.name}"))
        self.status(load_summary(match, path))
        return True

    def save_dialog(self) -> None:
        name, _ = QFileDialog.getSaveFileName(self._parent_widget, "Save colour hints", "hints.json",
                                              "Hints files (*.json)")
        if name:
            self.save_file(Path(name))

    def load_dialog(self) -> None:
        name, _ = QFileDialog.getOpenFileName(self._parent_widget, "Load colour hints", "", "Hints files (*.json)")
        if name:
            self.load_file(Path(name))

    def close(self) -> None:
        """Stop the model's thread and write the hints out (the window is closing)."""
        for viewport, view in self._viewports.items():
            viewport.removeEventFilter(self)
            view.removeEventFilter(self)
        self._viewports, self._views = {}, ()
        self.store.flush()
        self._busy(False)
        if self.recolourer is not None:
            self.recolourer.stop()
            self.recolourer = None
