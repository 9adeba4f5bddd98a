"""The one atomic-write helper: old file or complete new one, synced, never a leftover temporary file."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import random_model
from PIL import Image

from engine import atomic, imageio, partials
from engine.weights import read_weights, save_weights


@pytest.fixture
def events(monkeypatch) -> list[str]:
    """Records every fsync (of a file or a folder) and every rename, in order."""
    seen: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        seen.append("fsync folder" if os.path.isdir(f"/proc/self/fd/{fd}") else "fsync file")
        real_fsync(fd)

    def replace(src, dst) -> None:
        seen.append("replace")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return seen


def test_the_new_content_replaces_the_old_after_a_file_sync_and_before_a_folder_sync(tmp_path, events):
    final = tmp_path / "card.json"
    final.write_text("old")
    atomic.write_text(final, "new")
    assert final.read_text() == "new"
    assert os.listdir(tmp_path) == ["card.json"]
    if os.path.isdir("/proc/self/fd"):  # Linux: tell a file's fsync from a folder's
        assert events == ["fsync file", "replace", "fsync folder"]
    else:
        assert events.index("replace") > 0 and len(events) >= 2


def test_a_write_failing_midway_keeps_the_old_file_and_leaves_no_temporary_file(tmp_path, events):
    final = tmp_path / "photo.png"
    final.write_bytes(b"old photo")
    with pytest.raises(OSError, match="disk full"):
        with atomic.atomic_write(final) as f:
            f.write(b"half a new ph")
            raise OSError(errno.ENOSPC, "disk full")
    assert final.read_bytes() == b"old photo"
    assert os.listdir(tmp_path) == ["photo.png"]
    assert "replace" not in events


def test_an_interrupt_midway_also_removes_the_temporary_file(tmp_path):
    final = tmp_path / "weights.pt"
    with pytest.raises(KeyboardInterrupt):
        with atomic.atomic_write(final) as f:
            f.write(b"x")
            raise KeyboardInterrupt
    assert os.listdir(tmp_path) == []


def test_a_callers_own_temporary_name_is_used(tmp_path, monkeypatch):
    final = tmp_path / "out.png"
    tmp = partials.partial_name(final)
    seen: list[Path] = []
    real_open = open

    def spy(path, *args, **kwargs):
        seen.append(Path(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", spy)
    atomic.write_bytes(final, b"data", tmp=tmp)
    assert seen == [tmp]
    assert final.read_bytes() == b"data" and not tmp.exists()


def test_encode_syncs_and_a_failing_encoder_keeps_the_old_output(tmp_path, events, monkeypatch):
    final = tmp_path / "photo.png"
    rgb = np.full((8, 8, 3), 100, np.uint8)
    imageio.encode(final, rgb)
    assert "fsync file" in events or len(events) >= 2
    old = final.read_bytes()

    def failing_save(self, fp, *args, **kwargs):
        fp.write(b"\x89PNG partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Image.Image, "save", failing_save)
    with pytest.raises(imageio.OutputUnwritable) as info:
        imageio.encode(final, rgb)
    assert info.value.whole_disk
    assert final.read_bytes() == old
    assert os.listdir(tmp_path) == ["photo.png"]  # no partial left for clean_partials to find


def test_a_16_bit_encode_is_atomic_too(tmp_path, events):
    final = tmp_path / "deep.tif"
    imageio.encode(final, np.full((8, 8, 3), 40000, np.uint16))
    assert events.count("replace") == 1 and events.index("replace") > 0
    assert os.listdir(tmp_path) == ["deep.tif"]


def test_saving_weights_syncs_and_a_failure_keeps_the_old_weights(tmp_path, events, monkeypatch):
    path = tmp_path / "model.pt"
    model = random_model()
    save_weights(model, path, meta={"run": "first"})
    assert events.index("replace") > 0  # a sync came before the rename
    assert read_weights(path)["meta"] == {"run": "first"}

    def failing_save(obj, f, *args, **kwargs):
        f.write(b"PK half a zip")
        raise RuntimeError("killed while writing")

    monkeypatch.setattr(torch, "save", failing_save)
    with pytest.raises(RuntimeError, match="killed"):
        save_weights(model, path, meta={"run": "second"})
    assert read_weights(path)["meta"] == {"run": "first"}
    assert os.listdir(tmp_path) == ["model.pt"]
