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
                 for p in (ROOT / "engine").rglob("*.py")}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_gui_imports_no_torch():
    files = list((ROOT / "gui").rglob("*.py"))
    assert files
    offenders = {str(p.relative_to(ROOT)): imports_of(p) & {"torch"} for p in files}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_importing_the_engine_builds_nothing():
    import json
    import subprocess
    import sys

    # Importing must be cheap and side-effect free: no module is built, no Qt or GUI is loaded by the engine.
    check = "\n".join([
        f"import json, sys; sys.path.insert(0, {str(ROOT)!r})",
        "import torch",
        "built = []",
        "init = torch.nn.Module.__init__",
        "def spy(self, *args, **kwargs):",
        "    built.append(type(self).__name__)",
        "    init(self, *args, **kwargs)",
        "torch.nn.Module.__init__ = spy",
        "import engine.colorizer, engine.batch.pipeline, engine.cli",
        "gui = sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'PyQt5', 'PyQt6', 'gui'))",
        "print(json.dumps({'built': built, 'gui': gui}))",
    ])
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == {"built": [], "gui": []}
