"""Faults: kill -9 mid-batch, full or read-only disks, output folder = input folder, paths that try to
escape, the GPU running out of memory, weight files that try to run code.

How each fault is made (the tests run as root, on a machine without a GPU):
- kill -9: the real CLI in a subprocess, SIGKILLed once a few outputs exist.
- disk full / read-only / permission denied: root ignores permissions and cannot mount, so the
  pipeline's writes are made to fail: ``open`` as seen by engine.imageio and engine.atomic, and
  ``Path.mkdir``, raise ``OSError(ENOSPC | EROFS | EACCES)``, exactly what the kernel returns.
  An output folder that cannot be created at all is real: its parent is a regular file.
- CUDA out of memory: a runtime that claims to be on CUDA and raises ``torch.cuda.OutOfMemoryError``
  (the class torch raises; it exists in CPU builds) for the canvases it is told to refuse.
"""

from __future__ import annotations

import builtins
import errno
import hashlib
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
from helpers import ROOT, random_model, write_grey
from PIL import Image

import engine.atomic as atomic
import engine.batch.pipeline as pipeline_mod
import engine.imageio as imageio
from engine import cli
from engine.batch.inputs import collect_inputs
from engine.batch.pipeline import BatchPipeline
from engine.colorizer import Colorizer
from engine.options import ColorizeSettings, ExportOptions, Job
from engine.partials import PARTIAL_MARK, clean_partials, partial_name
from engine.weights import WeightsError, load_model, save_weights


@pytest.fixture(scope="module")
def model():
    return random_model()


@pytest.fixture(scope="module")
def colorizer(model):
    return Colorizer.create(ColorizeSettings(device="cpu", size=64, batch_size=3), model=model)


@pytest.fixture(scope="module")
def weights(tmp_path_factory, model):
    path = tmp_path_factory.mktemp("w") / "model.pt"
    save_weights(model, path)
    return path


def env():
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def fully_decodes(path: Path) -> tuple[int, int]:
    """(width, height) of a complete image file; raises on a truncated or damaged one."""
    with Image.open(path) as im:
        im.load()  # engine.imageio set LOAD_TRUNCATED_IMAGES = False: a short file raises
        size = im.size
    assert cv2.imread(str(path)) is not None
    return size


def partials(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if PARTIAL_MARK in p.name]


# -- kill -9 and resume -------------------------------------------------------------------------------


