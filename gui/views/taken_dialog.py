"""The question before a run whose photos mostly have outputs already: a second run of a folder would otherwise
fill the output folder with "photo (1)" copies of every photo, unasked.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractButton, QMessageBox, QWidget

from engine.messages import counted

COPIES, SKIP = "copies", "skip"  # the answers; "" for Cancel


def ask_about_taken(parent: QWidget, taken: int, total: int, folder: Path,
                    answer: Callable[[str], None]) -> QMessageBox:
    """Opens the question (window-modal, not blocking) and calls ``answer`` with the choice once it is made."""
    some = "All" if taken == total else f"{taken} of the"
    box = QMessageBox(QMessageBox.Icon.Question, "Outputs exist already",
                      f"{some} {counted(total, 'photo')} to colorize have an output in {folder} already.",
                      QMessageBox.StandardButton.Cancel, parent)
    box.setInformativeText("Write them again as copies beside the old ones (\"photo (1).jpg\"), or skip the photos "
                           "that have one? Export's \"If it exists\" decides without asking; it can also replace them.")
    copies = box.addButton("Write Copies", QMessageBox.ButtonRole.AcceptRole)
    skip = box.addButton("Skip Them", QMessageBox.ButtonRole.AcceptRole)
    box.setDefaultButton(skip)

    def clicked(button: QAbstractButton) -> None:
        answer(COPIES if button is copies else SKIP if button is skip else "")

    box.buttonClicked.connect(clicked)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.open()
    return box
