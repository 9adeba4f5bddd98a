"""Where a cluster run reads and writes: local paths, or URIs (``s3://``, ``gs://``, ``file://``) on pyarrow
filesystems.

Workers copy an object-store photo to their own disk before decoding it, and upload an output under
a hidden temporary name before moving it into place, so the local run's decoder and writer serve both.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from ...imageio import IMAGE_EXTENSIONS, ImageError, write_error
from ...messages import short_reason
from ...partials import PARTIAL_MARK, partial_name

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):/+(.*)$")


def as_uri(path: object) -> str:
    """``path`` as given on the command line: a URI whose ``//`` ``Path`` collapsed is restored."""
    text = str(path)
    m = _SCHEME.match(text)
    if m is None or len(m.group(1)) < 2:  # plain paths, and Windows drive letters
        return text
    scheme, rest = m.group(1).lower(), m.group(2)
    if "://" in text:
        return text
    return f"file:///{rest}" if scheme == "file" else f"{scheme}://{rest}"


def is_uri(text: str) -> bool:
    m = _SCHEME.match(text)
    return m is not None and len(m.group(1)) >= 2


def open_filesystem(uri: str) -> tuple[Any, str]:
    """(pyarrow filesystem, path in it) for a URI (``s3://``, ``gs://``, ``file://``)."""
    from pyarrow import fs

    return fs.FileSystem.from_uri(uri)


def collect_uri(uri: str, fs_id: int, filesystem: Any, path: str) -> tuple[list[tuple[Path, Path, int]], list[str]]:
    """Photos under a URI, as collect_inputs finds them in folders: sorted, partial files left out."""
    from pyarrow import fs

    info = filesystem.get_file_info(path)
    if info.type == fs.FileType.NotFound:
        return [], [f"{uri}: no such file or folder"]
    if info.type == fs.FileType.File:
        p = Path(info.path)
        return [(p, p.parent, fs_id)], []
    found = []
    for f in filesystem.get_file_info(fs.FileSelector(path, recursive=True)):
        name = f.base_name
        if f.type == fs.FileType.File and Path(name).suffix.lower() in IMAGE_EXTENSIONS \
                and not name.endswith(PARTIAL_MARK):
            found.append(Path(f.path))
    return [(p, Path(path), fs_id) for p in sorted(found)], []


def mirror_existing(filesystem: Any, base: str, stand_in: Path) -> None:
    """An empty file under ``stand_in`` for each file under ``base``: what the output planner reads."""
    from pyarrow import fs

    for f in filesystem.get_file_info(fs.FileSelector(base, recursive=True, allow_not_found=True)):
        if f.type == fs.FileType.File:
            target = stand_in / Path(f.path).relative_to(base)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.touch()


def fetch(filesystem: Any, path: str, folder: str) -> Path:
    """A copy of an object-store photo on this worker's disk, for the same decoder as local files."""
    local = Path(folder) / f"photo{Path(path).suffix}"
    try:
        with filesystem.open_input_stream(path) as src, open(local, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    except FileNotFoundError:
        raise ImageError("file not found") from None
    except Exception as err:  # noqa: BLE001 - storage clients raise many kinds
        raise ImageError(f"unreadable file ({short_reason(err)})") from None
    return local


def put(filesystem: Any, local: Path, final: str) -> None:
    """Upload a written output under a hidden temporary name, then move it into place.

    On object storage the final object appears whole when the move's copy completes; on a
    mounted or local file system the move is a rename.
    """
    hidden = partial_name(Path(final)).as_posix()
    try:
        filesystem.create_dir(Path(final).parent.as_posix(), recursive=True)
        with open(local, "rb") as src, filesystem.open_output_stream(hidden) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        filesystem.move(hidden, final)
    except Exception as err:  # noqa: BLE001 - storage clients raise many kinds
        try:
            filesystem.delete_file(hidden)
        except Exception:  # noqa: BLE001 - nothing there to delete
            pass
        if isinstance(err, OSError) and err.errno is not None:
            raise write_error(err) from None
        raise ImageError(f"could not write the output ({short_reason(err)})") from None
