"""scripts/run.sh on a bare system: names the libraries Qt's X11 plugin lacks, with the apt-get line.

``ldd`` is faked on PATH, so these tests do not depend on what this machine has installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import ROOT

CHECK = ROOT / "scripts" / "check_qt_libs.sh"
FOUND = "\tlibxcb.so.1 => /usr/lib/x86_64-linux-gnu/libxcb.so.1 (0x00007f)\n"
MISSING = ("\tlibxcb-icccm.so.4 => not found\n\tlibxcb-keysyms.so.1 => not found\n"
           "\tlibxkbcommon-x11.so.0 => not found\n")

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def fake_qt(root: Path) -> Path:
    """A PySide6 Qt folder holding an (empty) xcb plugin and Qt's xcb library."""
    (root / "plugins" / "platforms").mkdir(parents=True)
    (root / "plugins" / "platforms" / "libqxcb.so").write_bytes(b"")
    (root / "lib").mkdir()
    (root / "lib" / "libQt6XcbQpa.so.6").write_bytes(b"")
    return root


def fake_ldd(folder: Path, output: str) -> Path:
    """A folder for PATH whose ``ldd`` prints ``output`` for any file."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ldd.out").write_text(output)
    ldd = folder / "ldd"
    ldd.write_text(f"#!/bin/sh\ncat '{folder / 'ldd.out'}'\n")
    ldd.chmod(0o755)
    return folder


def env_with(bin_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a desktop session (a display, no Qt platform chosen), PATH led by ``bin_dir``."""
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY")}
    return {**env, "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}", "DISPLAY": ":0", **extra}


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", *args], capture_output=True, text=True, env=env, timeout=60)


def test_missing_libraries_print_the_one_apt_line_that_installs_them_and_exit_1(tmp_path):
    qt = fake_qt(tmp_path / "Qt")
    done = run([str(CHECK), str(qt)], env_with(fake_ldd(tmp_path / "bin", FOUND + MISSING)))
    assert done.returncode == 1
    apt = [ln for ln in done.stderr.splitlines() if "apt-get install" in ln]
    assert apt == ["sudo apt-get install libxcb-icccm4 libxcb-keysyms1 libxkbcommon-x11-0"]
    assert "libxcb-icccm.so.4" in done.stderr


def test_a_library_without_a_known_package_is_named_for_apt_file(tmp_path):
    qt = fake_qt(tmp_path / "Qt")
    done = run([str(CHECK), str(qt)], env_with(fake_ldd(tmp_path / "bin", "\tlibwhatever.so.7 => not found\n")))
    assert done.returncode == 1
    assert "apt-file search libwhatever.so.7" in done.stderr
    assert "apt-get install" not in done.stderr


def test_nothing_missing_exits_0_silently(tmp_path):
    qt = fake_qt(tmp_path / "Qt")
    done = run([str(CHECK), str(qt)], env_with(fake_ldd(tmp_path / "bin", FOUND)))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_without_the_xcb_plugin_there_is_nothing_to_check(tmp_path):
    (tmp_path / "Qt" / "lib").mkdir(parents=True)
    done = run([str(CHECK), str(tmp_path / "Qt")], env_with(fake_ldd(tmp_path / "bin", MISSING)))
    assert done.returncode == 0 and done.stderr == ""


@pytest.fixture
def fake_checkout(tmp_path: Path) -> Path:
    """run.sh and the check in a checkout whose .venv python only records how it was called."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    for name in ("run.sh", "check_qt_libs.sh"):
        shutil.copy(ROOT / "scripts" / name, repo / "scripts" / name)
    shutil.copy(ROOT / "pyproject.toml", repo / "pyproject.toml")
    python = repo / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f"#!/bin/sh\necho \"$*\" >> '{tmp_path / 'calls.txt'}'\n")
    python.chmod(0o755)
    fake_qt(repo / ".venv" / "lib" / "python3.11" / "site-packages" / "PySide6" / "Qt")
    fake_ldd(tmp_path / "bin", MISSING)
    return repo


def calls(repo: Path) -> str:
    log = repo.parent / "calls.txt"
    return log.read_text() if log.exists() else ""


def test_run_sh_stops_before_qt_with_the_apt_line(fake_checkout):
    done = run([str(fake_checkout / "scripts" / "run.sh")], env_with(fake_checkout.parent / "bin"))
    assert done.returncode == 1
    assert "sudo apt-get install libxcb-icccm4 libxcb-keysyms1 libxkbcommon-x11-0" in done.stderr
    assert "main.py" not in calls(fake_checkout)


def test_run_sh_skips_the_check_when_a_qt_platform_is_chosen(fake_checkout):
    done = run([str(fake_checkout / "scripts" / "run.sh"), "--start"],
               env_with(fake_checkout.parent / "bin", QT_QPA_PLATFORM="wayland"))
    assert done.returncode == 0, done.stderr
    assert "main.py --start" in calls(fake_checkout)


def test_run_sh_skips_the_check_for_the_command_line(fake_checkout):
    done = run([str(fake_checkout / "scripts" / "run.sh"), "colorize", "in", "-o", "out"],
               env_with(fake_checkout.parent / "bin"))
    assert done.returncode == 0, done.stderr
    assert "main.py colorize in -o out" in calls(fake_checkout)


@pytest.mark.parametrize("command", ["models", "tune"])
def test_run_sh_runs_the_window_free_commands_without_a_display(fake_checkout, command):
    env = env_with(fake_checkout.parent / "bin")
    del env["DISPLAY"]
    done = run([str(fake_checkout / "scripts" / "run.sh"), command], env)
    assert done.returncode == 0, done.stderr
    assert f"main.py {command}" in calls(fake_checkout)


def test_run_sh_without_a_display_says_so_instead_of_letting_qt_abort(fake_checkout):
    env = env_with(fake_checkout.parent / "bin")
    del env["DISPLAY"]
    done = run([str(fake_checkout / "scripts" / "run.sh")], env)
    assert done.returncode == 1
    assert "no display" in done.stderr and "colorize" in done.stderr
    assert "main.py" not in calls(fake_checkout)


def test_run_sh_installs_once_and_again_only_when_pyproject_changes(fake_checkout):
    script, env = str(fake_checkout / "scripts" / "run.sh"), env_with(fake_checkout.parent / "bin")
    for _ in range(2):
        assert run([script, "colorize", "in", "-o", "out"], env).returncode == 0
    assert calls(fake_checkout).count("-m pip install") == 1  # the second launch went straight to main.py
    assert calls(fake_checkout).count("main.py colorize") == 2
    with open(fake_checkout / "pyproject.toml", "a") as f:
        f.write("\n# a new dependency\n")
    assert run([script, "colorize", "in", "-o", "out"], env).returncode == 0
    assert calls(fake_checkout).count("-m pip install") == 2


def test_gpu_check_on_a_machine_without_cuda_says_so_and_exits_0(tmp_path):
    import sys

    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the check would run for minutes")
    done = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh"), str(tmp_path / "out")],
                          env={**os.environ, "PYTHON": sys.executable}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "no CUDA GPU here" in done.stdout
