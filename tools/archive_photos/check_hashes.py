"""Near-duplicate check of the archive set against reference photo folders, and inside the set.

A 16x16 dHash plus a 16x16 aHash (512 bits) per photo, as sets B and C were checked. Prints the closest
reference for every archive photo, the closest pairs overall, and the closest pairs inside each scene (frames
of one video must not be near-identical).

Usage: check_hashes.py ARCHIVE_DIR REF_DIR [REF_DIR ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from PIL import Image


def hash512(path: Path) -> np.ndarray:
    with Image.open(path) as im:
        g = im.convert("L")
        d = np.asarray(g.resize((17, 16), Image.Resampling.BILINEAR), dtype=np.int16)
        a = np.asarray(g.resize((16, 16), Image.Resampling.BILINEAR), dtype=np.float32)
    return np.concatenate([(d[:, 1:] > d[:, :-1]).ravel(), (a > a.mean()).ravel()])


def main(argv: list[str]) -> None:
    archive = sorted(Path(argv[0]).glob("*.jpg"))
    refs = [p for d in argv[1:] for p in sorted(Path(d).rglob("*.jpg"))]
    ha = np.stack([hash512(p) for p in archive])
    hr = np.stack([hash512(p) for p in refs])
    dist = (ha[:, None, :] != hr[None, :, :]).sum(-1)
    print(f"{len(archive)} archive photos against {len(refs)} reference photos")
    order = np.argsort(dist.min(1))
    for i in order[:10]:
        j = int(dist[i].argmin())
        print(f"  {dist[i, j]:4d} bits  {archive[i].name}  ~  {refs[j]}")
    inner = (ha[:, None, :] != ha[None, :, :]).sum(-1)
    np.fill_diagonal(inner, 10**6)
    print("closest pairs inside the set:")
    pairs = sorted((int(inner[i, j]), archive[i].name, archive[j].name) for i in range(len(archive)) for j in range(i))
    for d, a, b in pairs[:12]:
        print(f"  {d:4d} bits  {a}  ~  {b}")


if __name__ == "__main__":
    main(sys.argv[1:])