def test_kill_9_mid_batch_leaves_only_complete_outputs_and_a_resumed_run_finishes(tmp_path, weights):
    src, out = tmp_path / "in", tmp_path / "out"
    n = 40
    sizes = {}
    for i in range(n):
        name = f"scan {i:03d}.{'jpg' if i % 2 else 'png'}"
        h, w = 600 + (i % 3) * 40, 800 - (i % 4) * 30
        write_grey(src / name, h, w, i)
        sizes[name] = (w, h)
    args = [sys.executable, str(ROOT / "main.py"), "colorize", str(src), "--output", str(out), "--size", "64",
            "--weights", str(weights), "--skip-existing"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env(), cwd=ROOT)
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            finals = [p for p in out.glob("*") if PARTIAL_MARK not in p.name] if out.is_dir() else []
            if len(finals) >= 3:
                break
            time.sleep(0.01)
        assert proc.poll() is None, "the batch ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    finals = [p for p in out.iterdir() if PARTIAL_MARK not in p.name]
    assert 3 <= len(finals) < n
    for p in finals:  # every file under a final name is a whole photo
        assert fully_decodes(p) == sizes[p.name]
    # Whatever the kill left, plus a leftover of an older run, is cleaned by the next run.
    (out / f".scan 000.png.deadbeef{PARTIAL_MARK}").write_bytes(b"half a photo")
    before = {p.name: p.stat().st_mtime_ns for p in finals}

    p = subprocess.run(args, capture_output=True, text=True, env=env(), cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    assert f"{n - len(finals)} photos in" in p.stdout and f"{len(finals)} skipped" in p.stdout
    assert partials(out) == []
    assert sorted(x.name for x in out.iterdir()) == sorted(sizes)
    for x in out.iterdir():
        assert fully_decodes(x) == sizes[x.name]
    assert {name: (out / name).stat().st_mtime_ns for name in before} == before  # not redone


def test_clean_partials_keeps_the_files_of_a_writer_that_still_runs(tmp_path):
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        live = tmp_path / f".a.png.{sleeper.pid}-0badcafe{PARTIAL_MARK}"
        dead = tmp_path / f".b.png.{2**22 + 12345}-0badcafe{PARTIAL_MARK}"  # above any pid_max: no such process
        old = tmp_path / "sub" / f".c.png.0badcafe{PARTIAL_MARK}"  # the name older versions wrote
        for p in (live, dead, old):
            p.parent.mkdir(exist_ok=True)
            p.write_bytes(b"x")
        assert clean_partials(tmp_path) == 2
        assert live.exists() and not dead.exists() and not old.exists()
    finally:
        sleeper.kill()
        sleeper.wait()
    assert clean_partials(tmp_path) == 1


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="zombies are told apart through /proc")
def test_clean_partials_removes_the_files_of_a_writer_that_died_unreaped(tmp_path):
    """A Ray worker killed mid-write becomes a zombie where its new parent never reaps it; it writes no more."""
    dead = subprocess.Popen(["true"])
    try:
        deadline = time.monotonic() + 10
        while Path(f"/proc/{dead.pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0] != b"Z":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        os.kill(dead.pid, 0)  # still answers, as a running writer would
        partial = tmp_path / f".a.png.{dead.pid}-0badcafe{PARTIAL_MARK}"
        partial.write_bytes(b"x")
        assert clean_partials(tmp_path) == 1 and not partial.exists()
    finally:
        dead.wait()


def test_temporary_names_fit_where_the_final_name_fits(tmp_path):
    final = tmp_path / ("é" * 125 + ".png")  # 254 bytes in UTF-8
    tmp = partial_name(final)
    assert len(os.fsencode(tmp.name)) <= 255 and tmp.parent == final.parent and tmp.name.endswith(PARTIAL_MARK)


# -- full, read-only and forbidden disks -------------------------------------------------------------


def failing_writes(monkeypatch, code: int, *, after: int = 0, only: str | None = None) -> None:
    """Writes of outputs (and creating their folders) fail with ``code`` after ``after`` good ones,
    for paths containing ``only`` if given. Reading is untouched.
    """
    real_open, real_mkdir = builtins.open, Path.mkdir
    count = {"ok": 0}

    def hit(path) -> bool:
        return only is None or only in str(path)

    def fake_open(file, mode="r", *a, **kw):
        if any(m in mode for m in "wax") and hit(file):
            if count["ok"] >= after:
                raise OSError(code, os.strerror(code), str(file))
            count["ok"] += 1
        return real_open(file, mode, *a, **kw)

    def fake_mkdir(self, *a, **kw):
        if hit(self) and count["ok"] >= after and not self.exists():
            raise OSError(code, os.strerror(code), str(self))
        return real_mkdir(self, *a, **kw)

    monkeypatch.setattr(imageio, "open", fake_open, raising=False)  # module globals shadow builtins
    monkeypatch.setattr(atomic, "open", fake_open, raising=False)  # where outputs are written since engine.atomic
    monkeypatch.setattr(pipeline_mod.Path, "mkdir", fake_mkdir)


def grey_folder(root: Path, n: int, sub: str = "") -> list[Job]:
    for i in range(n):
        write_grey(root / sub / f"p{i:02d}.png", 40, 50, i)
    return collect_inputs([root])[0]


def test_disk_full_from_the_start_reports_per_photo_and_stops_cleanly(colorizer, tmp_path, monkeypatch):
    jobs = grey_folder(tmp_path / "in", 12)
    out = tmp_path / "out"
    out.mkdir()
    failing_writes(monkeypatch, errno.ENOSPC)
    results = []
    summary = BatchPipeline(colorizer, ExportOptions(out)).run(jobs, on_result=results.append)
    failed = [r for r in results if r.status == "failed"]
    cancelled = [r for r in results if r.status == "cancelled"]
    assert summary.done == 0 and len(failed) >= 2 and len(failed) + len(cancelled) == 12
    assert all(r.message == "disk full: cannot write the output" for r in failed)
    assert summary.stopped_reason == "stopped: disk full: cannot write the output"
    assert len(failed) <= 3 * 3 and cancelled  # stopped soon: at most the batches already in flight
    assert all(r.message == summary.stopped_reason for r in cancelled)
    assert sorted(r.index for r in results) == list(range(12))  # every photo accounted for, once
    assert list(out.iterdir()) == []  # no partial files either


def test_disk_filling_up_mid_batch_stops_after_the_photos_that_fit(colorizer, tmp_path, monkeypatch):
    jobs = grey_folder(tmp_path / "in", 12)
    out = tmp_path / "out"
    failing_writes(monkeypatch, errno.ENOSPC, after=4)
    summary = BatchPipeline(colorizer, ExportOptions(out, format="png")).run(jobs)
    assert summary.done == 4 and summary.stopped_reason and "disk full" in summary.stopped_reason
    written = sorted(p.name for p in out.iterdir())
    assert len(written) == 4 and all(fully_decodes(out / name) == (50, 40) for name in written)


def test_read_only_output_folder_is_reported_and_stops(colorizer, tmp_path, monkeypatch):
    jobs = grey_folder(tmp_path / "in", 8, sub="album")
    out = tmp_path / "out"
    out.mkdir()
    failing_writes(monkeypatch, errno.EROFS)
    summary = BatchPipeline(colorizer, ExportOptions(out)).run(jobs)
    failed = [r for r in summary.results if r.status == "failed"]
    assert summary.done == 0 and failed and all("read-only" in r.message for r in failed)
    assert summary.stopped_reason and "read-only" in summary.stopped_reason
    assert list(out.iterdir()) == []


def test_an_output_folder_no_file_can_be_written_in_stops_the_batch_before_its_first_photo(colorizer, tmp_path,
                                                                                          monkeypatch):
    jobs = grey_folder(tmp_path / "in", 8)
    out = tmp_path / "out"
    out.mkdir()

    def read_only(*a, **kw):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(pipeline_mod.tempfile, "mkstemp", read_only)
    summary = BatchPipeline(colorizer, ExportOptions(out)).run(jobs)
    assert summary.stopped_reason == f"cannot write in the output folder {out}: Read-only file system"
    assert summary.done == summary.failed == 0 and [r.status for r in summary.results] == ["cancelled"] * 8
    assert summary.line() == "No photo colorized, 8 not tried"
    assert list(out.iterdir()) == []


def test_one_forbidden_subfolder_fails_its_photos_but_not_the_batch(colorizer, tmp_path, monkeypatch):
    src = tmp_path / "in"
    for i in range(4):
        write_grey(src / f"a{i}.png", 30, 30, i)
        write_grey(src / "locked" / f"b{i}.png", 30, 30, i)
    jobs, _ = collect_inputs([src])
    failing_writes(monkeypatch, errno.EACCES, only=f"{os.sep}locked")
    summary = BatchPipeline(colorizer, ExportOptions(tmp_path / "out")).run(jobs)
    assert summary.done == 4 and summary.failed == 4 and summary.stopped_reason is None
    assert all("not writable" in r.message for r in summary.results if r.status == "failed")


def test_cli_reports_a_full_disk_per_photo_and_once_for_the_batch(tmp_path, weights, monkeypatch, capsys):
    grey_folder(tmp_path / "in", 6)
    (tmp_path / "out").mkdir()  # the folder exists; the disk fills up
    failing_writes(monkeypatch, errno.ENOSPC)
    code = cli.main(["colorize", str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--size", "64",
                     "--weights", str(weights)])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    lines = err.splitlines()
    assert lines[-1] == "error: stopped: disk full: cannot write the output"
    assert all(ln.endswith(".png: disk full: cannot write the output") for ln in lines[:-1]) and len(lines) >= 3


def test_cli_output_folder_that_cannot_be_created_is_one_clear_line(tmp_path, weights, capsys):
    grey_folder(tmp_path / "in", 2)
    blocker = tmp_path / "a file"
    blocker.write_text("in the way")
    code = cli.main(["colorize", str(tmp_path / "in"), "--output", str(blocker / "out"), "--size", "64",
                     "--weights", str(weights)])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert [ln for ln in err.splitlines() if ln.startswith("error:")] == [
        f"error: cannot create the output folder {blocker / 'out'}: Not a directory"]


# -- output folder = input folder, and paths that try to escape ---------------------------------------


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("if_exists", ["overwrite", "skip", "new_name"])
def test_output_folder_equal_to_the_input_folder_never_touches_an_input(colorizer, tmp_path, if_exists):
    src = tmp_path / "in"
    write_grey(src / "a.png", 30, 40, 1)
    write_grey(src / "b.jpg", 30, 40, 2)
    write_grey(src / "sub" / "c.png", 30, 40, 3)
    originals = digest(src)
    for _ in range(2):  # twice: the second run also meets the first run's outputs
        jobs, _ = collect_inputs([src])
        summary = BatchPipeline(colorizer, ExportOptions(src, if_exists=if_exists)).run(jobs)
        assert summary.failed == 0 and summary.stopped_reason is None
        for name, h in originals.items():
            assert digest(src)[name] == h, name
        assert all(r.output is None or r.output.resolve() != r.source.resolve() for r in summary.results)


def test_cli_output_folder_equal_to_the_input_folder_keeps_inputs(tmp_path, weights):
    src = tmp_path / "in"
    write_grey(src / "a.png", 30, 40, 1)
    write_grey(src / "nested" / "b.jpg", 30, 40, 2)
    originals = digest(src)
    p = subprocess.run([sys.executable, str(ROOT / "main.py"), "colorize", str(src), "--output", str(src),
                        "--size", "64", "--weights", str(weights)], capture_output=True, text=True, env=env(),
                       cwd=ROOT, timeout=240)
    assert p.returncode == 0, p.stderr
    after = digest(src)
    assert all(after[k] == v for k, v in originals.items())
    assert sorted(after) == sorted(["a.png", "a (1).png", "nested/b.jpg", "nested/b (1).jpg"])


def test_outputs_never_land_outside_the_output_folder(colorizer, tmp_path):
    src, out, outside = tmp_path / "in", tmp_path / "out", tmp_path / "outside"
    write_grey(src / "x.png", 20, 20, 1)
    write_grey(src / "sub" / "y.png", 20, 20, 2)
    write_grey(src / "..weird..name.png", 20, 20, 3)
    outside.mkdir()
    victim = outside / "victim.png"
    write_grey(victim, 10, 10, 4)
    victim_bytes = victim.read_bytes()
    out.mkdir()
    (out / "sub").symlink_to(outside, target_is_directory=True)  # a symlinked subfolder pointing away
    (out / "x.png").symlink_to(victim)  # an output name that is a symlink to a file elsewhere
    jobs = [Job(0, src / "sub" / "y.png", src),
            Job(1, Path(f"{src}/../in/sub/../x.png"), src),  # ".." in the path
            Job(2, src / "..weird..name.png", src),
            Job(3, src / "x.png", tmp_path / "somewhere else")]  # a root the photo is not under
    for pattern, if_exists in [("{stem}", "overwrite"), ("../../{stem}", "new_name"), ("..", "overwrite"),
                               ("{stem}/../../../x", "new_name")]:
        summary = BatchPipeline(colorizer, ExportOptions(out, name_pattern=pattern, if_exists=if_exists)).run(jobs)
        assert summary.done == 4, [r.message for r in summary.results]
        for r in summary.results:
            real = Path(os.path.realpath(r.output))
            assert Path(os.path.realpath(out)) in real.parents, (pattern, r.output)
    assert sorted(p.name for p in outside.iterdir()) == ["victim.png"]
    assert victim.read_bytes() == victim_bytes


# -- CUDA out of memory -------------------------------------------------------------------------------


class OomRuntime:
    """Claims to be on CUDA; raises CUDA's out-of-memory error for the canvases ``refuse`` picks,
    runs the rest on a real CPU runtime.
    """

    name, precision = "fake-cuda", "fp16"

    def __init__(self, real, refuse, device: str = "cuda") -> None:
        self.real, self.refuse, self.device = real, refuse, torch.device(device)
        self.calls: list[tuple[int, ...]] = []

    def run(self, L: np.ndarray) -> np.ndarray:
        self.calls.append(L.shape)
        if self.refuse(L):
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 GiB (GPU 0; 80 GiB total)"
                                              "\nIf reserved but unallocated memory is large try setting ...")
        return self.real.run(L)

    def release_memory(self) -> None:
        self.real.release_memory()


