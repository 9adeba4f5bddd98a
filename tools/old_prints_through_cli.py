"""Old-print scans through `colorize` as a user runs it, for several models, paired photo by photo.

    python tools/old_prints_through_cli.py PHOTOS [--split all] --scans third --models shipped auto [--json OUT]
    python tools/old_prints_through_cli.py --pool set-a.json set-b.json ...
    python tools/old_prints_through_cli.py PHOTOS --mixed --models auto one-model  # a queue of two folders

Writes each photo's input (``clean``: its grey copy; ``degrade``: ``degrade.py``'s scan, seed 0; ``third``: the
third degradation model below) into one folder, runs `python main.py colorize FOLDER --model M` for each model
(a model given as a path ending in ``.pt`` runs as `--weights PATH`, for weights not yet bundled), and judges
each output on colour alone: its ab joined with the original's lightness, against the original (the
chroma-only gain over grey that `evaluate --degrade` reports), with the colourfulness of that join. Prints each
model's mean with its 90% interval and each model's paired difference against the first.

``--mixed``: a queue as a person with old prints and modern photos brings it, in two folders: a third of the photos
(by a hash of their name) as their ``--scans`` scans in ``old/``, the rest as grey copies in ``modern/``, both given
to one `colorize`; the figures are then also given per folder. The model ``one-model`` stands for auto before it chose
folder by folder: the one model a look at the whole queue calls for (``look_of_batch``), run by name.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.color import colourfulness, grey_rgb, join_lab, lightness, psnr, rgb_to_lab, to_uint8  # noqa: E402
from engine.imageio import decode  # noqa: E402
from engine.intervals import bootstrap_interval  # noqa: E402
from engine.training.evaluate import degraded_copies, load_folder  # noqa: E402
from engine.training.print_gate import grey_copy  # noqa: E402


def third_scan(rgb: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A third old-print model, written apart from degrade.py and the gate's probe: a small print scanned (down-
    and up-sampled), finer grain, vignetting and uneven exposure, a mild fade, JPEG at 60-90; a third untoned, the
    rest warm, sepia, selenium or cold at a drawn strength.
    """
    h, w = rgb.shape[:2]
    g = lightness(rgb) / 100.0
    f = rng.uniform(0.35, 0.6)
    small = cv2.resize(g, (max(8, int(w * f)), max(8, int(h * f))), interpolation=cv2.INTER_AREA)
    small = small + rng.uniform(0.01, 0.03) * rng.standard_normal(small.shape).astype(np.float32)
    g = cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    r = np.hypot((xx - w / 2) / (w / 2), (yy - h / 2) / (h / 2))
    angle = rng.uniform(0, 2 * np.pi)
    ramp = (np.cos(angle) * (xx / w - 0.5) + np.sin(angle) * (yy / h - 0.5))
    g = g * (1 - rng.uniform(0.1, 0.35) * np.clip(r - 0.4, 0, None) ** 2) * (1 + rng.uniform(0.0, 0.25) * ramp)
    black = rng.uniform(0.03, 0.12)
    g = black + (1 - black - rng.uniform(0.0, 0.08)) * np.clip(g, 0, 1)
    toned = rng.random() >= 1 / 3
    tints = {"warm": (1.0, 0.93, 0.82), "sepia": (1.0, 0.84, 0.62), "selenium": (0.96, 0.88, 0.9),
             "cold": (0.86, 0.93, 1.0)}
    tint = np.array(tints[rng.choice(list(tints))] if toned else (1.0, 1.0, 1.0), np.float32)
    amount = rng.uniform(0.3, 1.0) if toned else 0.0
    out = to_uint8(np.clip(g[..., None] * (1 - amount + amount * tint), 0, 1))
    _, enc = cv2.imencode(".jpg", out[..., ::-1], [cv2.IMWRITE_JPEG_QUALITY, int(rng.integers(60, 91))])
    return cv2.imdecode(enc, cv2.IMREAD_COLOR)[..., ::-1].copy()


