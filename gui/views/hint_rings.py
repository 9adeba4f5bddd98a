"""A colour hint drawn on the preview: a ring filled with its colour, dragged to move, right-clicked to remove.
The edits go back through ``RingEdits`` (the hint editor), after the mouse event that made them. And the popup
of the model's likeliest colours for a click, with Other… for any colour.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, QPoint, QPointF, QSize, Qt, QTimer
from PySide6.QtGui import QBrush, QColor, QGuiApplication, QIcon, QKeyEvent, QKeySequence, QPen, QPixmap
from PySide6.QtWidgets import (
    QColorDialog,
    QGraphicsEllipseItem,
    QGraphicsItem,
    QGraphicsSceneMouseEvent,
    QMenu,
    QWidget,
)

from engine.hints import Hint
from gui.model.colour_names import colour_names_apart
from gui.views.placement import on_screen

RING_RADIUS = 7  # screen pixels, at any zoom
MENU_GAP = 40  # screen pixels left clear on each side of a click: the colours are picked looking at the spot


@dataclass(frozen=True)
class RingEdits:
    """What a ring's mouse does: ``remove(index)``, ``move(index, x, y)`` (a drag's release elsewhere),
    ``recolour(index)`` (a double-click), ``drag(index, x, y)`` (each step of a drag, before its release) and
    ``back(index)`` (a drag's release where it began); run later in ``context``'s thread.
    """

    context: QObject
    remove: Callable[[int], None]
    move: Callable[[int, float, float], None]
    recolour: Callable[[int], None]
    drag: Callable[[int, float, float], None]
    back: Callable[[int], None]


class Ring(QGraphicsEllipseItem):
    """One hint on a scene: a small ring filled with its colour, the same size at every zoom."""

    def __init__(self, edits: RingEdits, index: int, hint: Hint, width: int, height: int) -> None:
        r = RING_RADIUS
        super().__init__(-r, -r, 2 * r, 2 * r)
        self.edits, self.index, self.hint = edits, index, hint
        self.size = (width, height)
        self.held = False  # the left button is down on this ring: a move is a drag
        self.setPos(self.hint_pos())
        self.setBrush(QBrush(QColor(*hint.rgb)))
        self._pen(False)
        self.setZValue(10)
        self.setCursor(Qt.CursorShape.SizeAllCursor)
        self.setToolTip("Colour hint: drag to move; double-click to change its colour; right-click removes it (or "
                        "click it, then Delete)")
        for flag in (QGraphicsItem.GraphicsItemFlag.ItemIsMovable, QGraphicsItem.GraphicsItemFlag.ItemIsSelectable,
                     QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations,
                     QGraphicsItem.GraphicsItemFlag.ItemSendsGeometryChanges):
            self.setFlag(flag)

    def relative_pos(self) -> tuple[float, float]:
        """Where the ring is now, as a hint's x and y (0..1)."""
        return self.pos().x() / self.size[0], self.pos().y() / self.size[1]

    def hint_pos(self) -> QPointF:
        """Where the hint is (the ring's place when not dragged)."""
        return QPointF(self.hint.x * self.size[0], self.hint.y * self.size[1])

    def _pen(self, selected: bool) -> None:
        pen = QPen(QColor(255, 210, 0) if selected else QColor(255, 255, 255))
        pen.setWidthF(3 if selected else 2)
        self.setPen(pen)

    def itemChange(self, change: QGraphicsItem.GraphicsItemChange, value: Any) -> Any:
        if change == QGraphicsItem.GraphicsItemChange.ItemPositionChange:  # stay on the photo
            w, h = self.size
            return QPointF(min(max(value.x(), 0.0), w), min(max(value.y(), 0.0), h))
        if change == QGraphicsItem.GraphicsItemChange.ItemPositionHasChanged and self.held:
            x, y = self.relative_pos()
            QTimer.singleShot(0, self.edits.context, lambda i=self.index: self.edits.drag(i, x, y))
        if change == QGraphicsItem.GraphicsItemChange.ItemSelectedHasChanged:
            self._pen(bool(value))
        return super().itemChange(change, value)

    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        if event.button() == Qt.MouseButton.RightButton:
            event.accept()
            QTimer.singleShot(0, self.edits.context, lambda i=self.index: self.edits.remove(i))  # after this event
            return
        self.held = event.button() == Qt.MouseButton.LeftButton
        super().mousePressEvent(event)

    def mouseDoubleClickEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            event.accept()
            QTimer.singleShot(0, self.edits.context, lambda i=self.index: self.edits.recolour(i))
            return
        super().mouseDoubleClickEvent(event)

    def mouseReleaseEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        """The end of a press: a move where the ring now is (redrawn after this event), or back where it began.
        (A grab lost without a release leaves ``held`` set on this ring only till the rings are drawn again.)
        """
        super().mouseReleaseEvent(event)
        if not self.held:
            return
        self.held = False
        if self.pos() != self.hint_pos():
            x, y = self.relative_pos()
            QTimer.singleShot(0, self.edits.context, lambda i=self.index: self.edits.move(i, x, y))
        else:
            QTimer.singleShot(0, self.edits.context, lambda i=self.index: self.edits.back(i))


def ring_key(event: QKeyEvent, rings: Sequence[Ring], remove: Callable[[int], None],
             cancel: Callable[[list[Ring]], None]) -> Callable[[], None] | None:
    """What a key on the preview does to the hints, if anything: Undo or Escape mid-drag takes the drag back (not
    the edit before it); Delete or Backspace removes the selected hint (not the queue's photos).
    """
    held = [r for r in rings if r.held]
    if held and (event.matches(QKeySequence.StandardKey.Undo) or event.key() == Qt.Key.Key_Escape):
        return lambda: cancel(held)
    selected = [r for r in rings if r.isSelected()]
    if event.key() in (Qt.Key.Key_Delete, Qt.Key.Key_Backspace) and selected:
        return lambda: remove(selected[0].index)
    return None


RGB = tuple[int, int, int]


def colour_menu(parent: QWidget | None, colours: list[RGB], pick: Callable[[RGB], None],
                recent: Sequence[RGB] = (), at: QPoint | None = None) -> QMenu:
    """A swatch per colour, most likely first; the colours of the hints placed last (``recent``), under "Used
    before"; then Other… (a colour dialog starting at the likeliest, beside the clicked point ``at``, global).
    """
    menu = QMenu(parent)
    menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    entries = [*colours, *(rgb for rgb in recent if rgb not in colours)]
    names = colour_names_apart(entries)
    for i, rgb in enumerate(entries):
        if i == len(colours):
            menu.addSection("Used before")
        swatch = QPixmap(24, 16)
        swatch.fill(QColor(*rgb))
        action = menu.addAction(QIcon(swatch), "{}  #{:02x}{:02x}{:02x}".format(names[i], *rgb))
        action.triggered.connect(lambda _=False, c=rgb: pick(c))
    menu.addSeparator()
    menu.addAction("Other…").triggered.connect(
        lambda: other_colour(parent, colours[0] if colours else None, pick, at))
    return menu


def popup_beside(menu: QMenu, point: QPoint) -> None:
    """Open ``menu`` beside a clicked point (global), right of it or else left, level with it: not over it, so the
    spot and what is around it stay in sight while a colour is picked.
    """
    menu.popup(beside(menu.sizeHint(), point))


def beside(size: QSize, point: QPoint) -> QPoint:
    """Where a window of ``size`` goes beside ``point`` (global; ``popup_beside``), its top-left corner: right or
    left of it, level with it; where neither side has the room (a wide dialog), above or below it.
    """
    screen = QGuiApplication.screenAt(point) or QGuiApplication.primaryScreen()
    room = screen.availableGeometry()
    right = room.x() + room.width() - (point.x() + MENU_GAP)  # the room beside the point on each side
    left = point.x() - MENU_GAP - room.x()
    below = room.y() + room.height() - (point.y() + MENU_GAP)
    above = point.y() - MENU_GAP - room.y()
    x = point.x() + MENU_GAP if right >= size.width() or right >= left else point.x() - MENU_GAP - size.width()
    y = point.y() - size.height() // 2
    if max(right, left) < size.width() and max(below, above) >= size.height():
        x = point.x() - size.width() // 2
        y = point.y() + MENU_GAP if below >= size.height() else point.y() - MENU_GAP - size.height()
    return on_screen(QPoint(x, y), size, room)  # where nowhere fits, on the screen all the same


def other_colour(parent: QWidget | None, start: RGB | None, pick: Callable[[RGB], None],
                 at: QPoint | None = None) -> QColorDialog:
    """The colour dialog for a hint; beside the clicked point ``at`` (global), as the menu was, so the spot shows."""
    dialog = QColorDialog(QColor(*start) if start else QColor(128, 128, 128), parent)
    dialog.setWindowTitle("Hint colour")
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.colorSelected.connect(lambda c: pick((c.red(), c.green(), c.blue())))
    if at is not None:  # placed before it shows (no jump from the centre); its frame as its parent window's
        dialog.adjustSize()
        window = parent.window() if parent is not None else None
        frame = (window.frameGeometry().size() - window.geometry().size()) if window is not None else QSize(0, 0)
        dialog.move(beside(dialog.size() + frame, at))
    dialog.open()
    return dialog
