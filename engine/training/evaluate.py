"""``python main.py evaluate DIR``: how well the model colours photos whose colours we know.

Each colour photo is turned grey, colorized, and compared with the original: PSNR (RGB),
mean ab error and Hasler-Suesstrunk colourfulness, beside two baselines that need no
model: the grey photo itself, and a constant tint (every photo given the folder's mean ab).
With a MANIFEST.tsv in the folder, the report also has a table per source group (groups.py): the
overall mean is mostly whatever group has the most photos. ``--hints N ...`` colours each photo again
with N simulated colour hints (weights that take hints only) and reports the gain per N. ``--degrade`` colours a
seeded old-print scan of each photo too (``degrade.py``) and reports it beside the clean one, judged on colour
alone: the output's ab joined with the original's own L, so the damage itself is not counted against the model.
"""

from __future__ import annotations

import json
import sys
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..color import colourfulness, grey_rgb, join_lab, psnr, rgb_to_lab, to_uint8
from ..colorizer import Colorizer, prepare
from ..imageio import ImageError, decode
from ..intervals import INTERVAL_LEVEL, bootstrap_interval
from ..model import CVUNet
from ..options import WORKING_SIZE, ColorizeSettings
from ..weights import load_model
from .dataset import TUNING_FRACTION, find_photos, split_of
from .groups import group_keys, reporting_groups


@dataclass(frozen=True)
class EvalSettings:
    folder: Path
    split: str = "all"  # all | validation | tuning | train (the training command's split by file name)
    size: int = WORKING_SIZE
    weights: Path | None = None
    json_path: Path | None = None
    markdown_path: Path | None = None
    examples_dir: Path | None = None
    examples: int = 4
    example_names: tuple[str, ...] = ()  # these photos too (names relative to the folder)
    chroma_gain: float | None = None  # instead of the model's own: to see the PSNR/colourfulness trade-off
    doubt_pull: float | None = None  # instead of the model's own: to see what the pull toward grey does
    against: Path | None = None  # a second weights file, compared photo by photo
    hints: tuple[int, ...] = ()  # e.g. (0, 1, 5, 10, 50): colour again with that many simulated hints per photo
    hint_seed: int = 0
    degrade: bool = False  # also on seeded degraded copies (old prints and their scans), side by side
    degrade_seed: int = 0


INTERVAL_MIN_PHOTOS = 5  # resampling fewer photos than this gives intervals that mean nothing


def ab_error(ab: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean(np.linalg.norm(ab - truth, axis=-1)))


def evaluate_photos(colorizer: Colorizer, photos: list[tuple[str, np.ndarray]],
                    inputs: Sequence[np.ndarray] | None = None) -> dict:
    """photos: (name, H x W x 3 uint8 RGB). Returns per-photo rows and the means.

    ``inputs``: what the model is given instead of each photo's grey version (a degraded scan); the output is
    still its ab joined with the original's L, so only the colour is judged.
    """
    labs = [rgb_to_lab(rgb) for _, rgb in photos]
    mean_ab = np.mean([lab[..., 1:].reshape(-1, 2).mean(0) for lab in labs], axis=0).astype(np.float32)
    rows: list[dict] = []
    for (name, rgb), lab in zip(photos, labs, strict=True):
        truth = rgb.astype(np.float32) / 255.0
        L, ab_true = lab[..., 0], lab[..., 1:]
        given = rgb if inputs is None else inputs[len(rows)]
        item = prepare(given, colorizer.settings.size)  # L from the colour photo = its grey version
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
    overall = summarise(rows)
    if rows:
        means.update({k: overall[k] for k in ("gain_grey", "gain_tint", "colourfulness_ratio")})
    intervals = overall["interval"] or {}
    return {"rows": rows, "mean": means, "interval": intervals, "mean_ab_tint": mean_ab.tolist()}


