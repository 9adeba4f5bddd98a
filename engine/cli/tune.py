"""``tune`` and ``models``: a person's own colour photos teach the model, and the models they made, by name."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from ..messages import one_line
from .usage import UsageError


def tune_command(args: argparse.Namespace) -> int:
    from ..named_models import ModelNameError
    from ..training.tune import DEFAULT_RECIPE, TuneError, TuneSettings, run_tune
    from ..weights import WeightsError

    try:
        base = base_weights(args.base)
    except ModelNameError as err:
        raise UsageError(str(err)) from err
    settings = TuneSettings(photos=args.photos, name=args.name, minutes=args.minutes, base=base,
                            recipe=args.recipe or DEFAULT_RECIPE, resume=args.resume, replace=args.replace,
                            threads=args.threads, batch=args.batch, crop=args.crop)
    progress = _json_lines if args.progress_json else None
    if not (math.isfinite(settings.minutes) and settings.minutes > 0):
        raise UsageError("--minutes must be a number more than 0")
    try:
        card = run_tune(settings, on_progress=progress)
    except (TuneError, ModelNameError, WeightsError) as err:
        if progress is not None:
            progress({"event": "error", "message": one_line(str(err), 300)})
        print(f"error: {one_line(str(err), 300)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("stopped: what was learned so far is kept; run the same command with --resume to go on "
              "(--minutes counts the time already spent)", file=sys.stderr)
        return 130
    if progress is not None:
        progress({"event": "done", "card": card})
    h = card["tune"]["heldout"]
    lo, hi = h["interval"] or (float("nan"), float("nan"))
    start = "the shipped model" if args.base is None else f"its start ({args.base})"
    print(f"{card['name']}: {h['gain_db']:+.2f} dB against {start} on {h['photos']} photos held out of the "
          f"tune (90% interval {lo:+.2f} to {hi:+.2f}): {h['verdict']}; better on {h['better_on']}, worse on "
          f"{h['worse_on']}")
    print(f"use it: main.py colorize PHOTOS --output DIR --model {card['name']!r}  (its start is unchanged)")
    return 0


def base_weights(base: str | None) -> Path | None:
    """``--base``: a weights file, else a model's name (``named_models.model_path``); None: the shipped model."""
    from ..named_models import model_path

    if base is None:
        return None
    return Path(base) if Path(base).is_file() else model_path(base)


def _json_lines(event: dict[str, Any]) -> None:
    """``--progress-json``: one JSON object per line on stdout, for the app's teach dialog (another process)."""
    print(json.dumps(event), flush=True)


def models_command(args: argparse.Namespace) -> int:
    from ..named_models import AUTO, AUTO_LINE, list_models, models_dir

    print(f"{AUTO}: {AUTO_LINE}")
    for model in list_models():
        print(model.line())
    print(f"(tuned models live in {models_dir()})")
    return 0
