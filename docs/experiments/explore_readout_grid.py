"""Exploration, kept as the record behind docs/experiments (not part of the app): a read-out grid
on set A (unseen sources) and the 78 tuning photos (familiar).

Network once per photo at working size 512 (fp32); for each temperature the refinement, then doubt pulls and
gains on the half-size ab; PSNR and colourfulness at the working size. Saves per-photo arrays.
"""
import json
import sys
from pathlib import Path

import cv2
import numpy as np
import torch

sys.path.insert(0, "/work/main")
from engine import color
from engine.colorizer import pack, prepare
from engine.imageio import decode
from engine.model import ab_variance, annealed_mean, doubt_scale
from engine.weights import load_model

T = (0.45, 0.7, 1.0, 1.4)
PULLS = (0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
GAINS = (0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2)

weights = Path(sys.argv[1])
out = Path(sys.argv[2])
folders = sys.argv[3:]
model = load_model(weights).eval()
card = json.loads(weights.with_suffix(".json").read_text())
tuning = set(card["data"]["tuning_names"])
photos = []
for spec in folders:
    folder = Path(spec)
    names = sorted(p.name for p in folder.glob("*.jpg"))
    if "train" in spec:
        names = [n for n in names if n in tuning]
    photos += [(folder / n) for n in names]
res = {"names": [], "psnr": [], "colour": [], "grey": [], "orig_colour": [], "var": []}
torch.set_num_threads(2)
with torch.no_grad():
    for path in photos:
        rgb = decode(path).pixels
        item = prepare(rgb, 512)
        h, w = item.small.shape
        x = torch.from_numpy(pack([item]))
        logits, f1, hint_map = model._network(x, None)
        hf = model._hint_features(hint_map, f1)
        small_rgb = cv2.resize(rgb, (w, h), interpolation=cv2.INTER_AREA) if (h, w) != rgb.shape[:2] else rgb
        truth = small_rgb.astype(np.float32) / 255
        Ls = item.small
        grey = color.psnr(color.grey_rgb(Ls), truth)
        P = np.zeros((len(T), len(PULLS), len(GAINS)))
        C = np.zeros_like(P)
        V = []
        for i, t in enumerate(T):
            ab = model.refine(annealed_mean(logits.float(), model.bins, t), f1, hf)
            var = ab_variance(logits, model.bins, t)
            V.append(float(var[..., : (h + 3) // 4, : (w + 3) // 4].mean()))
            for j, pull in enumerate(PULLS):
                s = doubt_scale(var, pull) if pull else torch.ones_like(var)
                abp = ab * torch.nn.functional.interpolate(s, size=ab.shape[-2:], mode="bilinear", align_corners=False)
                a = abp[0].numpy()[:, : (h + 1) // 2, : (w + 1) // 2].transpose(1, 2, 0)
                a = cv2.resize(np.ascontiguousarray(a), (w, h), interpolation=cv2.INTER_LINEAR)
                for k, g in enumerate(GAINS):
                    out_rgb = color.join_lab(Ls, a * g)
                    P[i, j, k] = color.psnr(out_rgb, truth)
                    C[i, j, k] = color.colourfulness(color.to_uint8(out_rgb))
        res["names"].append(path.name)
        res["psnr"].append(P)
        res["colour"].append(C)
        res["grey"].append(grey)
        res["orig_colour"].append(color.colourfulness(small_rgb))
        res["var"].append(V)
        print(path.name, round(grey, 2), round(float(P.max()), 2), flush=True)
np.savez(out, T=T, PULLS=PULLS, GAINS=GAINS, **{k: np.array(v) for k, v in res.items()})
