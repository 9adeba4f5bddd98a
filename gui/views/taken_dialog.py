"""The question before a run whose photos mostly have outputs already: a second run of a folder would otherwise
fill the output folder with "photo (1)" copies of every photo, unasked.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractButton, QMessageBox, QWidget

from engine.messages import part_of

ANSWERS = {"Write Copies": "new_name", "Replace Them": "overwrite", "Skip Them": "skip"}  # -> if_exists, this run


def ask_about_taken(parent: QWidget, taken: int, total: int, folder: Path,
                    answer: Callable[[str], None]) -> QMessageBox:
    """Opens the question (window-modal, not blocking); ``answer`` gets the run's ``ExportOptions.if_exists``
    ("new_name", "overwrite" or "skip"), or "" for Cancel, once it is chosen.
    """
    who = f"{part_of(taken, total, 'photo')} to colorize {'has' if total == 1 else 'have'}"
    box = QMessageBox(QMessageBox.Icon.Question, "Outputs exist already",
                      f"{who[0].upper()}{who[1:]} an output in {folder} already.", QMessageBox.StandardButton.Cancel,
                      parent)
    box.setInformativeText("Write them again as copies beside the old ones (named like \"photo (1)\"), replace the "
                           "old ones, or skip the photos that have one? For this run only. Not to be asked: set "
                           "Export's \"If it exists\" to overwrite or skip.")
    buttons = {box.addButton(label, QMessageBox.ButtonRole.DestructiveRole if mode == "overwrite"
                             else QMessageBox.ButtonRole.AcceptRole): mode for label, mode in ANSWERS.items()}
    box.setDefaultButton(next(b for b, mode in buttons.items() if mode == "skip"))

    def clicked(button: QAbstractButton) -> None:
        answer(next((mode for b, mode in buttons.items() if b is button), ""))  # Cancel: ""

    box.buttonClicked.connect(clicked)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.open()
    return box