def compare(report: dict, other: dict) -> dict:
    """Photo by photo, this report's PSNR minus the other's (same photos, same order)."""
    names = [r["photo"] for r in report["rows"]]
    if names != [r["photo"] for r in other["rows"]]:
        raise ValueError("the two reports are not on the same photos")
    diff = np.array([a["psnr"] - b["psnr"] for a, b in zip(report["rows"], other["rows"], strict=True)])
    return {
        "photos": len(diff),
        "psnr_difference": float(diff.mean()) if len(diff) else 0.0,
        "interval": (bootstrap_interval(lambda i: float(diff[i].mean()), len(diff))
                     if len(diff) >= INTERVAL_MIN_PHOTOS else None),
        "better_on": int((diff > 0).sum()),
        "worse_on": int((diff < 0).sum()),
        "colourfulness_ratio": report["mean"].get("colourfulness_ratio", 0.0),
        "colourfulness_ratio_other": other["mean"].get("colourfulness_ratio", 0.0),
    }


def summarise(rows: Sequence[dict]) -> dict:
    """Mean gains over grey and over the tint and the colourfulness ratio of some rows, with intervals.

    Fewer than INTERVAL_MIN_PHOTOS rows get ``interval: None`` (and the tables say so).
    """
    col = {k: np.array([r[k] for r in rows], np.float64) for k in ("psnr", "psnr_grey", "psnr_tint",
                                                                    "colourfulness", "colourfulness_original")}
    n = len(rows)
    out: dict = {"photos": n, "gain_grey": float(np.mean(col["psnr"] - col["psnr_grey"])) if n else 0.0,
                 "gain_tint": float(np.mean(col["psnr"] - col["psnr_tint"])) if n else 0.0,
                 "colourfulness_ratio": (float(col["colourfulness"].mean() / max(col["colourfulness_original"].mean(),
                                                                                  1e-9)) if n else 0.0),
                 "interval": None}
    if n >= INTERVAL_MIN_PHOTOS:
        out["interval"] = {
            "level": INTERVAL_LEVEL,
            "gain_grey": bootstrap_interval(lambda i: float(np.mean(col["psnr"][i] - col["psnr_grey"][i])), n),
            "gain_tint": bootstrap_interval(lambda i: float(np.mean(col["psnr"][i] - col["psnr_tint"][i])), n),
            "colourfulness_ratio": bootstrap_interval(
                lambda i: float(col["colourfulness"][i].mean() / max(col["colourfulness_original"][i].mean(), 1e-9)),
                n),
        }
    return out


def group_table(report: dict, groups: Sequence[str], members: dict[str, list[str]] | None = None) -> dict:
    """{group: summarise(its rows)}, largest group first; ``groups`` names each row's group, in row order."""
    by: dict[str, list[dict]] = {}
    for row, g in zip(report["rows"], groups, strict=True):
        row["group"] = g
        by.setdefault(g, []).append(row)
    table = {g: {**summarise(rows), "holds": (members or {}).get(g, [g])}
             for g, rows in sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0]))}
    return table


def group_markdown(table: dict) -> str:
    lines = ["| group | photos | gain over grey (dB) | over the tint (dB) | colourfulness |",
             "|---|---:|---:|---:|---:|"]
    small = []
    for g, t in table.items():
        iv = t["interval"]
        if iv is None:
            small.append(g)
            lines.append(f"| {g} | {t['photos']} | {t['gain_grey']:+.2f} (no interval) | {t['gain_tint']:+.2f} | "
                         f"{t['colourfulness_ratio']:.2f} |")
        else:
            lines.append(f"| {g} | {t['photos']} | {t['gain_grey']:+.2f} ({_span(iv['gain_grey'])}) | "
                         f"{t['gain_tint']:+.2f} ({_span(iv['gain_tint'])}) | {t['colourfulness_ratio']:.2f} "
                         f"({iv['colourfulness_ratio'][0]:.2f} to {iv['colourfulness_ratio'][1]:.2f}) |")
    lines.append("")
    lines.append(f"In brackets: {INTERVAL_LEVEL:.0%} intervals over each group's photos (resampled).")
    if small:
        lines.append(f"Too few photos (under {INTERVAL_MIN_PHOTOS}) for an interval: {', '.join(small)}; "
                     "their means may be chance.")
    merged = [f"{g}: {', '.join(t['holds'])}" for g, t in table.items() if t["holds"] != [g]]
    if merged:
        lines.append("Groups pooled: " + "; ".join(merged) + ".")
    if len(table) > 1:
        lines.append(f"Mean over groups, each counted once: "
                     f"{np.mean([t['gain_grey'] for t in table.values()]):+.2f} dB over grey.")
    return "\n".join(lines)


