"""Split a built photo set into two folders by package: a test side no training sees, and the rest.

Why by package, not by photo: a test of "photos from sources the training never saw" must keep whole
sources out. The side is fixed by the package name's sha256 (mod 3 == 0: test), so it does not depend on
what the photos look like or on how a model does on them.

    python tools/external_photos/split_by_package.py BUILT_SET TEST_OUT REST_OUT
"""

from __future__ import annotations

import csv
import hashlib
import shutil
import sys
from pathlib import Path


def is_test_package(package: str) -> bool:
    return int(hashlib.sha256(package.encode()).hexdigest(), 16) % 3 == 0


def split(built: Path, test_out: Path, rest_out: Path) -> tuple[int, int]:
    """Copy each photo of ``built`` (with its MANIFEST.tsv row) to its side; returns (test, rest) counts."""
    with (built / "MANIFEST.tsv").open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh, delimiter="\t")
        fields = list(reader.fieldnames or [])
        rows = list(reader)
    sides: dict[Path, list[dict[str, str]]] = {test_out: [], rest_out: []}
    for row in rows:
        package = row["original_file"].split(":", 1)[0]
        sides[test_out if is_test_package(package) else rest_out].append(row)
    for out, kept in sides.items():
        out.mkdir(parents=True, exist_ok=True)
        for row in kept:
            shutil.copy2(built / row["file"], out / row["file"])
        with (out / "MANIFEST.tsv").open("w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=fields, delimiter="\t", lineterminator="\n")
            writer.writeheader()
            writer.writerows(kept)
    return len(sides[test_out]), len(sides[rest_out])


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    test, rest = split(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
    print(f"test {test}, rest {rest}")
