"""A colour hint drawn on the preview: a ring filled with its colour, dragged to move, right-clicked to remove.
The edits go back through ``RingEdits`` (the hint editor), after the mouse event that made them. And the popup
of the model's likeliest colours for a click, with Other… for any colour.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, QPoint, QPointF, Qt, QTimer
from PySide6.QtGui import QBrush, QColor, QGuiApplication, QIcon, QPen, QPixmap
from PySide6.QtWidgets import (
    QColorDialog,
    QGraphicsEllipseItem,
    QGraphicsItem,
    QGraphicsSceneMouseEvent,
    QMenu,
    QWidget,
)

from engine.hints import Hint
from gui.model.colour_names import colour_name

RING_RADIUS = 7  # screen pixels, at any zoom
MENU_GAP = 40  # screen pixels left clear on each side of a click: the colours are picked looking at the spot


@dataclass(frozen=True)
class RingEdits:
    """What a ring's mouse does: ``remove(index)``, ``move(index, x, y)`` (on release), ``recolour(index)`` (a
    double-click), ``drag(index, x, y)`` (each step of a drag, before its release); run later in ``context``'s thread.
    """

    context: QObject
    remove: Callable[[int], None]
    move: Callable[[int, float, float], None]
    recolour: Callable[[int], None]
    drag: Callable[[int, float, float], None]


class Ring(QGraphicsEllipseItem):
    """One hint on a scene: a small ring filled with its colour, the same size at every zoom."""

    def __init__(self, edits: RingEdits, index: int, hint: Hint, width: int, height: int) -> None:
        r = RING_RADIUS
        super().__init__(-r, -r, 2 * r, 2 * r)
        self.edits, self.index, self.hint = edits, index, hint
        self.size = (width, height)
        self.held = False  # the left button is down on this ring: a move is a drag
        self.setPos(hint.x * width, hint.y * height)
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

    def _pen(self, selected: bool) -> None:
        pen = QPen(QColor(255, 210, 0) if selected else QColor(255, 255, 255))
        pen.setWidthF(3 if selected else 2)
        self.setPen(pen)

    def itemChange(self, change: QGraphicsItem.GraphicsItemChange, value: Any) -> Any:
        if change == QGraphicsItem.GraphicsItemChange.ItemPositionChange:  # stay on the photo
            w, h = self.size
            return QPointF(min(max(value.x(), 0.0), w), min(max(value.y(), 0.0), h))
        if change == QGraphicsItem.GraphicsItemChange.ItemPositionHasChanged and self.held:
            w, h = self.size
            x, y = value.x() / w, value.y() / h
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
        self.held = False
        super().mouseReleaseEvent(event)
        w, h = self.size
        if self.pos() != QPointF(self.hint.x * w, self.hint.y * h):  # dragged: redrawn after this event
            x, y = self.pos().x() / w, self.pos().y() / h
            QTimer.singleShot(0, self.edits.context, lambda i=self.index: self.edits.move(i, x, y))


RGB = tuple[int, int, int]


def colour_menu(parent: QWidget | None, colours: list[RGB], pick: Callable[[RGB], None],
                recent: Sequence[RGB] = ()) -> QMenu:
    """A swatch per colour, most likely first; the colours of the hints placed last (``recent``), under "Used
    before"; then Other… (a colour dialog starting at the likeliest).
    """
    menu = QMenu(parent)
    menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    used = [rgb for rgb in recent if rgb not in colours]
    for i, rgb in enumerate([*colours, *used]):
        if i == len(colours):
            menu.addSection("Used before")
        swatch = QPixmap(24, 16)
        swatch.fill(QColor(*rgb))
        action = menu.addAction(QIcon(swatch), "{}  #{:02x}{:02x}{:02x}".format(colour_name(rgb), *rgb))
        action.triggered.connect(lambda _=False, c=rgb: pick(c))
    menu.addSeparator()
    menu.addAction("Other…").triggered.connect(lambda: other_colour(parent, colours[0] if colours else None, pick))
    return menu


def popup_beside(menu: QMenu, point: QPoint) -> None:
    """Open ``menu`` beside a clicked point (global), right of it or else left, level with it: not over it, so the
    spot and what is around it stay in sight while a colour is picked.
    """
    size = menu.sizeHint()
    screen = QGuiApplication.screenAt(point) or QGuiApplication.primaryScreen()
    room = screen.availableGeometry()
    x = point.x() + MENU_GAP
    if x + size.width() > room.right() and point.x() - MENU_GAP - size.width() >= room.left():
        x = point.x() - MENU_GAP - size.width()
    y = min(max(point.y() - size.height() // 2, room.top()), max(room.top(), room.bottom() - size.height()))
    menu.popup(QPoint(x, y))


def other_colour(parent: QWidget | None, start: RGB | None, pick: Callable[[RGB], None]) -> None:
    dialog = QColorDialog(QColor(*start) if start else QColor(128, 128, 128), parent)
    dialog.setWindowTitle("Hint colour")
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.colorSelected.connect(lambda c: pick((c.red(), c.green(), c.blue())))
    dialog.open()
