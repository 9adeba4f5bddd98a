"""View > Show Where Unsure: stripes on the After side where the model is unsure of its colour, so a person sees
where a hint is most worth placing (a grey wall it is sure of and a colour it could not tell look alike without).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from PySide6.QtCore import QObject, QTimer, Slot
from PySide6.QtGui import QAction, QKeySequence

from engine.hints import Hint
from engine.options import ColorizeSettings
from gui.presenters.backend import Recolourer
from gui.presenters.hints import HintEditor
from gui.views.preview import BeforeAfterView


class UnsurePresenter(QObject):
    """Asks the preview's model (``Recolourer.doubt``) for the photo on show whenever its colour changes while the
    action is on; an answer for another photo or other hints than those on show now is dropped.
    """

    def __init__(self, preview: BeforeAfterView, editor: HintEditor, recolourer: Recolourer | None,
                 settings: Callable[[], ColorizeSettings], running: Callable[[], bool],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.preview, self.editor, self.recolourer, self.settings = preview, editor, recolourer, settings
        self.running = running  # no model run of its own beside a batch's (each photo done would ask): after it
        self.action = QAction("Show Where &Unsure", self)
        self.action.setCheckable(True)
        self.action.setShortcut(QKeySequence("Ctrl+U"))
        self.action.setToolTip("Stripe the colour where the model is unsure of it (Ctrl+U): where a hint helps most")
        self.action.setEnabled(recolourer is not None)
        self.action.toggled.connect(self.refresh)
        # Asked once the event that changed the colour is over: a new photo reaches the editor (its key and
        # hints) after the preview has shown it.
        preview.colour_changed.connect(lambda: QTimer.singleShot(0, self, self.refresh))
        if recolourer is not None:
            recolourer.doubted.connect(self._on_doubt)

    @Slot()
    def refresh(self, *_: object) -> None:
        """The photo on show, its colour, the model, a batch's start or end, or the action changed: ask again (the
        stripes on show stay until the answer), or take the stripes off.
        """
        L, key = self.preview.grey(), self.editor.key
        if not self.action.isChecked() or self.recolourer is None or L is None or key is None \
                or self.preview.colour() is None or self.running():
            self.preview.set_doubt(None)
            return
        self.recolourer.doubt(key, L, self.editor.hints(), self.settings(), self.editor.path)

    def _on_doubt(self, key: int, hints: tuple[Hint, ...], settings: ColorizeSettings, doubt: np.ndarray) -> None:
        """An answer counts for the photo, hints and model on show now only: a late one for others is dropped."""
        if self.action.isChecked() and key == self.editor.key and hints == self.editor.hints() \
                and settings == self.settings() and not self.running():
            self.preview.set_doubt(doubt)
