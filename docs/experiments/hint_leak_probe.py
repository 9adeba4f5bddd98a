"""Probe (not a decision): does one hint colour its own region, and do two variants of the spread change that?

    python docs/experiments/hint_leak_probe.py ../external-photos 12

Three seeded single hints per photo (the original's colour at a random point), the shipped model at 512, fp32.
Mean ab error against the original over the photo, near the hint (within 0.15 of the shorter side) and far
from it (beyond 0.35): the automatic colours ("none"), the shipped spread ("hinted"), the colour term against the
automatic colours instead of the hinted ones ("automatic"), and that plus the network's own hint response held to
the hint's region ("held").
"""
import glob
import sys

import cv2
import numpy as np

sys.path.insert(0, "/work/main")
from engine.color import rgb_to_lab
from engine.colorizer import Colorizer, pack, pack_hints, prepare
from engine.hints import Hint, spread_hints
from engine.imageio import decode
from engine.options import ColorizeSettings

c = Colorizer.create(ColorizeSettings(device="cpu", precision="fp32", size=512))
sp = c.model.config.spread
rng = np.random.default_rng(0)
files = sorted(glob.glob(sys.argv[1] + "/*.jpg"))[: int(sys.argv[2])]
res = {"hinted": [], "automatic": [], "held": [], "none": []}
for f in files:
    rgb = decode(f).pixels
    if rgb.ndim != 3:
        continue
    item = prepare(rgb, 512)
    h, w = item.small.shape
    lab = rgb_to_lab(cv2.resize(rgb, (w, h), interpolation=cv2.INTER_AREA))
    auto = c.infer(pack([item]))[0]
    for _ in range(3):
        y, x = rng.uniform(0.2, 0.8, 2)
        r, cc = int(y * h), int(x * w)
        # the original's colour at the point, as a user who knows it would click
        rgbp = rgb[int(y*rgb.shape[0]), int(x*rgb.shape[1])]
        hint = Hint(float(x), float(y), tuple(int(v) for v in rgbp))
        hinted = c.infer(pack([item]), pack_hints([item], [[hint]]))[0]
        h2, w2 = (h + 1)//2, (w + 1)//2
        Lh = cv2.resize(item.small, (w2, h2), interpolation=cv2.INTER_AREA)
        labh = cv2.resize(lab, (w2, h2), interpolation=cv2.INTER_AREA)
        crop = np.ascontiguousarray(hinted[:, :h2, :w2].transpose(1, 2, 0)) * np.float32(sp.gain)
        acrop = np.ascontiguousarray(auto[:, :h2, :w2].transpose(1, 2, 0))
        for name, ref in (("hinted", None), ("automatic", acrop), ("held", "held"), ("none", "none")):
            if isinstance(ref, str) and ref == "none":
                out = acrop
            elif isinstance(ref, str) and ref == "held":
                # m: a hint's share at each pixel, from a spread of a unit correction
                unit = spread_hints(Lh, acrop, [Hint(hint.x, hint.y, hint.rgb)], sp, acrop)
                want = unit[int(y*h2), int(x*w2)] - acrop[int(y*h2), int(x*w2)]
                m = np.clip(((unit - acrop) * want).sum(-1) / max(float((want ** 2).sum()), 1e-6), 0, 1)[..., None]
                base = acrop + m * (crop - acrop)
                out = spread_hints(Lh, base, [hint], sp, acrop)
            else:
                out = spread_hints(Lh, crop, [hint], sp, ref)
            err = np.hypot(*(out - labh[..., 1:]).transpose(2, 0, 1))
            yy, xx = np.mgrid[0:h2, 0:w2]
            d = np.hypot(yy - y*h2, xx - x*w2) / min(h2, w2)
            near = d < 0.15
            far = d > 0.35
            res[name].append((err.mean(), err[near].mean(), err[far].mean() if far.any() else np.nan))
for k, v in res.items():
    whole, near, far = np.nanmean(np.array(v), 0)
    print(f"{k} mean ab err all {whole:.2f} near {near:.2f} far {far:.2f} ({len(v)} hints)")

