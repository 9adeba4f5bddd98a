"""Model > Teach from Colour Photos…: the dialog's widgets (its logic is ``gui.presenters.teach``).

Three phases: setting up (folders, name, minutes, the count and the estimate), training (stage, progress with the
time left, the loss as it falls) and the result (the verdict, held-out photos before and after, Keep or Discard).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDialog,
    QDoubleSpinBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from gui.views.charts import LossPlot
from gui.views.placement import on_screen

MESSAGE_COLOURS = {"error": "#c62828", "warning": "#a15c00", "info": "#2e7d32", "": "palette(text)"}
VERDICT_COLOURS = {"better": "#2e7d32", "worse": "#c62828", "within chance": "#a15c00"}
PICTURE_SIDE = 200  # the longer side of each before/after picture on screen
CAPTION_WIDTH = 400  # the most a held-out photo's name takes over its pictures (pixels)
PHASES = ("setup", "running", "result")


def _folders_of(event: QDropEvent | QDragEnterEvent | QDragMoveEvent) -> list[Path]:
    urls = event.mimeData().urls() if event.mimeData().hasUrls() else []
    return [Path(u.toLocalFile()) for u in urls if u.isLocalFile() and Path(u.toLocalFile()).is_dir()]


class FolderList(QListWidget):
    """The folders of colour photos; folders dropped on it are added (``dropped``)."""

    dropped = Signal(list)  # [Path]

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAcceptDrops(True)
        self.setDragDropMode(QAbstractItemView.DragDropMode.DropOnly)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setMinimumHeight(80)
        self.setToolTip("Folders of colour photos (their subfolders too); drop folders here to add them")

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        event.setAccepted(bool(_folders_of(event)))

    def dragMoveEvent(self, event: QDragMoveEvent) -> None:
        event.setAccepted(bool(_folders_of(event)))

    def dropEvent(self, event: QDropEvent) -> None:
        folders = _folders_of(event)
        if folders:
            event.acceptProposedAction()
            self.dropped.emit(folders)


class ExampleGrid(QWidget):
    """Held-out photos, each a line (its name and gain) over a row of pictures: the original, the colours of the
    model the tune started from, the tuned model's. The pictures have the whole width: beside a column of names
    the tuned model's went out of sight in a dialog under about 900 px.
    """

    COLUMNS = (("original", "Original (held out)"), ("start", "Shipped model"), ("tuned", "Tuned model"))

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.grid = QGridLayout(self)
        self.grid.setColumnStretch(len(self.COLUMNS), 1)  # spare width to the right, not between the pictures
        self.pictures: list[QLabel] = []

    def set_examples(self, examples: list[dict[str, Any]], start: str = "Shipped model") -> None:
        """``start``: the title of the column of the model the tune started from."""
        while self.grid.count():
            item = self.grid.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.deleteLater()
        self.pictures = []
        for col, (key, title) in enumerate(self.COLUMNS):
            self.grid.addWidget(QLabel(f"<b>{start if key == 'start' else title}</b>"), 0, col,
                                Qt.AlignmentFlag.AlignCenter)
        for i, ex in enumerate(examples):
            gain = ex.get("gain_db")
            caption = QLabel()  # a long name is cut in its middle, whole in the tooltip
            name = caption.fontMetrics().elidedText(Path(str(ex.get("name", ""))).name, Qt.TextElideMode.ElideMiddle,
                                                    CAPTION_WIDTH)
            caption.setText(name + (f"  ·  {gain:+.2f} dB" if isinstance(gain, int | float) else ""))
            caption.setToolTip(str(ex.get("name", "")))
            self.grid.addWidget(caption, 1 + 2 * i, 0, 1, len(self.COLUMNS))
            for col, (key, _title) in enumerate(self.COLUMNS):
                picture = QLabel()
                pixmap = QPixmap(str(ex.get(key, "")))
                if pixmap.isNull():
                    picture.setText("(picture missing)")
                else:
                    picture.setPixmap(pixmap.scaled(PICTURE_SIDE, PICTURE_SIDE, Qt.AspectRatioMode.KeepAspectRatio,
                                                    Qt.TransformationMode.SmoothTransformation))
                self.grid.addWidget(picture, 2 + 2 * i, col, Qt.AlignmentFlag.AlignCenter)
                self.pictures.append(picture)

    def shown_pictures(self) -> int:
        """How many pictures are on show (not missing)."""
        return sum(1 for p in self.pictures if not p.pixmap().isNull())


START_TIPS = {  # what each model to start from is for; it is measured against the tuned one and stays as it is
    "shipped": "Start from the model that comes with the app, for grey copies and clean scans; it stays as it is",
    "old-prints": "Start from Old prints, trained on scans of old prints (grain, fading, toning): for photos you will "
                  "colorize from such scans. Your photos are shown to it partly as such scans too, as it was "
                  "trained, so it keeps its hold on them; it stays as it is",
    "": "Start from this model taught before, to teach it more; it stays as it is under its own name",
}


class BaseChoice(QComboBox):
    """The model a tune starts from, by name (the item's data), shown by its label."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setToolTip("The model the training starts from and is measured against; it stays as it is")
        self.currentIndexChanged.connect(lambda i: self.setToolTip(str(self.itemData(i, Qt.ItemDataRole.ToolTipRole))))

    def set_bases(self, bases: list[tuple[str, str]], chosen: str) -> None:
        """The models to start from, (name, label) each; ``chosen`` selected where listed, else the first."""
        self.blockSignals(True)
        self.clear()
        for name, label in bases:
            self.addItem(label, name)
            self.setItemData(self.count() - 1, START_TIPS.get(name, START_TIPS[""]), Qt.ItemDataRole.ToolTipRole)
        self.setCurrentIndex(max(0, self.findData(chosen)))
        self.blockSignals(False)
        self.setToolTip(str(self.itemData(self.currentIndex(), Qt.ItemDataRole.ToolTipRole)))

    def base(self) -> str:
        return str(self.currentData() or "")


class TeachDialog(QDialog):
    """Signals are the person's requests; the presenter answers them through the methods."""

    add_folder_clicked = Signal()
    folders_changed = Signal()
    settings_changed = Signal()  # the name, the minutes or the replace box
    start_clicked = Signal()
    cancel_clicked = Signal()
    keep_clicked = Signal()
    discard_clicked = Signal()
    close_requested = Signal()  # Close, Esc or the window's close button: the presenter decides

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Teach from Colour Photos")
        self.phase = "setup"
        self._build_setup()
        self._build_progress()
        self._build_result()
        self.start_button = QPushButton("Start Training")
        self.start_button.setDefault(True)
        self.cancel_button = QPushButton("Cancel Training")
        self.cancel_button.setToolTip("Stop within seconds; nothing is saved and the training's work is removed")
        self.keep_button = QPushButton("Keep")
        self.keep_button.setToolTip("Keep the model under its name and colorize with it")
        self.discard_button = QPushButton("Discard")
        self.discard_button.setToolTip("Delete the tuned model; the model it started from stays as it was")
        self.close_button = QPushButton("Close")
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        for button in (self.start_button, self.cancel_button, self.keep_button, self.discard_button,
                       self.close_button):
            buttons.addWidget(button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.setup_box)
        layout.addWidget(self.progress_box, 1)
        layout.addWidget(self.result_box, 2)
        layout.addLayout(buttons)
        self.start_button.clicked.connect(self.start_clicked)
        self.cancel_button.clicked.connect(self.cancel_clicked)
        self.keep_button.clicked.connect(self.keep_clicked)
        self.discard_button.clicked.connect(self.discard_clicked)
        self.close_button.clicked.connect(self.close_requested)
        self.set_phase("setup")
        self.resize(820, 520)

    def _build_setup(self) -> None:
        self.setup_box = QGroupBox("Your colour photos")
        intro = QLabel("The model learns from colour photos like the ones you colorize (the same people, places and "
                       "film). A share of them is held out, never trained on, to measure the result against the "
                       "model it starts from, which stays as it is.")
        intro.setWordWrap(True)
        self.folder_list = FolderList()
        self.add_button = QPushButton("Add Folder…")
        self.remove_button = QPushButton("Remove")
        side = QVBoxLayout()
        side.addWidget(self.add_button)
        side.addWidget(self.remove_button)
        side.addStretch(1)
        folders = QHBoxLayout()
        folders.addWidget(self.folder_list, 1)
        folders.addLayout(side)
        self.count_label = QLabel("No folders yet")
        self.name_edit = QLineEdit()
        self.name_edit.setPlaceholderText("e.g. Family 1950s")
        self.name_edit.setToolTip("The tuned model's name: letters, digits, spaces, '-', '_' or '.'")
        self.replace_box = QCheckBox("Replace the model of this name")
        self.minutes_spin = QDoubleSpinBox()
        self.minutes_spin.setRange(1, 600)
        self.minutes_spin.setDecimals(0)
        self.minutes_spin.setValue(10)
        self.minutes_spin.setSuffix(" min")
        self.minutes_spin.setToolTip("How long to train (about); longer learns more from many photos")
        self.base_combo = BaseChoice()
        self.estimate_label = QLabel()
        self.message_label = QLabel()
        line = self.fontMetrics().lineSpacing()
        for label, lines in ((self.count_label, 1), (self.estimate_label, 2), (self.message_label, 2)):
            label.setWordWrap(True)
            label.setMinimumHeight(lines * line)  # its room kept while empty: the fields do not move under a click
        form = QFormLayout()
        form.addRow("Name", self.name_edit)
        form.addRow("", self.replace_box)
        form.addRow("Start from", self.base_combo)
        form.addRow("Training time", self.minutes_spin)
        layout = QVBoxLayout(self.setup_box)
        layout.addWidget(intro)
        layout.addLayout(folders)
        layout.addWidget(self.count_label)
        layout.addLayout(form)
        layout.addWidget(self.estimate_label)
        layout.addWidget(self.message_label)
        self.add_button.clicked.connect(self.add_folder_clicked)
        self.remove_button.clicked.connect(self._remove_selected)
        self.folder_list.dropped.connect(self.add_folders)
        self.name_edit.textChanged.connect(self.settings_changed)
        self.minutes_spin.valueChanged.connect(self.settings_changed)
        self.replace_box.toggled.connect(self.settings_changed)
        self.base_combo.currentIndexChanged.connect(self.settings_changed)

    def _build_progress(self) -> None:
        self.progress_box = QGroupBox("Training")
        self.stage_label = QLabel()
        self.progress_bar = QProgressBar()
        self.progress_bar.setRange(0, 1000)
        self.loss_plot = LossPlot()
        layout = QVBoxLayout(self.progress_box)
        layout.addWidget(self.stage_label)
        layout.addWidget(self.progress_bar)
        layout.addWidget(self.loss_plot, 1)

    def _build_result(self) -> None:
        self.result_box = QGroupBox("Measured on the photos held out")
        self.verdict_label = QLabel()
        self.verdict_label.setWordWrap(True)
        self.verdict_label.setToolTip("Each model colours photos the training never saw, and its colours are compared "
                                      "with their true ones (in dB: higher is closer). The "
                                      "interval holds the true difference nine times in ten")
        self.examples = ExampleGrid()
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.examples)
        scroll.setMinimumHeight(240)
        self.keep_hint = QLabel("Keep saves it under its name and makes it the Engine panel's model; Discard "
                                "deletes it. Closing keeps it without choosing it.")
        self.keep_hint.setWordWrap(True)
        layout = QVBoxLayout(self.result_box)
        layout.addWidget(self.verdict_label)
        layout.addWidget(scroll, 1)
        layout.addWidget(self.keep_hint)

    # -- the setup ---------------------------------------------------------------------------------------------
    def folders(self) -> list[Path]:
        return [Path(self.folder_list.item(i).text()) for i in range(self.folder_list.count())]

    def add_folders(self, folders: list[Path]) -> None:
        known = set(self.folders())
        new = [Path(f) for f in folders if Path(f) not in known]
        for folder in new:
            self.folder_list.addItem(str(folder))
        if new:
            self.folders_changed.emit()

    def _remove_selected(self) -> None:
        for item in self.folder_list.selectedItems():
            self.folder_list.takeItem(self.folder_list.row(item))
        self.folders_changed.emit()

    def name(self) -> str:
        return self.name_edit.text().strip()

    def minutes(self) -> float:
        return self.minutes_spin.value()

    def set_minutes(self, minutes: float) -> None:
        self.minutes_spin.setValue(minutes)

    def replace_confirmed(self) -> bool:
        return not self.replace_box.isHidden() and self.replace_box.isChecked()

    def show_replace(self, taken: bool) -> None:
        self.replace_box.setVisible(taken)

    def set_count_text(self, text: str) -> None:
        self.count_label.setText(text)

    def set_estimate_text(self, text: str) -> None:
        self.estimate_label.setText(text)

    def set_message(self, text: str, kind: str = "") -> None:
        """A line under the setup: ``kind`` "error" (Start refused), "warning", "info" or ""."""
        self.message_label.setText(text)
        self.message_label.setStyleSheet(f"color: {MESSAGE_COLOURS.get(kind, MESSAGE_COLOURS[''])}")

    def message(self) -> str:
        return self.message_label.text()

    # -- training and the result -------------------------------------------------------------------------------
    def set_phase(self, phase: str) -> None:
        """"setup", "running" or "result": which parts and buttons are on show."""
        assert phase in PHASES, phase
        self.phase = phase
        self.setup_box.setVisible(phase == "setup")  # training and the result say what they are for
        self.progress_box.setVisible(phase != "setup")
        self.result_box.setVisible(phase == "result")
        self.start_button.setVisible(phase == "setup")
        self.cancel_button.setVisible(phase == "running")
        self.cancel_button.setEnabled(True)
        self.keep_button.setVisible(phase == "result")
        self.discard_button.setVisible(phase == "result")
        self.close_button.setVisible(phase != "running")
        if phase == "running":
            self.loss_plot.clear()
            self.set_progress(None, "starting")
        height = {"setup": 0, "running": 520, "result": 860}[phase]
        screen = self.screen().availableGeometry()
        if self.height() < height:  # room for the plot, then the pictures; never past the screen
            self.resize(min(max(self.width(), 900), screen.width() - 40), min(height, screen.height() - 60))
        if self.isVisible():  # grown or not, its bottom edge past the screen hid the last row of pictures
            frame = self.frameGeometry()
            self.move(on_screen(frame.topLeft(), frame.size(), screen))

    def set_training_title(self, text: str) -> None:
        self.progress_box.setTitle(text)

    def set_stage(self, text: str) -> None:
        self.stage_label.setText(text)

    def set_progress(self, fraction: float | None, text: str) -> None:
        """``fraction`` 0..1, or None while nothing says how far (the bar shows it is busy)."""
        bar = self.progress_bar
        if fraction is None:
            bar.setRange(0, 0)
        else:
            bar.setRange(0, 1000)
            bar.setValue(round(1000 * min(1.0, max(0.0, fraction))))
        bar.setFormat(text)
        bar.setTextVisible(True)

    def cancelling(self) -> None:
        self.cancel_button.setEnabled(False)
        self.set_stage("Cancelling…")

    def show_result(self, verdict_text: str, verdict: str, examples: list[dict[str, Any]],
                    start: str = "Shipped model") -> None:
        colour = VERDICT_COLOURS.get(verdict, "palette(text)")
        self.verdict_label.setText(f"<span style='font-size: 13pt; color: {colour}'><b>{verdict_text}</b></span>")
        self.examples.set_examples(examples, start)
        self.set_phase("result")

    def verdict(self) -> str:
        return self.verdict_label.text()

    def reject(self) -> None:  # Esc and the title bar's close: asked, not done (the presenter closes it)
        self.close_requested.emit()

    def confirm_stop(self, name: str) -> bool:
        """Closing while it trains: a click on the title bar must not throw away minutes of training unasked."""
        answer = QMessageBox.question(self, "Stop teaching?", f"Stop teaching “{name}”? What it has learned so far "
                                      "is not kept.", QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                                      QMessageBox.StandardButton.No)
        return answer == QMessageBox.StandardButton.Yes

    def dismiss(self) -> None:
        """Close it for good (the presenter, once nothing is left running)."""
        self.loss_plot.release()
        super().reject()
