"""Models as named things: those that come with the app, and those a person tuned on their own photos.

Tuned models live in the user's data folder (platformdirs; ``COLORIZER_MODELS_DIR`` moves it), one
``NAME.pt`` with its card beside it (``NAME.json``, ``NAME.md``). The models that come with the app are names
too, "shipped" and "old-prints" (for scans of old prints), and are never written: tuning saves under a new name,
so their output cannot change. "auto", the default, names no file: one of those two per folder, by its look.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .weights import DEFAULT_WEIGHTS, RESOURCES, WeightsError, read_weights

SHIPPED = "shipped"
OLD_PRINTS = "old-prints"
AUTO = "auto"  # not a file: one of the two above per folder, by how its photos look (engine.batch.model_choice)
AUTO_CARD = RESOURCES / "models" / "auto.md"
AUTO_LINE = ("the default: old-prints for a folder that looks like old prints' scans (grain, fading, toning), the "
             "shipped model otherwise")
BUNDLED = {SHIPPED: DEFAULT_WEIGHTS, OLD_PRINTS: RESOURCES / "models" / "old-prints.pt"}  # come with the app
_ABOUT = {SHIPPED: "the model that comes with the app",
          OLD_PRINTS: "comes with the app, for scans of old prints (grain, fading, toning): better on them than the "
                      "shipped model, a little greyer on clean photos"}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.-]{0,62}$")


class ModelNameError(WeightsError):
    """An unknown, invalid or taken model name (its message is one line, for the CLI and a dialog)."""


@dataclass(frozen=True)
class NamedModel:
    name: str
    path: Path
    card: dict[str, Any] = field(default_factory=dict)  # the weights' own record; empty for a damaged file
    problem: str = ""  # why the file cannot be used ("" when it can)

    @property
    def shipped(self) -> bool:
        return self.name == SHIPPED

    @property
    def bundled(self) -> bool:
        """One of the models that come with the app (never written or deleted)."""
        return self.name in BUNDLED

    def line(self) -> str:
        """One line for ``models``: name, what it learned from, and its measured gain."""
        if self.problem:
            return f"{self.name}: unusable ({self.problem})"
        if self.bundled:
            return f"{self.name}: {_ABOUT[self.name]} ({self.path})"
        tune = self.card.get("tune") or {}
        held = tune.get("heldout") or {}
        start = tune.get("start")
        against = "shipped" if start in (None, str(DEFAULT_WEIGHTS)) else f"its start ({Path(start).stem})"
        gain = (f", {held['gain_db']:+.2f} dB against {against} on {held['photos']} held-out photos"
                if "gain_db" in held else "")
        return (f"{self.name}: tuned on {tune.get('photos', '?')} photos from {tune.get('folders', '?')}, "
                f"{tune.get('minutes', '?')} min{gain}")


def models_dir() -> Path:
    override = os.environ.get("COLORIZER_MODELS_DIR")
    if override:
        return Path(override)
    import platformdirs

    return platformdirs.user_data_path("Colorizer", "Colorizer") / "models"  # beside the log folder


def _is_auto(name: str | None) -> bool:
    return (name or "").strip().lower() == AUTO


def _bundled_name(name: str | None) -> str | None:
    """The bundled model ``name`` stands for (any case, spaces around), or None."""
    key = (name or "").strip().lower()
    return key if key in BUNDLED else None


def check_name(name: str) -> str:
    """A name that can be a file name on every system, and is not one of the bundled models'."""
    name = name.strip()
    if _is_auto(name):
        raise ModelNameError(f"'{AUTO}' names the choice between the models that come with the app: "
                             "choose another name")
    if _bundled_name(name):
        raise ModelNameError(f"'{_bundled_name(name)}' is a model that comes with the app: choose another name")
    if not _NAME.match(name) or name.endswith((".", " ")):
        raise ModelNameError(f"model name {name!r}: use letters, digits, spaces, '-', '_' or '.', up to 63")
    return name


def card_of(meta: dict[str, Any]) -> dict[str, Any]:
    """The model card a weights file carries (stored as JSON text in its meta); {} when it has none."""
    raw = meta.get("card")
    try:
        card = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {}
    return card if isinstance(card, dict) else {}


def _entry(name: str, path: Path) -> NamedModel:
    try:
        return NamedModel(name, path, card_of(read_weights(path).get("meta", {})))
    except WeightsError as err:
        return NamedModel(name, path, problem=str(err).splitlines()[0])


def list_models() -> list[NamedModel]:
    """The bundled models first (the shipped one leading), then the tuned ones by name; a damaged file is listed
    with its problem.
    """
    folder = models_dir()
    tuned = sorted(folder.glob("*.pt"), key=lambda p: p.stem.lower()) if folder.is_dir() else []
    return ([_entry(name, path) for name, path in BUNDLED.items()]
            + [_shadowed(p) if _bundled_name(p.stem) or _is_auto(p.stem) else _entry(p.stem, p)
               for p in tuned])


def _shadowed(path: Path) -> NamedModel:
    """A tuned model saved, before the app bundled a model of that name, under the name: listed, not usable, and
    saying how to get it back, so that it is neither lost nor silently swapped for the bundled one.
    """
    return NamedModel(f"{path.stem} (yours)", path, problem=f"named like a model or choice that comes with the app: "
                      f"rename {path.name} (and its .json, .md) in {path.parent} to use it")


def is_old_prints(weights: Path | None) -> bool:
    """Whether a weights file is the bundled old-prints model's."""
    return weights is not None and Path(weights).resolve() == BUNDLED[OLD_PRINTS].resolve()


def model_path(name: str | None) -> Path:
    """The weights file of a named model (None or "shipped": the shipped one); one-line error otherwise."""
    bundled = _bundled_name(name)
    if _is_auto(name):
        raise ModelNameError(f"'{AUTO}' is chosen per batch of photos, not one weights file: name a model")
    if name is None or bundled == SHIPPED:
        return DEFAULT_WEIGHTS
    if bundled:
        return _usable(bundled, BUNDLED[bundled])
    path = models_dir() / f"{name.strip()}.pt"
    if not path.is_file():
        known = ", ".join([AUTO] + [m.name for m in list_models()])
        raise ModelNameError(f"no model named {name!r} (models: {known})")
    return _usable(name, path)


def _usable(name: str, path: Path) -> Path:
    """``path``, once read: a damaged or missing file says so here, before any photo is read."""
    try:
        read_weights(path)
    except WeightsError as err:
        raise ModelNameError(f"model {name!r} cannot be used: {str(err).splitlines()[0]}") from err
    return path


def new_model_path(name: str, *, replace: bool = False) -> Path:
    """Where a tuned model called ``name`` is saved; a taken name is refused unless ``replace``."""
    path = models_dir() / f"{check_name(name)}.pt"
    if path.exists() and not replace:
        raise ModelNameError(f"a model named {name!r} exists already ({path}): choose another name")
    return path


def delete_model(name: str) -> None:
    """Remove a tuned model, its card and its tune's checkpoints; a bundled model cannot be removed."""
    path = models_dir() / f"{check_name(name)}.pt"
    if not path.is_file():
        raise ModelNameError(f"no model named {name!r}")
    for p in (path, path.with_suffix(".json"), path.with_suffix(".md")):
        p.unlink(missing_ok=True)
    shutil.rmtree(path.with_suffix(".work"), ignore_errors=True)
