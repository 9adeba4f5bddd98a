"""What the contained rule picks from each chosen card's search, with and without the restraint rows, and the least
leak within wider slacks (the trade, as contained-spread/tradeoff.txt gave it).
"""

import json
import sys

sys.path.insert(0, ".")
from engine.training.hint_locality import least_harm  # noqa: E402
from engine.weights import read_weights  # noqa: E402

KEYS = ("reach", "lightness", "floor", "colour", "fade", "restraint")
for path in sys.argv[1:]:
    spread = json.loads(read_weights(path)["meta"]["card"])["readout"]["hint_spread"]
    rows = spread["search"]
    best = max(r["psnr"] for r in rows)
    print(f"{path}: {len(rows)} spreads; best 10-hint PSNR {best:.2f} dB")
    for name, subset in (("all", rows), ("restraint 0 only", [r for r in rows if not r.get("restraint")])):
        for slack in (0.3, 0.6, 1.0):
            r = least_harm(subset, slack, off_colour=True)
            print(f"  {name:16s} slack {slack}: {tuple(r.get(k, 0.0) for k in KEYS)} {r['psnr']:.2f} dB, harm "
                  f"{r['one_hint_harm']:.2f}, leak {r['one_hint_off_leak']:.2f}, help {r['one_hint_help']:.2f}, "
                  f"far moved {100 * r['one_hint_far_moved']:.1f}%")
