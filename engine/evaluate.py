"""``python main.py evaluate DIR``: how well the model colours photos whose colours we know.

Each colour photo is turned grey, colorized, and compared with the original: PSNR (RGB),
mean ab error and Hasler-Suesstrunk colourfulness, beside two baselines that need no
model: the grey photo itself, and a constant tint (every photo given the folder's mean ab).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .color import colourfulness, grey_rgb, join_lab, psnr, rgb_to_lab, to_uint8
from .colorizer import Colorizer, ColorizeSettings, prepare
from .dataset import TUNING_FRACTION, find_photos, split_of
from .imageio import ImageError, decode
from .model import ModelConfig
from .weights import load_model


@dataclass(frozen=True)
class EvalSettings:
    folder: Path
    split: str = "all"  # all | validation | tuning | train (the training command's split by file name)
    size: int = 512
    weights: Path | None = None
    json_path: Path | None = None
    markdown_path: Path | None = None
    examples_dir: Path | None = None
    examples: int = 4
    chroma_gain: float | None = None  # instead of the model's own: to see the PSNR/colourfulness trade-off


def ab_error(ab: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean(np.linalg.norm(ab - truth, axis=-1)))


def evaluate_photos(colorizer: Colorizer, photos: list[tuple[str, np.ndarray]]) -> dict:
    """photos: (name, H x W x 3 uint8 RGB). Returns per-photo rows and the means."""
    labs = [rgb_to_lab(rgb) for _, rgb in photos]
    mean_ab = np.mean([lab[..., 1:].reshape(-1, 2).mean(0) for lab in labs], axis=0).astype(np.float32)
    rows = []
    for (name, rgb), lab in zip(photos, labs, strict=True):
        truth = rgb.astype(np.float32) / 255.0
        L, ab_true = lab[..., 0], lab[..., 1:]
        item = prepare(rgb, colorizer.settings.size)  # L from the colour photo = its grey version
        ab = colorizer.predict([item])[0]
        out = join_lab(L, ab)
        grey = grey_rgb(L)
        tint = join_lab(L, np.broadcast_to(mean_ab, ab_true.shape))
        rows.append({
            "photo": name,
            "psnr": psnr(out, truth), "psnr_grey": psnr(grey, truth), "psnr_tint": psnr(tint, truth),
            "ab_error": ab_error(ab, ab_true), "ab_error_grey": ab_error(np.zeros_like(ab_true), ab_true),
            "ab_error_tint": ab_error(np.broadcast_to(mean_ab, ab_true.shape), ab_true),
            "colourfulness": colourfulness(to_uint8(out)), "colourfulness_original": colourfulness(rgb),
        })
    keys = [k for k in rows[0] if k != "photo"] if rows else []
    means = {k: float(np.mean([r[k] for r in rows])) for k in keys}
    if rows:
        means["colourfulness_ratio"] = means["colourfulness"] / max(means["colourfulness_original"], 1e-9)
    return {"rows": rows, "mean": means, "mean_ab_tint": mean_ab.tolist()}


def load_folder(folder: Path, split: str) -> tuple[list[tuple[str, np.ndarray]], list[str]]:
    photos, problems = [], []
    for path in find_photos(folder):
        rel = path.relative_to(folder).as_posix()
        if split != "all" and split_of(rel, tune_fraction=TUNING_FRACTION) != split:
            continue
        try:
            img = decode(path)
        except ImageError as err:
            problems.append(f"{rel}: {err}")
            continue
        px = img.pixels
        if px.ndim != 3:
            problems.append(f"{rel}: a grey photo, left out")
            continue
        if px.dtype == np.uint16:
            px = (px >> 8).astype(np.uint8)
        photos.append((rel, px))
    return photos, problems


def markdown_table(report: dict) -> str:
    m = report["mean"]
    lines = [
        "| | PSNR (dB) | mean ab error | colourfulness |",
        "|---|---:|---:|---:|",
        f"| colorized | {m['psnr']:.2f} | {m['ab_error']:.2f} | {m['colourfulness']:.1f} |",
        f"| grayscale photo | {m['psnr_grey']:.2f} | {m['ab_error_grey']:.2f} | 0.0 |",
        f"| constant tint (mean ab) | {m['psnr_tint']:.2f} | {m['ab_error_tint']:.2f} | – |",
        f"| original | – | – | {m['colourfulness_original']:.1f} |",
        "",
        f"Colorized vs grayscale: {m['psnr'] - m['psnr_grey']:+.2f} dB; vs constant tint: "
        f"{m['psnr'] - m['psnr_tint']:+.2f} dB; colourfulness {m['colourfulness_ratio']:.2f} of the originals'.",
    ]
    return "\n".join(lines)


def run_evaluate(s: EvalSettings) -> int:
    photos, problems = load_folder(s.folder, s.split)
    for p in problems:
        print(p)
    if not photos:
        print("no colour photos to evaluate")
        return 1
    model = load_model(s.weights)
    if s.chroma_gain is not None:
        model.config = ModelConfig.from_dict({**model.config.to_dict(), "chroma_gain": s.chroma_gain})
    colorizer = Colorizer.create(ColorizeSettings(size=s.size, weights=s.weights, batch_size=1), model=model)
    report = evaluate_photos(colorizer, photos)
    print(f"{'photo':40s} {'PSNR':>6s} {'grey':>6s} {'tint':>6s} {'ab err':>7s} {'colour':>7s} {'orig':>7s}")
    for r in report["rows"]:
        print(f"{r['photo'][:40]:40s} {r['psnr']:6.2f} {r['psnr_grey']:6.2f} {r['psnr_tint']:6.2f} "
              f"{r['ab_error']:7.2f} {r['colourfulness']:7.1f} {r['colourfulness_original']:7.1f}")
    table = markdown_table(report)
    print()
    print(f"{len(photos)} photos from {s.folder} (split: {s.split}), {colorizer.description}, "
          f"chroma gain {model.config.chroma_gain}")
    print(table)
    if s.json_path:
        Path(s.json_path).write_text(json.dumps(report, indent=2))
    if s.markdown_path:
        Path(s.markdown_path).write_text(table + "\n")
    if s.examples_dir:
        save_examples(colorizer, photos, report, s.examples_dir, s.examples)
    return 0


def save_examples(colorizer: Colorizer, photos: list[tuple[str, np.ndarray]], report: dict, folder: Path,
                  n: int) -> None:
    """Grey | colorized | original strips for a spread of photos (best, median, worst PSNR gain)."""
    import cv2

    folder.mkdir(parents=True, exist_ok=True)
    order = sorted(range(len(photos)), key=lambda i: report["rows"][i]["psnr"] - report["rows"][i]["psnr_grey"])
    picks = sorted({order[round(k * (len(order) - 1) / max(1, n - 1))] for k in range(n)})
    for i in picks:
        name, rgb = photos[i]
        out = colorizer.colorize(rgb)
        grey = to_uint8(grey_rgb(rgb_to_lab(rgb)[..., 0]))
        strip = np.concatenate([grey, out, rgb], axis=1)
        scale = min(1.0, 900 / strip.shape[1])
        if scale < 1:
            strip = cv2.resize(strip, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
        stem = Path(name).stem
        cv2.imwrite(str(folder / f"{stem}.jpg"), cv2.cvtColor(strip, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 88])