def oom_colorizer(colorizer, refuse, size=64, batch=4, device="cuda"):
    settings = ColorizeSettings(device="cpu", size=size, batch_size=batch).validated()
    return Colorizer(OomRuntime(colorizer.runtime, refuse, device), settings, colorizer.model)


def chroma(path: Path) -> float:
    rgb = cv2.cvtColor(cv2.imread(str(path)), cv2.COLOR_BGR2RGB).astype(np.float32) / 255.0
    lab = cv2.cvtColor(rgb, cv2.COLOR_RGB2Lab)
    return float(np.hypot(lab[..., 1], lab[..., 2]).mean())


def run_oom(c, tmp_path, n=5, size=(64, 64)):
    src = tmp_path / "in"
    for i in range(n):
        write_grey(src / f"p{i}.png", size[0], size[1], i)
    jobs, _ = collect_inputs([src])
    summary = BatchPipeline(c, ExportOptions(tmp_path / "out")).run(jobs)
    return summary


def test_oom_on_a_batch_retries_in_smaller_batches(colorizer, tmp_path):
    c = oom_colorizer(colorizer, refuse=lambda L: len(L) > 1)
    summary = run_oom(c, tmp_path)
    assert summary.done == 5 and c.batch_limit == 1
    assert all("smaller batches" in r.message for r in summary.results[:4])
    assert all(chroma(r.output) > 2 for r in summary.results)