def scans(photos: list[tuple[str, np.ndarray]], kind: str) -> list[np.ndarray]:
    if kind == "clean":
        return [grey_copy(rgb) for _, rgb in photos]
    if kind == "degrade":
        return [scan for scan, _ in degraded_copies(photos, 0)]
    return [third_scan(rgb, np.random.default_rng([3, zlib.crc32(n.encode())])) for n, rgb in photos]


def judged(out: np.ndarray, rgb: np.ndarray) -> tuple[float, float]:
    """(chroma-only gain over grey in dB, colourfulness of the join) of one output."""
    if out.shape[:2] != rgb.shape[:2]:
        out = cv2.resize(out, (rgb.shape[1], rgb.shape[0]), interpolation=cv2.INTER_AREA)
    L = rgb_to_lab(rgb)[..., 0]
    ab = rgb_to_lab(out if out.ndim == 3 else np.repeat(out[..., None], 3, 2))[..., 1:]
    joined = join_lab(L, ab)
    truth = rgb.astype(np.float32) / 255.0
    return psnr(joined, truth) - psnr(grey_rgb(L), truth), colourfulness(to_uint8(joined))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, nargs="?")
    ap.add_argument("--pool", type=Path, nargs="+", metavar="JSON",
                    help="pool the --json reports of several sets (same models, same order) instead of a run")
    ap.add_argument("--split", default="all")
    ap.add_argument("--scans", choices=("clean", "degrade", "third"), default="third")
    ap.add_argument("--models", nargs="+", default=["shipped", "auto"])
    ap.add_argument("--json", type=Path)
    ap.add_argument("--mixed", action="store_true", help="two folders: a third as scans, the rest as grey copies")
    a = ap.parse_args()
    if a.pool and a.folder is not None or not a.pool and a.folder is None:
        ap.error("a folder of photos, or --pool with reports")
    if a.pool:
        return pool([json.loads(p.read_text()) for p in a.pool])
    photos, _ = load_folder(a.folder, a.split)
    result: dict = {"folder": str(a.folder), "scans": a.scans + ("+clean" if a.mixed else ""),
                    "photos": [n for n, _ in photos], "models": {}}
    old = [not a.mixed or zlib.crc32(n.encode()) % 3 == 0 for n, _ in photos]
    result["old"] = old
    with tempfile.TemporaryDirectory() as tmp:
        folders = [Path(tmp) / "old", Path(tmp) / "modern"]
        for f in folders:
            f.mkdir()
        names = [f"{i:04d}.png" for i in range(len(photos))]
        made = scans(photos, a.scans) if not a.mixed else [
            s if o else c for s, c, o in zip(scans(photos, a.scans), scans(photos, "clean"), old, strict=True)]
        paths = [folders[0 if o else 1] / n for n, o in zip(names, old, strict=True)]
        for path, scan in zip(paths, made, strict=True):
            cv2.imwrite(str(path), scan[..., ::-1] if scan.ndim == 3 else scan)
        for i, model in enumerate(a.models):
            out = Path(tmp) / f"out-{i}"
            if model == "one-model":
                from engine.batch.model_choice import look_of_batch

                model = look_of_batch(paths).model
            chosen = ["--weights", model] if model.endswith(".pt") else ["--model", model]
            given = [f for f in folders if any(f.iterdir())]
            done = subprocess.run([sys.executable, str(ROOT / "main.py"), "colorize", *map(str, given), "--output",
                                   str(out), *chosen], capture_output=True, text=True)
            model = a.models[i]
            if done.returncode != 0:
                print(done.stderr)
                return done.returncode
            made_at = [out / p.parent.name / p.name if len(given) > 1 else out / p.name for p in paths]  # names kept
            rows = [judged(decode(m).pixels, rgb) for m, (_, rgb) in zip(made_at, photos, strict=True)]
            result["models"][model] = {"stdout": done.stdout.strip().splitlines(),
                                       "gain": [r[0] for r in rows], "colourfulness": [r[1] for r in rows]}
    result["truth_colourfulness"] = [colourfulness(rgb) for _, rgb in photos]
    truth_colour = float(np.mean(result["truth_colourfulness"]))
    if a.mixed:
        for kind, keep in (("old/: scans", np.array(old)), ("modern/: grey copies", ~np.array(old))):
            print(f"{kind}, {keep.sum()} photos:")
            report(a.models, {m: {**r, "gain": list(np.array(r["gain"])[keep]),
                                  "colourfulness": list(np.array(r["colourfulness"])[keep])}
                              for m, r in result["models"].items()},
                   float(np.mean(np.array(result["truth_colourfulness"])[keep])))
    print(f"{len(photos)} photos from {a.folder}, {a.scans} scans{' and grey copies' if a.mixed else ''}, "
          "through `colorize`:")
    report(a.models, result["models"], truth_colour)
    if a.json:
        a.json.write_text(json.dumps(result))
    return 0