EXAMPLE_HINTS = 10  # the hinted column of the example pictures: the colour-hints issue's bar


def takes_hints(model: CVUNet) -> bool:
    return int(getattr(model.config, "hint_channels", 0) or 0) > 0


def hint_seed_of(name: str, seed: int) -> int:
    """One seed per photo, from its name: the same photo gets the same hints in any order, at any N."""
    return zlib.crc32(f"{seed}:{name}".encode())


def hint_curve(colorizer: Colorizer, photos: list[tuple[str, np.ndarray]], report: dict, counts: Sequence[int],
               seed: int = 0) -> list[dict]:
    """Per hint count N: each photo colorized with N simulated hints, PSNR gain over grey (summarise).

    The hints are seeded per photo, so the N=5 hints start with the N=1 hint: the curve is each photo
    with more help, not a new draw at each N. N=0 runs through the same hinted path, with no hints.
    """
    from ..hints import simulate_hints

    curve = []
    for n in counts:
        rows = []
        for (name, rgb), row in zip(photos, report["rows"], strict=True):
            hints = simulate_hints(rgb, n, hint_seed_of(name, seed))
            out = colorizer.colorize(rgb, hints=hints)  # type: ignore[call-arg,unused-ignore]
            truth = rgb.astype(np.float32) / 255.0
            rows.append({**row, "psnr": psnr(out.astype(np.float32) / 255.0, truth),
                         "colourfulness": colourfulness(out)})
        curve.append({"hints": int(n), **summarise(rows), "psnr": float(np.mean([r["psnr"] for r in rows])),
                      "per_photo_psnr": [round(r["psnr"], 3) for r in rows]})
    return curve


def hint_markdown(curve: list[dict]) -> str:
    lines = ["| hints per photo | PSNR (dB) | gain over grey (dB) | colourfulness |", "|---:|---:|---:|---:|"]
    for c in curve:
        iv = c["interval"]
        span = f" ({_span(iv['gain_grey'])})" if iv else " (no interval)"
        lines.append(f"| {c['hints']} | {c['psnr']:.2f} | {c['gain_grey']:+.2f}{span} | "
                     f"{c['colourfulness_ratio']:.2f} |")
    return "\n".join(lines)


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
        f"Colorized vs grayscale: {m['gain_grey']:+.2f} dB; vs constant tint: "
        f"{m['gain_tint']:+.2f} dB; colourfulness {m['colourfulness_ratio']:.2f} of the originals'.",
    ]
    iv = report.get("interval") or {}
    n = len(report["rows"])
    if not iv:
        lines += ["", f"Too few photos ({n}) for an interval: a difference of a few tenths of a dB here may be "
                  "chance."]
    else:
        lines += ["", f"{iv['level']:.0%} intervals over these {n} photos (resampled): vs grayscale "
                  f"{_span(iv['gain_grey'])} dB, vs constant tint {_span(iv['gain_tint'])} dB, colourfulness "
                  f"{iv['colourfulness_ratio'][0]:.2f} to {iv['colourfulness_ratio'][1]:.2f}."]
    return "\n".join(lines)


def _span(iv: tuple[float, float] | list[float]) -> str:
    return f"{iv[0]:+.2f} to {iv[1]:+.2f}"


def comparison_line(c: dict, other_name: str) -> str:
    interval = (f"{INTERVAL_LEVEL:.0%} interval {_span(c['interval'])}" if c["interval"] is not None
                else "too few photos for an interval")
    return (f"Against {other_name}: {c['psnr_difference']:+.2f} dB PSNR ({interval}), better on "
            f"{c['better_on']} and worse on {c['worse_on']} of {c['photos']} photos; colourfulness "
            f"{c['colourfulness_ratio']:.2f} against {c['colourfulness_ratio_other']:.2f} "
            f"of the originals'.")


