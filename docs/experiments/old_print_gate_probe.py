"""Probe for the old-print gate (docs/experiments/README.md, "an old-print gate"): fits the gate on the training
split, then on each held-out set runs the shipped model and old-prints on the clean grey copies, on degrade.py's
scans (seed 0) and on a second degradation model's scans, and routes each input by the gate.

    python docs/experiments/old_print_gate_probe.py --out /tmp/gate-probe.json --sets validation c-test set-a set-b
    python docs/experiments/old_print_gate_probe.py --out /tmp/c-rest.json --sets c-rest --clean-share 0.02
    python docs/experiments/old_print_gate_probe.py --report /tmp/gate-probe.json --clean-share 0.02
"""

from __future__ import annotations

import argparse
import json
import zlib
from pathlib import Path

import cv2
import numpy as np

from engine.color import lightness
from engine.colorizer import Colorizer
from engine.intervals import bootstrap_interval
from engine.named_models import OLD_PRINTS, model_path
from engine.options import ColorizeSettings
from engine.print_look import measures
from engine.training.evaluate import degraded_copies, evaluate_photos, load_folder
from engine.training.print_gate import examples, fit_gate, grey_copy

SETS = {"validation": ("../shared/photos/train", "validation"), "c-test": ("/work/extra-c-test", "all"),
        "set-a": ("/work/external-photos", "all"), "set-b": ("/work/extra-photos-b", "all"),
        "c-rest": ("/work/extra-c-rest", "all")}


