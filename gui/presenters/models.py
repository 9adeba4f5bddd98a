"""The models: the Engine panel's Model choice (the shipped model and those taught from a person's photos),
Model > Show Model Card and Model > Delete Tuned Model….
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QDialog, QMessageBox, QWidget

from gui.presenters.backend import Backend
from gui.views.engine_panel import EnginePanel
from gui.views.help_dialogs import text_dialog


class ModelsPresenter(QObject):
    def __init__(self, backend: Backend, engine_panel: EnginePanel, say: Callable[[str], None],
                 parent: QWidget) -> None:
        super().__init__(parent)
        self.backend, self.engine_panel, self.say, self._parent = backend, engine_panel, say, parent
        self.card_dialog: QDialog | None = None
        self.delete_box: QMessageBox | None = None
        engine_panel.card_requested.connect(self.show_card)
        self.refresh()

    def refresh(self, select: str | None = None) -> str | None:
        """List the models again (after a teach or a delete); choose ``select`` when given and usable. Returns the
        name of the model chosen before (what a kept model replaces); None where ``select`` could not be chosen
        (this says why).
        """
        before = self.engine_panel.chosen_model().name
        self.engine_panel.set_models(self.backend.models())
        if select is not None and not self.engine_panel.select_model(select):
            self.say(f"The model '{select}' cannot be used: colorizing with "
                     f"{self.engine_panel.chosen_model().name}")
            return None
        return before

    def card_text(self) -> str:
        """The chosen model's card (Markdown): the ``.md`` beside its weights."""
        m = self.engine_panel.chosen_model()
        try:
            return m.card_file.read_text(encoding="utf-8")
        except OSError as err:
            return f"# {m.name}\n\nNo model card could be read beside {m.path}: {err.strerror or err}.\n\n{m.line}\n"

    def show_card(self) -> None:
        m = self.engine_panel.chosen_model()
        self.card_dialog = text_dialog(self._parent, f"Model Card: {m.name}", self.card_text(), 640, 560,
                                       markdown=True)
        self.card_dialog.open()  # not exec(): the window (and tests) keep running

    def delete_chosen(self) -> None:
        """Ask, then delete the chosen tuned model (never one that comes with the app); the Engine panel goes back to
        auto, the default.
        """
        m = self.engine_panel.chosen_model()
        if m.bundled:
            self.say(f"'{m.name}' comes with the app and cannot be deleted: choose a tuned model in the Engine panel "
                     "first")
            return
        box = QMessageBox(QMessageBox.Icon.Question, "Delete Tuned Model",
                          f"Delete the model '{m.name}' and its card?\n\n{m.path}",
                          QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel, self._parent)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        yes = box.button(QMessageBox.StandardButton.Yes)
        box.buttonClicked.connect(lambda button: self.delete(m.name) if button is yes else None)
        box.open()  # not exec(): the window (and tests) keep running
        self.delete_box = box

    def delete(self, name: str) -> bool:
        problem = self.backend.delete_model(name)
        self.refresh()
        self.say(f"Could not delete the model '{name}': {problem}" if problem else f"Deleted the model '{name}'")
        return problem is None