def test_oom_on_one_photo_retries_it_at_half_the_working_size(colorizer, tmp_path):
    c = oom_colorizer(colorizer, refuse=lambda L: L.shape[2] * L.shape[3] > 64 * 64, size=128, batch=1)
    summary = run_oom(c, tmp_path, n=2, size=(128, 128))
    assert summary.done == 2
    assert all(r.message == "out of memory on the GPU: colorized at working size 64" for r in summary.results)
    assert all(chroma(r.output) > 2 for r in summary.results)


def test_oom_everywhere_on_the_gpu_falls_back_to_the_cpu(colorizer, tmp_path):
    c = oom_colorizer(colorizer, refuse=lambda L: True)
    summary = run_oom(c, tmp_path)
    assert summary.done == 5
    assert all(r.message == "out of memory on the GPU: colorized on the CPU" for r in summary.results)
    for r in summary.results:  # coloured: not the grey input passed off as a result
        assert chroma(r.output) > 2
        assert cv2.imread(str(r.output)).shape[:2] == (64, 64)


def test_oom_with_no_way_out_fails_the_photo_and_writes_nothing(colorizer, tmp_path):
    c = oom_colorizer(colorizer, refuse=lambda L: True, device="cpu", size=128)
    summary = run_oom(c, tmp_path, n=3, size=(100, 120))
    assert summary.done == 0 and summary.failed == 3 and summary.stopped_reason is None
    for r in summary.results:
        assert r.status == "failed" and r.output is None
        assert r.message.startswith("colorization failed: out of memory") and "\n" not in r.message
    assert list((tmp_path / "out").iterdir()) == []


