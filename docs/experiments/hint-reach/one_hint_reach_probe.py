"""Probe (not a decision): how far one hint reaches, the network alone and with the shipped spread.

    python docs/experiments/hint-reach/one_hint_reach_probe.py OLD_PRINTS_FOLDER MODERN_FOLDER [N [WEIGHTS ...]]

One green hint (60, 170, 60) at a seeded random point of each photo's middle half; the change of ab against the
automatic colours near the hint (within 0.05 of the shorter side) and far from it (beyond 0.35), the network's own
response (hints read by the network, no spread) and the full result (network and spread), and the share of far
pixels moved by more than 10 ab units. 256 px (the app's working size), fp32.
"""

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from engine.colorizer import Colorizer, pack, pack_hints, prepare, unpack  # noqa: E402
from engine.hints import Hint  # noqa: E402
from engine.imageio import ImageError, decode  # noqa: E402
from engine.options import ColorizeSettings  # noqa: E402


def moved(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.hypot(*(a - b).transpose(2, 0, 1))


def probe(c: Colorizer, files: list[Path], rng: np.random.Generator) -> np.ndarray:
    rows = []
    for f in files:
        try:
            rgb = decode(str(f)).pixels
        except ImageError:
            continue
        item = prepare(rgb, c.settings.size)
        auto = c.predict([item])[0]
        x, y = rng.uniform(0.25, 0.75, 2)
        hint = Hint(float(x), float(y), (60, 170, 60))
        net = unpack(c.infer(pack([item]), pack_hints([item], [[hint]]))[0], item)
        net0 = unpack(c.infer(pack([item]))[0], item)
        full = c.predict([item], [[hint]])[0]
        H, W = auto.shape[:2]
        yy, xx = np.mgrid[0:H, 0:W]
        d = np.hypot(yy - y * H, xx - x * W) / min(H, W)
        near, far = d < 0.05, d > 0.35
        if far.any():
            rows.append((moved(net, net0)[near].mean(), moved(net, net0)[far].mean(), moved(full, auto)[near].mean(),
                         moved(full, auto)[far].mean(), (moved(full, auto)[far] > 10).mean()))
    return np.array(rows)


def main() -> None:
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    sets = {"old-print scans": sorted(Path(sys.argv[1]).iterdir())[:n],
            "grey copies": sorted(Path(sys.argv[2]).iterdir())[:n]}
    models = [(Path(w).stem, Path(w)) for w in sys.argv[4:]] or [
        ("shipped", ROOT / "resources" / "models" / "colorizer.pt"),
        ("old-prints", ROOT / "resources" / "models" / "old-prints.pt")]
    for name, weights in models:
        c = Colorizer.create(ColorizeSettings(device="cpu", precision="fp32", weights=weights))
        for kind, files in sets.items():
            r = probe(c, files, np.random.default_rng(0))  # each model and set: the same points
            m = r.mean(0)
            print(f"{name:10s} {kind:15s} n={len(r)} network: near {m[0]:5.1f} far {m[1]:4.1f} | with spread: "
                  f"near {m[2]:5.1f} far {m[3]:5.1f}, far pixels moved >10 ab: {100 * m[4]:4.1f}%")


if __name__ == "__main__":
    main()