def run_evaluate(s: EvalSettings) -> int:
    photos, problems = load_folder(s.folder, s.split)
    for p in problems:
        print(p)
    if not photos:
        print("no colour photos to evaluate")
        return 1
    model = load_model(s.weights)
    if s.hints and not takes_hints(model):
        print(f"error: --hints: these weights take no colour hints ({s.weights or 'the shipped weights'}); "
              "evaluate hints with weights trained with --hint-channels", file=sys.stderr)
        return 2
    overrides = {key: getattr(s, key) for key in ("chroma_gain", "doubt_pull") if getattr(s, key) is not None}
    model.readout = replace(model.readout, **overrides)
    colorizer = Colorizer.create(ColorizeSettings(size=s.size, weights=s.weights, batch_size=1), model=model)
    report = evaluate_photos(colorizer, photos)
    if s.degrade:
        report["degraded"] = degraded_report(colorizer, photos, s.degrade_seed, s.folder)
    print(f"{'photo':40s} {'PSNR':>6s} {'grey':>6s} {'tint':>6s} {'ab err':>7s} {'colour':>7s} {'orig':>7s}")
    for r in report["rows"]:
        print(f"{r['photo'][:40]:40s} {r['psnr']:6.2f} {r['psnr_grey']:6.2f} {r['psnr_tint']:6.2f} "
              f"{r['ab_error']:7.2f} {r['colourfulness']:7.1f} {r['colourfulness_original']:7.1f}")
    if s.against is not None:
        other = Colorizer.create(ColorizeSettings(size=s.size, weights=s.against, batch_size=1))
        report["against"] = {"weights": str(s.against), **compare(report, evaluate_photos(other, photos))}
    groups, members = reporting_groups([name for name, _ in photos], s.folder)
    report["groups"] = group_table(report, groups, members)
    if s.hints:
        report["hint_curve"] = hint_curve(colorizer, photos, report, s.hints, s.hint_seed)
    table = markdown_table(report)
    if "against" in report:
        table += "\n\n" + comparison_line(report["against"], str(s.against))
    if len(report["groups"]) > 1:
        table += "\n\nBy source group (from the folder's MANIFEST.tsv):\n\n" + group_markdown(report["groups"])
    if "degraded" in report:
        table += "\n\n" + degraded_markdown(report, report["degraded"])
    if "hint_curve" in report:
        table += ("\n\nWith simulated colour hints (seeded random points, each the original's mean colour in a "
                  "5x5 patch):\n\n" + hint_markdown(report["hint_curve"]))
    print()
    print(f"{len(photos)} photos from {s.folder} (split: {s.split}), {colorizer.description}, "
          f"chroma gain {model.readout.chroma_gain}, doubt pull {model.readout.doubt_pull}")
    print(table)
    if s.json_path:
        Path(s.json_path).write_text(json.dumps(report, indent=2))
    if s.markdown_path:
        Path(s.markdown_path).write_text(table + "\n")
    if s.examples_dir:
        keys = group_keys([name for name, _ in photos], s.folder)
        save_examples(colorizer, photos, report, s.examples_dir, s.examples,
                      hints=EXAMPLE_HINTS if takes_hints(model) else 0, seed=s.hint_seed, keys=keys,
                      names=s.example_names)
        if "degraded" in report:
            save_examples(colorizer, photos, report["degraded"], s.examples_dir / "degraded", s.examples, keys=keys,
                          names=s.example_names, degrade_seed=s.degrade_seed)
    return 0


def degraded_copies(photos: list[tuple[str, np.ndarray]], seed: int) -> list[tuple[np.ndarray, list[str]]]:
    """Each photo's old-print scan, seeded by its name (the same set on every run and machine)."""
    from .degrade import degrade

    return [degrade(rgb, np.random.default_rng([seed, zlib.crc32(name.encode())])) for name, rgb in photos]


def degraded_report(colorizer: Colorizer, photos: list[tuple[str, np.ndarray]], seed: int, folder: Path) -> dict:
    copies = degraded_copies(photos, seed)
    report = evaluate_photos(colorizer, photos, [scan for scan, _ in copies])
    for row, (_, steps) in zip(report["rows"], copies, strict=True):
        row["degradations"] = steps
    groups, members = reporting_groups([name for name, _ in photos], folder)
    report["groups"] = group_table(report, groups, members)
    return report


