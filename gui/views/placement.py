"""Where a window goes so that all of it is on the screen."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize


def on_screen(top_left: QPoint, size: QSize, room: QRect) -> QPoint:
    """The top-left corner nearest ``top_left`` at which a window of ``size`` lies inside ``room`` (a screen's
    available geometry); where it is larger than the room, its top-left corner at the room's.
    """
    x = min(max(top_left.x(), room.x()), max(room.x(), room.x() + room.width() - size.width()))
    y = min(max(top_left.y(), room.y()), max(room.y(), room.y() + room.height() - size.height()))
    return QPoint(x, y)
