"""The model, engine, device, precision, batch size, working size and the speed-comparison toggle.

Options this machine cannot run stay visible but disabled, with the reason as their tooltip,
so a user learns why (no CUDA GPU, no native bf16) instead of wondering where they went.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QStandardItemModel
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QSpinBox,
    QToolButton,
    QWidget,
)

from engine.options import ColorizeSettings, engine_device
from gui.model.models import AUTO, SHIPPED, ModelInfo

ENGINE_LABELS = {"optimized": "Optimized", "baseline": "Baseline (reference)", "openvino": "OpenVINO (CPU)"}
DEVICE_LABELS = {"auto": "Automatic", "cpu": "CPU", "cuda": "CUDA GPU"}
PRECISION_LABELS = {"auto": "Automatic", "fp32": "fp32", "fp16": "fp16", "bf16": "bf16"}
BASELINE_FP32 = "the baseline engine runs fp32 only"
OPENVINO_CPU = "the OpenVINO engine runs on the CPU only"
OPENVINO_PRECISIONS = "the OpenVINO engine runs fp32 or bf16"


def _fill(combo: QComboBox, labels: dict[str, str]) -> None:
    for name, label in labels.items():
        combo.addItem(label, name)


def _set_enabled(combo: QComboBox, name: str, reason: str | None) -> None:
    model = combo.model()
    assert isinstance(model, QStandardItemModel)
    item = model.item(combo.findData(name))
    item.setEnabled(reason is None)
    item.setToolTip(reason or "")


def _select(combo: QComboBox, name: str) -> None:
    i = combo.findData(name)
    if i >= 0:
        combo.setCurrentIndex(i)


def item_enabled(combo: QComboBox, name: str) -> bool:
    model = combo.model()
    assert isinstance(model, QStandardItemModel)
    return model.item(combo.findData(name)).isEnabled()


class EnginePanel(QGroupBox):
    """``options`` is ``gui.bridge.worker.available_options()`` (injected: this module never asks torch)."""

    changed = Signal()
    card_requested = Signal()  # the Model row's "Card" button
    device_changed = Signal(str)
    compare_toggled = Signal(bool)

    def __init__(self, options: dict[str, Any], parent: QWidget | None = None) -> None:
        super().__init__("Engine", parent)
        self.options = options
        self.models: dict[str, ModelInfo] = {}
        self.model = QComboBox()
        self.model.setToolTip("The model that colorizes: Auto (old prints or not, by how the queue's photos look), "
                              "the shipped one, the one for scans of old prints (grain, fading, toning), or one "
                              "taught from your own colour photos (Model > Teach from Colour Photos…)")
        self.card_button = QToolButton()
        self.card_button.setText("Card")
        self.card_button.setToolTip("The chosen model's card: what it learned from, and how it measured")
        self.card_button.clicked.connect(self.card_requested)
        model_row = QHBoxLayout()
        model_row.setContentsMargins(0, 0, 0, 0)
        model_row.addWidget(self.model, 1)
        model_row.addWidget(self.card_button)
        self.engine = QComboBox()
        _fill(self.engine, ENGINE_LABELS)
        for name, reason in options.get("engines", {}).items():
            _set_enabled(self.engine, name, reason)
        self.engine.setToolTip("Optimized: folded, channels-last, reduced precision. Baseline: the plain module. "
                               "OpenVINO: the same model on Intel's runtime (CPU only; colour hints run on Optimized)")
        self.device = QComboBox()
        _fill(self.device, DEVICE_LABELS)
        for name, reason in options["devices"].items():
            _set_enabled(self.device, name, reason)
        self.precision = QComboBox()
        _fill(self.precision, PRECISION_LABELS)
        self.precision.setToolTip("Automatic: the fastest precision this device runs well")
        self.batch_size = QSpinBox()
        self.batch_size.setRange(1, 64)
        self.batch_size.setToolTip("Photos per model call; larger batches use more memory")
        self.work_size = QSpinBox()
        self.work_size.setRange(64, 4096)
        self.work_size.setSingleStep(64)
        self.work_size.setSuffix(" px")
        self.work_size.setToolTip("Longer side the model works at; colour is upsampled to the photo's own size")
        self.compare = QCheckBox("Compare speed with the baseline engine")
        self.compare.setToolTip("Run every photo through both engines: times, speed-up and the largest difference")

        form = QFormLayout(self)
        form.addRow("Model", model_row)
        form.addRow("Engine", self.engine)
        form.addRow("Device", self.device)
        form.addRow("Precision", self.precision)
        form.addRow("Batch size", self.batch_size)
        form.addRow("Working size", self.work_size)
        form.addRow(self.compare)

        self.set_models([])
        self.set_choice(ColorizeSettings())
        self.model.currentIndexChanged.connect(self.changed)
        for combo in (self.engine, self.device, self.precision):
            combo.currentIndexChanged.connect(self._on_combo)
        self.batch_size.valueChanged.connect(self.changed)
        self.work_size.valueChanged.connect(self.changed)
        self.compare.toggled.connect(self.changed)
        self.compare.toggled.connect(self.compare_toggled)

    def resolved_device(self) -> str:
        name = engine_device(self.engine.currentData(), self.device.currentData())
        return self.options["auto_device"] if name == "auto" else name

    def _update_options(self) -> None:
        """Disable, with the reason, the devices and precisions the chosen engine and device cannot run."""
        openvino = self.engine.currentData() == "openvino"
        _set_enabled(self.device, "cuda", OPENVINO_CPU if openvino else self.options["devices"].get("cuda"))
        if not item_enabled(self.device, self.device.currentData()):
            _select(self.device, "auto")
        support = self.options["precisions"].get(self.resolved_device(), {})
        baseline = self.engine.currentData() == "baseline"
        for name in PRECISION_LABELS:
            reason = support.get(name, "not available on this device")
            if baseline and name not in ("auto", "fp32"):
                reason = BASELINE_FP32
            if openvino and name == "fp16":
                reason = OPENVINO_PRECISIONS
            _set_enabled(self.precision, name, reason)
        if not item_enabled(self.precision, self.precision.currentData()):
            _select(self.precision, "auto")

    def _on_combo(self) -> None:
        self._update_options()  # first: it moves the device off one the engine cannot run on
        if self.sender() in (self.device, self.engine):  # the engine too: OpenVINO runs on the CPU whatever "auto" is
            self.device_changed.emit(self.resolved_device())
        self.changed.emit()

    def comparing(self) -> bool:
        """Whether every photo also runs through the baseline engine."""
        return self.compare.isChecked()

    def set_comparing(self, on: bool) -> None:
        self.compare.setChecked(on)

    def set_models(self, models: list[ModelInfo]) -> None:
        """List ``models`` (auto and the bundled ones first; a tuned one that cannot be used disabled, its problem as
        tooltip), keeping the chosen one where it is still usable, else the default, auto (the shipped model where
        auto is not listed). Emits ``changed`` only if the choice changed.
        """
        chosen = self.model_name()
        self.model.blockSignals(True)
        self.model.clear()
        self.models = {m.name: m for m in models}
        if SHIPPED not in self.models:
            self.models = {SHIPPED: ModelInfo(SHIPPED, Path("colorizer.pt"), bundled=True), **self.models}
        model = self.model.model()
        assert isinstance(model, QStandardItemModel)
        for m in self.models.values():
            self.model.addItem(m.label, m.name)
            item = model.item(self.model.count() - 1)
            item.setEnabled(m.shipped or m.auto or not m.problem)  # never disabled: the fallback, and the default
            item.setToolTip(f"Cannot be used: {m.problem}" if m.problem else m.line)
        self.model.blockSignals(False)
        if not self.select_model(chosen or SHIPPED) and not self.select_model(AUTO):
            self.select_model(SHIPPED)
        if self.model_name() != chosen and chosen is not None:
            self.changed.emit()

    def model_name(self) -> str | None:
        """The chosen model's name (None before any is listed)."""
        return self.model.currentData()

    def chosen_model(self) -> ModelInfo:
        return self.models[self.model_name() or SHIPPED]

    def select_model(self, name: str) -> bool:
        """Choose the model of this name; False (the choice unchanged) where it is not listed or cannot be used."""
        i = self.model.findData(name)
        if i < 0 or not item_enabled(self.model, name):
            return False
        self.model.setCurrentIndex(i)
        return True

    def choice(self) -> ColorizeSettings:
        return ColorizeSettings(engine=self.engine.currentData(), device=self.device.currentData(),
                           precision=self.precision.currentData(), batch_size=self.batch_size.value(),
                           size=self.work_size.value(), weights=self.chosen_model().weights,
                           by_look=self.chosen_model().auto)

    def set_choice(self, choice: ColorizeSettings) -> None:
        """Select the saved choice, falling back to automatic where this machine cannot run it (and to the shipped
        model where ``choice.weights`` is none of those listed).
        """
        by_path = {m.path: m.name for m in self.models.values() if not m.shipped and not m.auto}
        if choice.by_look:
            if not self.select_model(AUTO):
                self.select_model(SHIPPED)
        elif not (choice.weights is not None and self.select_model(by_path.get(choice.weights, ""))):
            self.select_model(SHIPPED)
        _select(self.engine, choice.engine if item_enabled(self.engine, choice.engine) else "optimized")
        _select(self.device, choice.device if item_enabled(self.device, choice.device) else "auto")
        self._update_options()
        _select(self.precision, choice.precision)
        self._update_options()
        self.batch_size.setValue(choice.batch_size)
        self.work_size.setValue(choice.size)
