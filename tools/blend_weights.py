"""Average two weights files of one architecture: ``(1 - t) * A + t * B``, tensor by tensor.

Why: two models fine-tuned from one start (here the shipped model and a run that learned old prints) often
keep most of what each knows when their weights are averaged (WiSE-FT, Wortsman et al. 2022), at no training
cost. The blend's read-out is A's; choose it again with ``main.py readout`` before judging it.

    python tools/blend_weights.py resources/models/colorizer.pt runs/v5-degrade/colorizer.pt --t 0.5 \
        --out runs/blend/colorizer.pt
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.training.average import blend_into  # noqa: E402
from engine.weights import load_model, save_weights, weights_meta  # noqa: E402


def blend(a: Path, b: Path, t: float, out: Path) -> None:
    if not 0.0 <= t <= 1.0:
        raise SystemExit(f"--t must be in 0..1, not {t}")
    model_a, model_b = load_model(a), load_model(b)
    try:
        mixed = blend_into(model_a, model_b, t)
    except ValueError as err:
        raise SystemExit(f"{a} and {b}: {err}") from None
    mixed.readout = model_a.readout  # A's read-out, as the docstring says
    meta = weights_meta(a)
    meta["blend"] = {"a": str(a), "b": str(b), "t": t, "b_card": weights_meta(b).get("settings", {})}
    meta["weights"] = f"(1 - {t}) x {a} + {t} x {b}, tensor by tensor"
    save_weights(mixed, out, meta)
    print(f"{out}: (1 - {t}) x {a} + {t} x {b}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--t", type=float, default=0.5, help="the share of B (0: A alone, 1: B alone)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    blend(args.a, args.b, args.t, args.out)


if __name__ == "__main__":
    main()