def report(models: list[str], results: dict, truth_colour: float) -> None:
    """Each model's mean gain and colourfulness, with the paired difference against the first."""
    first = models[0]
    for model, r in results.items():
        g = np.array(r["gain"])
        lo, hi = bootstrap_interval(lambda i, g=g: float(g[i].mean()), len(g))
        line = (f"  {model:10s} gain over grey {g.mean():+.2f} dB ({lo:+.2f} to {hi:+.2f}), colourfulness "
                f"{np.mean(r['colourfulness']) / truth_colour:.3f}")
        if model != first:
            d = g - np.array(results[first]["gain"])
            dlo, dhi = bootstrap_interval(lambda i, d=d: float(d[i].mean()), len(d))
            line += f"; against {first} {d.mean():+.3f} ({dlo:+.2f} to {dhi:+.2f}), better on {(d > 0).sum()}"
        print(line)
        print("    " + " | ".join(s for s in r["stdout"] if "chosen" in s))


def pool(reports: list[dict]) -> int:
    """Every photo of every set as one sample: each model's mean gain and colourfulness (against the originals'),
    and its paired difference against the first model with one interval.
    """
    models = list(reports[0]["models"])
    problem = ("the reports do not hold the same models in the same order"
               if any(list(r["models"]) != models for r in reports) else
               "the reports are of different kinds of scan" if len({r["scans"] for r in reports}) > 1 else
               "a report was written before reports held the originals' colourfulness: run it again"
               if any("truth_colourfulness" not in r for r in reports) else "")
    if problem:
        print(problem, file=sys.stderr)
        return 2
    truth = np.concatenate([r["truth_colourfulness"] for r in reports])
    old = np.concatenate([r.get("old", [True] * len(r["truth_colourfulness"])) for r in reports]).astype(bool)
    parts = [("", np.ones(len(truth), bool))] if old.all() else [
        (" (old/: scans)", old), (" (modern/: grey copies)", ~old), (" (both folders)", np.ones(len(truth), bool))]
    for part, keep in parts:
        gains = {m: np.concatenate([r["models"][m]["gain"] for r in reports])[keep] for m in models}
        print(f"{keep.sum()} photos pooled from {len(reports)} sets ({reports[0]['scans']} scans){part}:")
        for m in models:
            colours = np.concatenate([r["models"][m]["colourfulness"] for r in reports])
            colour = colours[keep].mean() / truth[keep].mean()
            line = f"  {m:10s} gain over grey {gains[m].mean():+.3f} dB, colourfulness {colour:.3f}"
            if m != models[0]:
                d = gains[m] - gains[models[0]]
                lo, hi = bootstrap_interval(lambda i, d=d: float(d[i].mean()), len(d))
                line += (f"; against {models[0]} {d.mean():+.3f} ({lo:+.3f} to {hi:+.3f}), better on {(d > 0).sum()}, "
                         f"worse on {(d < 0).sum()}")
            print(line)
    return 0

if __name__ == "__main__":
    sys.exit(main())