def other_degrade(rgb: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A second old-print model, every step at once: fade with lifted blacks, blur, grain, a sepia or cold tint
    in three channels, dust, scratches, JPEG at quality 70. Its own code and ranges, not degrade.py's.
    """
    h, w = rgb.shape[:2]
    s = max(h, w) / 1024.0
    g = lightness(rgb) / 100.0
    black, white, gamma = rng.uniform(0.08, 0.2), rng.uniform(0.8, 0.95), rng.uniform(0.8, 1.25)
    g = black + (white - black) * np.power(np.clip(g, 0, 1), gamma)
    g = cv2.GaussianBlur(g.astype(np.float32), (0, 0), max(0.3, rng.uniform(0.7, 2.0) * s))
    cell = rng.uniform(1.0, 2.2) * max(s, 0.5)
    nh, nw = max(2, int(h / cell)), max(2, int(w / cell))
    noise = cv2.resize(rng.standard_normal((nh, nw)).astype(np.float32), (w, h), interpolation=cv2.INTER_CUBIC)
    g = g + rng.uniform(0.02, 0.06) * noise * (0.5 + g)
    for _ in range(int(rng.integers(20, 80))):
        cv2.circle(g, (int(rng.integers(0, w)), int(rng.integers(0, h))), int(max(1, rng.uniform(1, 3) * s)),
                   float(rng.choice([0.05, 0.95])), -1)
    for _ in range(int(rng.integers(2, 6))):
        x0 = int(rng.integers(0, w))
        cv2.line(g, (x0, 0), (int(np.clip(x0 + rng.integers(-w // 8, w // 8 + 1), 0, w - 1)), h - 1),
                 float(rng.uniform(0.8, 1.0)), max(1, int(s)))
    g = np.clip(g, 0, 1)
    tint = np.array([1.0, 0.86, 0.66] if rng.random() < 0.5 else [0.84, 0.92, 1.0], np.float32)
    amount = rng.uniform(0.4, 0.9)
    rgb_out = g[..., None] * (1 - amount + amount * tint)
    out = np.clip(rgb_out * 255 + 0.5, 0, 255).astype(np.uint8)
    ok, enc = cv2.imencode(".jpg", out[..., ::-1], [cv2.IMWRITE_JPEG_QUALITY, 70])
    return cv2.imdecode(enc, cv2.IMREAD_COLOR)[..., ::-1].copy()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path)
    ap.add_argument("--gate-out", type=Path)
    ap.add_argument("--sets", nargs="+", choices=list(SETS), default=list(SETS)[:4])
    ap.add_argument("--clean-share", type=float, default=0.05)
    ap.add_argument("--report", type=Path, help="report an earlier --out again at this --clean-share's threshold")
    args = ap.parse_args()
    train, _ = load_folder(Path("../shared/photos/train"), "train")
    feats, labels = examples(train)
    gate = fit_gate(feats, labels, args.clean_share)
    if args.report:
        earlier = json.loads(args.report.read_text())
        assert np.allclose(earlier["gate"]["weights"], gate.weights), "another gate: its scores do not carry over"
        earlier["gate"]["threshold"] = gate.threshold
        report(earlier)
        return
    train_scores = np.array([gate.score(f) for f in feats])
    print(f"gate fitted on {len(train)} training photos; threshold {gate.threshold:.3f}; on them: clean flagged "
          f"{np.mean(train_scores[labels == 0] > gate.threshold):.3f}, scans caught "
          f"{np.mean(train_scores[labels == 1] > gate.threshold):.3f}")
    if args.gate_out:
        args.gate_out.write_text(gate.to_json())
    models = {"shipped": Colorizer.create(ColorizeSettings(size=256, batch_size=1)),
              OLD_PRINTS: Colorizer.create(ColorizeSettings(size=256, batch_size=1, weights=model_path(OLD_PRINTS)))}
    result: dict = {"gate": json.loads(gate.to_json()), "sets": {}}
    for set_name in args.sets:
        folder, split = SETS[set_name]
        photos, _ = load_folder(Path(folder), split)
        inputs = {
            "clean": [grey_copy(rgb) for _, rgb in photos],
            "degraded": [scan for scan, _ in degraded_copies(photos, 0)],
            "other": [other_degrade(rgb, np.random.default_rng([11, zlib.crc32(n.encode())])) for n, rgb in photos],
        }
        entry: dict = {}
        for kind, given in inputs.items():
            scores = [gate.score(measures(x)) for x in given]
            runs = {m: evaluate_photos(c, photos, given)["rows"] for m, c in models.items()}
            entry[kind] = {"scores": scores, "rows": runs}
        result["sets"][set_name] = entry
        print(set_name, len(photos), "photos done", flush=True)
    args.out.write_text(json.dumps(result))
    report(result)


def col(rows: list[dict]) -> float:
    return sum(r["colourfulness"] for r in rows) / sum(r["colourfulness_original"] for r in rows)


def mean_interval(d: np.ndarray) -> tuple[float, float]:
    return bootstrap_interval(lambda i: float(d[i].mean()), len(d))


def report(result: dict) -> None:
    thr = result["gate"]["threshold"]
    print(f"\nthreshold {thr:.3f}")
    pooled: dict = {k: [] for k in ("clean", "degraded", "other")}
    for set_name, entry in result["sets"].items():
        for kind, e in entry.items():
            flag = np.array(e["scores"]) > thr
            ship = e["rows"]["shipped"]
            old = e["rows"][OLD_PRINTS]
            d = np.array([(o["psnr"] - s["psnr"]) if f else 0.0 for f, s, o in zip(flag, ship, old, strict=True)])
            oracle = np.array([o["psnr"] - s["psnr"] for s, o in zip(ship, old, strict=True)])
            routed = [o if f else s for f, s, o in zip(flag, ship, old, strict=True)]
            gain = np.mean([r["psnr"] - r["psnr_grey"] for r in routed])
            gain_s = np.mean([r["psnr"] - r["psnr_grey"] for r in ship])
            iv = mean_interval(d)
            print(f"{set_name:10s} {kind:8s} to old-prints {flag.mean():.2f}  route−shipped {d.mean():+.3f} "
                  f"({iv[0]:+.2f} to {iv[1]:+.2f})  old-prints−shipped on all {oracle.mean():+.3f}  "
                  f"gain over grey {gain_s:+.2f} -> {gain:+.2f}  colour {col(ship):.3f} -> {col(routed):.3f}")
            pooled[kind].append((d, flag))
    for kind, parts in pooled.items():
        d = np.concatenate([p[0] for p in parts])
        flag = np.concatenate([p[1] for p in parts])
        iv = mean_interval(d)
        print(f"pooled     {kind:8s} to old-prints {flag.mean():.2f}  route−shipped {d.mean():+.3f} "
              f"({iv[0]:+.3f} to {iv[1]:+.3f}), n={len(d)}")


if __name__ == "__main__":
    main()
