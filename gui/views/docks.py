"""The window's side panels as dock widgets (as napari does), and the highlight shown while files are dragged in.

The settings, live plot, timing chart and summary are panels a user can hide, tab, float or move, so the
queue and the before/after preview (the central widget) keep most of the window. Every dock has an
object name: ``QMainWindow.saveState``/``restoreState`` find them by it.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QFrame, QGroupBox, QLabel, QMainWindow, QScrollArea, QTabWidget, QWidget

STATE_VERSION = 2  # saveState/restoreState: a state saved by the splitter layout (version 0) is ignored
SIDE_WIDTH = 300  # the right-hand column's default width, px
SETTINGS_SHARE = 0.55  # of the right-hand column's height; the figures get the rest


@dataclass(frozen=True)
class PanelSpec:
    name: str  # object name, used by saveState
    title: str
    tip: str


PANELS = (
    PanelSpec("engine-dock", "Engine", "Which engine, device and precision colorize, and the speed comparison"),
    PanelSpec("export-dock", "Export", "Where and how the colour photos are written"),
    PanelSpec("summary-dock", "Summary", "The last batch's figures: photos/s, how busy the model was"),
    PanelSpec("live-dock", "Live", "Processor utilization and memory, sampled every second"),
    PanelSpec("timing-dock", "Timing", "Decode, model and encode time of each photo"),
)
SETTINGS = ("engine-dock", "export-dock")
FIGURES = ("summary-dock", "live-dock", "timing-dock")


def scrolled(widget: QWidget) -> QScrollArea:
    """A panel that scrolls vertically when its dock is short, and never scrolls sideways.

    A group box loses its title: the dock's title bar already names it.
    """
    if isinstance(widget, QGroupBox):
        widget.setTitle("")
        widget.setFlat(True)
    area = QScrollArea()
    area.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # Tab goes to the panel's fields, not to the area around them
    area.setWidget(widget)
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    area.setMinimumWidth(widget.minimumSizeHint().width() + area.verticalScrollBar().sizeHint().width() + 4)
    return area


def build_docks(window: QMainWindow, contents: dict[str, QWidget]) -> dict[str, QDockWidget]:
    """Dock ``contents`` (object name -> widget) in the default layout, returned by object name.

    Default: one column on the right, the settings tabbed above the figures tabbed (Engine and Summary
    in front), so the central widget keeps the full height and all but about 300 px of the width.
    """
    docks: dict[str, QDockWidget] = {}
    for spec in PANELS:
        dock = QDockWidget(spec.title, window)
        dock.setObjectName(spec.name)
        dock.setToolTip(spec.tip)
        dock.setAllowedAreas(Qt.DockWidgetArea.AllDockWidgetAreas)
        dock.setWidget(contents[spec.name])
        dock.toggleViewAction().setStatusTip(f"Show or hide the {spec.title} panel: {spec.tip.lower()}")
        window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
        docks[spec.name] = dock
    window.setTabPosition(Qt.DockWidgetArea.AllDockWidgetAreas, QTabWidget.TabPosition.North)
    window.splitDockWidget(docks[SETTINGS[0]], docks[FIGURES[0]], Qt.Orientation.Vertical)
    for group in (SETTINGS, FIGURES):
        for name in group[1:]:
            window.tabifyDockWidget(docks[group[0]], docks[name])
        docks[group[0]].raise_()
    return docks


def size_default_docks(window: QMainWindow, docks: dict[str, QDockWidget]) -> None:
    """Give the right-hand column its default width, and share its height between settings and figures."""
    window.resizeDocks([docks[SETTINGS[0]]], [SIDE_WIDTH], Qt.Orientation.Horizontal)
    column = max(200, window.height() - 120)  # less the menu, tool and status bars, roughly
    settings = round(column * SETTINGS_SHARE)
    window.resizeDocks([docks[SETTINGS[0]], docks[FIGURES[0]]], [settings, column - settings],
                       Qt.Orientation.Vertical)


class DropHighlight(QLabel):
    """A translucent frame over the window while files are dragged over it: "let go here"."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__("Drop photos or folders to queue them", parent)
        self.setObjectName("drop-highlight")
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.setStyleSheet("#drop-highlight { background: rgba(30, 136, 229, 40); border: 3px dashed #1e88e5;"
                           " color: #0d47a1; font-size: 16pt; font-weight: bold; }")
        self.hide()

    def show_over(self, widget: QWidget) -> None:
        """Cover ``widget`` (the window itself, or one of its children)."""
        parent = self.parentWidget()
        assert parent is not None
        self.setGeometry(parent.rect() if widget is parent else widget.geometry())
        self.raise_()
        self.show()
