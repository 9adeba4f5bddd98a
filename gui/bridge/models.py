"""The named models for the window: ``engine.named_models`` reads weights files with torch, so the GUI reaches it
only through here (``Backend``), and gets plain ``gui.model.models.ModelInfo`` records back.
"""

from __future__ import annotations

import shutil

from engine import named_models
from gui.model.models import ModelInfo


def list_models() -> list[ModelInfo]:
    """"auto" first, then the bundled models (the shipped one leading), then the tuned ones by name; a damaged
    file with its problem.
    """
    auto = ModelInfo(named_models.AUTO, named_models.AUTO_CARD, line=named_models.AUTO_LINE, bundled=True)
    return [auto] + [ModelInfo(m.name, m.path, m.problem, m.line(), m.bundled) for m in named_models.list_models()]


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a tuned model (one line), or None."""
    try:
        named_models.check_name(name)
    except named_models.ModelNameError as err:
        return str(err)
    return None


def model_taken(name: str) -> bool:
    """Whether a tuned model of this name exists (teaching under it again replaces it)."""
    return name_problem(name) is None and (named_models.models_dir() / f"{name.strip()}.pt").exists()


def remove_tune_work(name: str) -> None:
    """Remove what a tune under ``name`` left besides the model: its ``NAME.work`` folder (checkpoints, pictures)."""
    if name_problem(name) is None:
        shutil.rmtree(named_models.models_dir() / f"{name.strip()}.work", ignore_errors=True)


def delete_model(name: str) -> str | None:
    """Delete a tuned model, its card and its tune's work folder; the reason it could not be, or None."""
    try:
        named_models.delete_model(name)
    except named_models.ModelNameError as err:
        return str(err)
    remove_tune_work(name)
    return None