def degraded_markdown(clean: dict, degraded: dict) -> str:
    """Clean and degraded side by side: chroma-only gain over grey, ab error, colourfulness, per group."""
    def gain(r: dict) -> str:
        iv = r.get("interval")
        span = f" ({_span(iv['gain_grey'])})" if iv else ""
        return f"{r['gain_grey']:+.2f}{span}"

    lines = ["Clean grey copies against old-print scans of the same photos (seeded, `degrade.py`), judged on colour "
             "alone (the output's ab with the original's L); gain over grey in dB with 90% intervals:", "",
             "| group | photos | clean | degraded | ab error clean / degraded | colourfulness clean / degraded |",
             "|---|---:|---:|---:|---:|---:|"]
    rows = [("all", summarise(clean["rows"]), summarise(degraded["rows"]), clean["rows"], degraded["rows"])]
    for name, table in degraded.get("groups", {}).items():
        if len(degraded.get("groups", {})) > 1:
            rows.append((name, clean["groups"][name], table, None, None))
    for name, c, d, crows, drows in rows:
        errors = ""
        if crows is not None and drows is not None:
            errors = (f"{np.mean([r['ab_error'] for r in crows]):.2f} / "
                      f"{np.mean([r['ab_error'] for r in drows]):.2f}")
        lines.append(f"| {name} | {c['photos']} | {gain(c)} | {gain(d)} | {errors} | "
                     f"{c['colourfulness_ratio']:.2f} / {d['colourfulness_ratio']:.2f} |")
    return "\n".join(lines)


def save_examples(colorizer: Colorizer, photos: list[tuple[str, np.ndarray]], report: dict, folder: Path,
                  n: int, hints: int = 0, seed: int = 0, keys: Sequence[str] | None = None,
                  names: Sequence[str] = (), degrade_seed: int | None = None) -> None:
    """Grey | colorized | original strips for a spread of photos (best, median, worst PSNR gain).

    With ``degrade_seed`` the strips are old-print scan | colorized from the scan | original instead, the scan the
    one ``degraded_report`` made of that photo and ``report`` its degraded report (picks by the scans' gains).

    With ``hints`` (weights that take them), a column colorized with that many simulated hints (drawn as
    rings) goes before the original. With ``keys`` (each photo's MANIFEST group), a photo of people is
    among them where there is one: people are what a family archive holds.
    """
    import cv2

    from ..hints import simulate_hints

    folder.mkdir(parents=True, exist_ok=True)
    order = sorted(range(len(photos)), key=lambda i: report["rows"][i]["psnr"] - report["rows"][i]["psnr_grey"])
    picks = {order[round(k * (len(order) - 1) / max(1, n - 1))] for k in range(n)}
    people = [i for i in order if keys is not None and keys[i] == "people"]
    if people and not picks & set(people):
        picks.add(people[len(people) // 2])  # the median one of them, not the best
    picks |= {i for i, (name, _) in enumerate(photos) if name in set(names)}
    for name in sorted(set(names) - {name for name, _ in photos}):
        print(f"--example-names: {name} is not among the photos evaluated; left out")
    for i in sorted(picks):
        name, rgb = photos[i]
        if degrade_seed is not None:
            scan = degraded_copies([photos[i]], degrade_seed)[0][0]
            columns = [scan, colorizer.colorize(scan)]
        else:
            columns = [to_uint8(grey_rgb(rgb_to_lab(rgb)[..., 0])), colorizer.colorize(rgb)]
        if hints and degrade_seed is None:
            points = simulate_hints(rgb, hints, hint_seed_of(name, seed))
            hinted = colorizer.colorize(rgb, hints=points).copy()  # type: ignore[call-arg,unused-ignore]
            radius = max(3, min(rgb.shape[:2]) // 60)
            for p in points:
                r, c = p.pixel(*rgb.shape[:2])
                cv2.circle(hinted, (c, r), radius + 2, (255, 255, 255), 2, cv2.LINE_AA)
                cv2.circle(hinted, (c, r), radius, p.rgb, -1, cv2.LINE_AA)
            columns.append(hinted)
        strip = np.concatenate([*columns, rgb], axis=1)
        scale = min(1.0, (300 * len(columns) + 300) / strip.shape[1])
        if scale < 1:
            strip = cv2.resize(strip, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
        stem = Path(name).stem
        cv2.imwrite(str(folder / f"{stem}.jpg"), cv2.cvtColor(strip, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 88])
