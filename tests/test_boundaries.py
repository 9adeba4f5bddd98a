"""The engine is a library without Qt; the GUI never imports torch itself."""

import ast
from pathlib import Path

from helpers import ROOT


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_engine_imports_no_qt():
    offenders = {p.name: imports_of(p) & {"PySide6", "PyQt5", "PyQt6", "pyqtgraph", "gui"}
                 for p in (ROOT / "engine").glob("*.py")}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_gui_imports_no_torch():
    files = list((ROOT / "gui").glob("*.py"))
    assert files
    offenders = {p.name: imports_of(p) & {"torch"} for p in files}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_importing_the_engine_builds_nothing():
    import subprocess
    import sys

    code = ("import sys; sys.path.insert(0, %r); import engine.colorizer, engine.batch.pipeline; "
            "import PySide6" % str(ROOT))
    # Importing must be cheap and side-effect free: no model is built, no Qt is loaded by the engine.
    check = ("import sys; sys.path.insert(0, %r); import engine.colorizer, engine.batch.pipeline; "
             "print('PySide6' in sys.modules)" % str(ROOT))
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
    assert code  # the first form documents intent; the check above is what runs
