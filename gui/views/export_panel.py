"""Batch folder export: output folder, subfolders, file names, format, quality, clashes, metadata.

The engine's output planner decides the final paths and never overwrites an input, whatever
is chosen here ("overwrite" only ever replaces earlier outputs).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

from engine.options import ExportOptions, pattern_problem

FORMAT_LABELS = {"keep": "Same as the input", "png": "PNG", "jpg": "JPEG", "webp": "WebP", "tiff": "TIFF"}
IF_EXISTS_LABELS = {"new_name": "Write under a new name", "skip": "Skip the photo", "overwrite": "Overwrite the output"}
COLOUR_LABELS = {"colorize": "Colorize them again", "skip": "Skip them"}
LOSSY = ("keep", "jpg", "webp")  # formats where the quality setting can matter


def _combo(labels: dict[str, str]) -> QComboBox:
    combo = QComboBox()
    for name, label in labels.items():
        combo.addItem(label, name)
    return combo


def _select(combo: QComboBox, name: str) -> None:
    i = combo.findData(name)
    if i >= 0:
        combo.setCurrentIndex(i)


class ExportPanel(QGroupBox):
    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Export", parent)
        self.folder = QLineEdit()
        self.folder.setPlaceholderText("Output folder")
        self.browse = QPushButton("Choose…")
        self.browse.clicked.connect(self.choose_folder)
        self.open_button = QPushButton("Open output folder")
        self.open_button.clicked.connect(self.open_folder)
        folder_row = QHBoxLayout()
        folder_row.setContentsMargins(0, 0, 0, 0)
        folder_row.addWidget(self.folder, 1)
        folder_row.addWidget(self.browse)

        self.mirror = QCheckBox("Mirror input subfolders")
        self.mirror.setToolTip("A dropped folder's subfolders are recreated inside the output folder")
        self.pattern = QLineEdit()
        self.pattern.setToolTip("File name without extension: {stem} is the input's name, {index} its place in the "
                                "queue")
        self.pattern_error = QLabel()
        self.pattern_error.setStyleSheet("color: #c62828")
        self.pattern_error.setWordWrap(True)
        self.pattern_error.hide()
        self.format = _combo(FORMAT_LABELS)
        self.quality = QSpinBox()
        self.quality.setRange(1, 100)
        self.quality.setToolTip("JPEG and WebP quality")
        self.if_exists = _combo(IF_EXISTS_LABELS)
        self.metadata = QCheckBox("Keep EXIF and ICC metadata")
        self.colour_inputs = _combo(COLOUR_LABELS)
        self.colour_inputs.setToolTip("What to do with inputs that are already in colour")

        form = QFormLayout(self)
        form.addRow("Folder", folder_row)
        form.addRow(self.mirror)
        form.addRow("File name", self.pattern)
        form.addRow(self.pattern_error)
        form.addRow("Format", self.format)
        form.addRow("JPEG quality", self.quality)
        form.addRow("If it exists", self.if_exists)
        form.addRow("Colour inputs", self.colour_inputs)
        form.addRow(self.metadata)
        form.addRow(self.open_button)

        self.set_choice(ExportOptions())
        self.folder.textChanged.connect(self.changed)
        self.pattern.textChanged.connect(self._check_pattern)
        self.format.currentIndexChanged.connect(self._update_quality)
        for signal in (self.mirror.toggled, self.format.currentIndexChanged, self.quality.valueChanged,
                       self.if_exists.currentIndexChanged, self.metadata.toggled,
                       self.colour_inputs.currentIndexChanged):
            signal.connect(self.changed)

    def set_locked(self, locked: bool) -> None:
        """Lock the options while a batch runs (it uses a snapshot); opening the folder stays possible."""
        for w in (self.folder, self.browse, self.mirror, self.pattern, self.format, self.quality, self.if_exists,
                  self.metadata, self.colour_inputs):
            w.setEnabled(not locked)
        if not locked:
            self._update_quality()

    def _check_pattern(self) -> None:
        problem = pattern_problem(self.pattern.text())
        self.pattern_error.setText(problem or "")
        self.pattern_error.setVisible(problem is not None)
        self.changed.emit()

    def _update_quality(self) -> None:
        self.quality.setEnabled(self.format.currentData() in LOSSY)

    def problem(self) -> str | None:
        """Why these options cannot start a batch, or None."""
        if not self.folder.text().strip():
            return "choose an output folder first"
        return pattern_problem(self.pattern.text())

    def choice(self) -> ExportOptions:
        return ExportOptions(output_dir=Path(self.folder.text().strip()).expanduser(),
                            format=self.format.currentData(), jpeg_quality=self.quality.value(),
                            mirror_subfolders=self.mirror.isChecked(), name_pattern=self.pattern.text(),
                            if_exists=self.if_exists.currentData(), keep_metadata=self.metadata.isChecked(),
                            colour_inputs=self.colour_inputs.currentData())

    def set_choice(self, c: ExportOptions) -> None:
        self.folder.setText(str(c.output_dir))
        self.mirror.setChecked(c.mirror_subfolders)
        self.pattern.setText(c.name_pattern)
        _select(self.format, c.format)
        self.quality.setValue(c.jpeg_quality)
        _select(self.if_exists, c.if_exists)
        self.metadata.setChecked(c.keep_metadata)
        _select(self.colour_inputs, c.colour_inputs)
        self._update_quality()
        self._check_pattern()

    def set_output_dir(self, folder: Path) -> None:
        self.folder.setText(str(folder))

    def choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Output folder", str(nearest_folder(Path(self.folder.text()))))
        if folder:
            self.set_output_dir(Path(folder))

    def set_open_handler(self, handler: Callable[[], object]) -> None:
        """The Open button calls ``handler`` instead of ``open_folder`` (the window reports a failure to launch)."""
        self.open_button.clicked.disconnect(self.open_folder)
        self.open_button.clicked.connect(handler)

    def open_folder(self) -> bool:
        """Show the output folder in the file manager (created first, so there is something to open)."""
        folder = self.choice().output_dir
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            return False
        return QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder.resolve())))


def nearest_folder(path: Path) -> Path:
    """``path`` or the nearest folder above it that exists: a dialog given a folder not made yet (the first run's
    Pictures/Colorized) opens in the program's working folder instead.
    """
    if not str(path).strip() or path == Path():
        return Path.home()  # an empty field: not the working folder either
    path = path.expanduser()
    for folder in (path, *path.parents):
        if folder.is_dir():
            return folder
    return Path.home()
