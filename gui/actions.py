"""Actions as data: one ``ActionSpec`` per command (its text, shortcut, menu and toolbar place, and when it is
enabled), realised into ``QAction``s, menus and the toolbar by the functions here (after napari's
``_qapp_model``). The window's table is ``gui.main_window.ACTIONS``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Generic, TypeVar

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow, QMenu

W = TypeVar("W")
Shortcut = str | QKeySequence.StandardKey | None


@dataclass(frozen=True)
class ActionState:
    """What decides which actions are enabled: a batch running, and what the queue holds."""

    running: bool
    has_rows: bool
    left: int  # queued or failed: something left to run
    finished: int  # done, skipped or failed: something Run Again can redo
    counting: bool = False  # a large queue's outputs are being looked for before its run starts


@dataclass(frozen=True)
class ActionSpec(Generic[W]):
    """One command of the window. ``run(window)`` on trigger; ``toggle(window, checked)`` for a checkable one;
    ``adopt(window)`` for an action its owner makes (undo/redo, the hint editor's). ``menu`` with ``section``
    (a separator between sections) and ``order`` (within one) place it in a menu, ``toolbar`` (a section
    number) on the toolbar; ``enabled`` and ``visible`` follow the ``ActionState``.
    """

    name: str
    text: str = ""
    run: Callable[[W], object] | None = None
    shortcut: Shortcut = None
    _: KW_ONLY
    tip: str = ""
    toggle: Callable[[W, bool], object] | None = None
    adopt: Callable[[W], QAction] | None = None
    menu: str | None = None
    section: int = 0
    order: int = 0
    toolbar: int | None = None
    enabled: Callable[[ActionState], bool] | None = None
    visible: Callable[[ActionState], bool] | None = None


def make_action(spec: ActionSpec[W], window: W, parent: QObject) -> QAction:
    if spec.adopt is not None:
        return spec.adopt(window)
    action = QAction(spec.text, parent)
    if spec.shortcut is not None:
        action.setShortcut(QKeySequence(spec.shortcut))
    if spec.tip:
        action.setStatusTip(spec.tip)
        action.setToolTip(f"{spec.tip} ({action.shortcut().toString()})" if spec.shortcut is not None else spec.tip)
    toggle, run = spec.toggle, spec.run
    if toggle is not None:
        action.setCheckable(True)
        action.toggled.connect(lambda on: toggle(window, on))
    elif run is not None:
        action.triggered.connect(lambda: run(window))
    return action


def build_actions(specs: Sequence[ActionSpec[W]], window: W, parent: QObject) -> dict[str, QAction]:
    """Every spec's action by name, in the table's order (the order Help lists the shortcuts in)."""
    return {spec.name: make_action(spec, window, parent) for spec in specs}


def build_menus(bar_owner: QMainWindow, titles: Sequence[str], specs: Sequence[ActionSpec[W]],
                actions: Mapping[str, QAction]) -> dict[str, QMenu]:
    """The menus in ``titles`` order; in each, the specs by section then order, a separator between sections."""
    menus: dict[str, QMenu] = {}
    for title in titles:
        menu = menus[title] = bar_owner.menuBar().addMenu(title)
        placed = sorted((s for s in specs if s.menu == title), key=lambda s: (s.section, s.order))
        for i, spec in enumerate(placed):
            if i and spec.section != placed[i - 1].section:
                menu.addSeparator()
            menu.addAction(actions[spec.name])
    return menus


def build_toolbar(window: QMainWindow, specs: Sequence[ActionSpec[W]], actions: Mapping[str, QAction]) -> None:
    toolbar = window.addToolBar("Main")
    toolbar.setObjectName("main-toolbar")
    toolbar.setMovable(False)
    toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
    placed = sorted((s for s in specs if s.toolbar is not None), key=lambda s: s.toolbar or 0)
    for i, spec in enumerate(placed):
        if i and spec.toolbar != placed[i - 1].toolbar:
            toolbar.addSeparator()
        toolbar.addAction(actions[spec.name])


def update_actions(specs: Sequence[ActionSpec[W]], actions: Mapping[str, QAction], state: ActionState) -> None:
    for spec in specs:
        if spec.enabled is not None:
            actions[spec.name].setEnabled(spec.enabled(state))
        if spec.visible is not None:
            actions[spec.name].setVisible(spec.visible(state))


def shortcut_text(action: QAction) -> str:
    return action.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