def test_other_inference_errors_fail_the_batch_in_one_line_and_the_run_goes_on(colorizer, tmp_path):
    class Flaky:
        name, precision, device = "flaky", "fp32", torch.device("cpu")

        def __init__(self):
            self.n = 0

        def run(self, L):
            self.n += 1
            if self.n == 1:
                raise RuntimeError("cuDNN error: CUDNN_STATUS_INTERNAL_ERROR\nException raised from ...")
            return colorizer.runtime.run(L)

    c = Colorizer(Flaky(), ColorizeSettings(device="cpu", size=64, batch_size=2).validated(), colorizer.model)
    summary = run_oom(c, tmp_path, n=5)
    assert summary.failed == 2 and summary.done == 3
    assert all(r.message == "colorization failed: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR"
               for r in summary.results if r.status == "failed")


def test_cli_says_when_a_photo_was_colorized_on_the_cpu(tmp_path, weights, monkeypatch, capsys):
    import engine.colorizer as colorizer_mod

    real_make = colorizer_mod.make_runtime
    made = []

    def make(engine, model, device, precision, compile=False):
        runtime = real_make(engine, model, device, precision)
        made.append(runtime)
        # The first is the "GPU" runtime; the one made later for the fallback is the real CPU one.
        return OomRuntime(runtime, refuse=lambda L: True) if len(made) == 1 else runtime

    real_fallback = colorizer_mod.optimized_or_baseline

    def fallback(model, device, precision="fp32"):
        made.append(real_fallback(model, device, precision))
        return made[-1]

    monkeypatch.setattr(colorizer_mod, "make_runtime", make)
    monkeypatch.setattr(colorizer_mod, "optimized_or_baseline", fallback)
    write_grey(tmp_path / "in" / "one.png", 40, 50)
    code = cli.main(["colorize", str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--size", "64",
                     "--weights", str(weights), "--device", "cpu"])
    err = capsys.readouterr().err
    assert code == 0 and "Traceback" not in err and len(made) == 2
    assert f"{tmp_path / 'in' / 'one.png'}: note: out of memory on the GPU: colorized on the CPU" in err.splitlines()


# -- model files ---------------------------------------------------------------------------------------


class Payload:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))  # what a hostile pickle would do: run code on load


def test_weights_that_would_run_code_are_refused_without_running_it(tmp_path):
    marker = tmp_path / "pwned"
    raw = tmp_path / "raw.pt"  # a plain pickle
    raw.write_bytes(pickle.dumps({"format": "colorizer-weights", "x": Payload(marker)}))
    with pytest.raises(WeightsError):
        load_model(raw)
    evil = tmp_path / "zip.pt"  # torch's own zip format; saving pickles the payload without running it
    torch.save({"format": "colorizer-weights", "state": {}, "x": Payload(marker)}, evil)
    with pytest.raises(WeightsError):
        load_model(evil)
    assert not marker.exists()
