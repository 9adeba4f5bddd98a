"""The user's choices, persisted with QSettings between runs.

QSettings hands back strings from INI files and native types elsewhere, so every read goes
through a converter with a default: a hand-edited or stale file can never crash the app.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from PySide6.QtCore import QSettings, QStandardPaths

from engine.options import (
    COLOUR_INPUTS,
    DEVICES,
    ENGINES,
    FORMATS,
    IF_EXISTS,
    MAX_BATCH,
    MAX_STRENGTH,
    MAX_WORK,
    MIN_WORK,
    PRECISIONS,
    ColorizeSettings,
    ExportOptions,
)
from gui.model.models import AUTO, SHIPPED

ORGANIZATION = "Colorizer"
APPLICATION = "Colorizer"

T = TypeVar("T")


@dataclass(frozen=True)
class AppSettings:
    model: ColorizeSettings = field(default_factory=ColorizeSettings)
    export: ExportOptions = field(default_factory=lambda: ExportOptions(output_dir=default_output_dir()))
    compare: bool = False
    preview_mode: str = "side"  # side | wipe
    model_name: str = AUTO  # the Engine panel's model; ``model.weights`` is its file (None: shipped or auto)


@dataclass(frozen=True)
class TeachChoices:
    """The Teach dialog's folders, time and model to start from, offered again next time; not the name, which a
    new tune wants new.
    """

    folders: tuple[Path, ...] = ()
    minutes: float = 10.0
    base: str = SHIPPED  # a model's name (``gui.model.models``); one gone since falls back to the shipped model


def default_output_dir() -> Path:
    pictures = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.PicturesLocation)
    return Path(pictures or Path.home()) / "Colorized"


def _to_bool(value: Any) -> bool:
    if isinstance(value, str):
        if value.lower() in ("true", "1", "yes"):
            return True
        if value.lower() in ("false", "0", "no"):
            return False
        raise ValueError(value)
    return bool(value)


def _read(qs: QSettings, key: str, default: T, convert: Callable[[Any], T], allowed: tuple | None = None) -> T:
    value = qs.value(key)
    if value is None:
        return default
    try:
        out = convert(value)
    except (TypeError, ValueError):
        return default
    return default if allowed is not None and out not in allowed else out


def _int_in(low: int, high: int) -> Callable[[Any], int]:
    def convert(value: Any) -> int:
        n = int(value)
        if not low <= n <= high:
            raise ValueError(n)
        return n

    return convert


def _float_in(low: float, high: float) -> Callable[[Any], float]:
    def convert(value: Any) -> float:
        x = float(value)
        if not low <= x <= high:  # also refuses NaN
            raise ValueError(x)
        return x

    return convert


def load(qs: QSettings) -> AppSettings:
    d = AppSettings()
    m, e = d.model, d.export
    model = ColorizeSettings(
        engine=_read(qs, "engine/engine", m.engine, str, ENGINES),
        device=_read(qs, "engine/device", m.device, str, DEVICES),
        precision=_read(qs, "engine/precision", m.precision, str, PRECISIONS),
        batch_size=_read(qs, "engine/batch_size", m.batch_size, _int_in(1, MAX_BATCH)),
        size=_read(qs, "engine/size", m.size, _int_in(MIN_WORK, MAX_WORK)),
    )
    export = ExportOptions(
        output_dir=_read(qs, "export/output_dir", e.output_dir, lambda v: Path(str(v)) if str(v) else e.output_dir),
        format=_read(qs, "export/format", e.format, str, FORMATS),
        jpeg_quality=_read(qs, "export/jpeg_quality", e.jpeg_quality, _int_in(1, 100)),
        mirror_subfolders=_read(qs, "export/mirror_subfolders", e.mirror_subfolders, _to_bool),
        name_pattern=_read(qs, "export/name_pattern", e.name_pattern, str),
        if_exists=_read(qs, "export/if_exists", e.if_exists, str, IF_EXISTS),
        keep_metadata=_read(qs, "export/keep_metadata", e.keep_metadata, _to_bool),
        colour_inputs=_read(qs, "export/colour_inputs", e.colour_inputs, str, COLOUR_INPUTS),
        strength=_read(qs, "export/strength", e.strength, _float_in(0.0, MAX_STRENGTH)),
    )
    return AppSettings(model, export, compare=_read(qs, "engine/compare", False, _to_bool),
                       preview_mode=_read(qs, "view/preview_mode", d.preview_mode, str, ("side", "wipe")),
                       model_name=_read(qs, "engine/model", AUTO, str))


def save(qs: QSettings, s: AppSettings) -> None:
    m, e = s.model, s.export
    for key, value in {
        "engine/engine": m.engine, "engine/device": m.device, "engine/precision": m.precision,
        "engine/batch_size": m.batch_size, "engine/size": m.size, "engine/compare": s.compare,
        "engine/model": s.model_name,
        "export/output_dir": str(e.output_dir), "export/format": e.format, "export/jpeg_quality": e.jpeg_quality,
        "export/mirror_subfolders": e.mirror_subfolders, "export/name_pattern": e.name_pattern,
        "export/if_exists": e.if_exists, "export/keep_metadata": e.keep_metadata,
        "export/colour_inputs": e.colour_inputs, "export/strength": e.strength, "view/preview_mode": s.preview_mode,
    }.items():
        qs.setValue(key, value)
    qs.sync()


def _paths(value: Any) -> tuple[Path, ...]:
    names = json.loads(str(value))  # a JSON list: QSettings' own lists come back as one string when they hold one
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise ValueError(value)
    return tuple(Path(n) for n in names)


def load_teach(qs: QSettings) -> TeachChoices:
    d = TeachChoices()
    return TeachChoices(folders=_read(qs, "teach/folders", d.folders, _paths),
                        minutes=_read(qs, "teach/minutes", d.minutes, _float_in(1.0, 600.0)),
                        base=_read(qs, "teach/base", d.base, str))


def save_teach(qs: QSettings, choices: TeachChoices) -> None:
    qs.setValue("teach/folders", json.dumps([str(f) for f in choices.folders]))
    qs.setValue("teach/minutes", choices.minutes)
    qs.setValue("teach/base", choices.base)
    qs.sync()
