"""The models the Engine panel offers, as plain data: those that come with the app and those a person taught.

``gui.bridge.models`` fills these in from ``engine.named_models`` (which reads weights with torch); the panel,
the settings and the presenters only ever see this record.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SHIPPED = "shipped"  # engine.named_models.SHIPPED: the model that comes with the app, the fallback
OLD_PRINTS = "old-prints"  # engine.named_models.OLD_PRINTS: comes with the app too, for old prints' scans
AUTO = "auto"  # engine.named_models.AUTO: one of those two per folder, by how its photos look; the default


def display_name(name: str) -> str:
    """A model as the window names it: "Old prints" for the bundled "old-prints", a tuned one by its own name."""
    return name.replace("-", " ").capitalize() if name in (SHIPPED, OLD_PRINTS) else name


@dataclass(frozen=True)
class ModelInfo:
    """One model by name: its weights file, why it cannot be used ("" when it can) and its one-line summary."""

    name: str
    path: Path
    problem: str = ""
    line: str = ""
    bundled: bool = False  # comes with the app (``engine.named_models.BUNDLED``): never deleted

    @property
    def shipped(self) -> bool:
        return self.name == SHIPPED

    @property
    def auto(self) -> bool:
        """Not one weights file: the shipped model or old-prints per folder (``path`` is its card)."""
        return self.name == AUTO

    @property
    def label(self) -> str:
        """What the Engine panel's list shows: "Old prints (comes with the app)" for "old-prints"."""
        if self.auto:
            return "Auto: by the photos' look"
        return f"{display_name(self.name)} (comes with the app)" if self.bundled else self.name

    @property
    def card_file(self) -> Path:
        """The model card beside the weights (``NAME.md``; the shipped one: ``resources/models/colorizer.md``)."""
        return self.path.with_suffix(".md")

    @property
    def weights(self) -> Path | None:
        """What ``ColorizeSettings.weights`` holds for it: None for the shipped model (the engine's default)."""
        return None if self.shipped or self.auto else self.path
