"""The sizes issue #24 set, held: a newcomer can read any one module, class or function in one sitting."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from helpers import ROOT

MAX_FILE_LINES = 450
MAX_FUNCTION_LINES = 80
MAX_GUI_CLASS_LINES = 250
MAX_MAIN_WINDOW_LINES = 199


def _sources(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _nodes(path: Path) -> list[ast.AST]:
    return list(ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


def _length(node: ast.AST) -> int:
    return node.end_lineno - node.lineno + 1  # type: ignore[attr-defined]


@pytest.mark.parametrize("package", ["engine", "gui"])
def test_no_module_is_longer_than_450_lines(package):
    long = [f"{p.relative_to(ROOT)}: {n}" for p in _sources(package)
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_FILE_LINES]
    assert not long


@pytest.mark.parametrize("package", ["engine", "gui"])
def test_no_function_is_longer_than_80_lines(package):
    long = [f"{p.relative_to(ROOT)}:{node.name}: {_length(node)}" for p in _sources(package) for node in _nodes(p)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _length(node) > MAX_FUNCTION_LINES]
    assert not long


def test_no_gui_class_is_longer_than_250_lines_and_the_window_is_a_shell():
    classes = {f"{p.relative_to(ROOT)}:{node.name}": _length(node) for p in _sources("gui") for node in _nodes(p)
               if isinstance(node, ast.ClassDef)}
    assert not {k: v for k, v in classes.items() if v > MAX_GUI_CLASS_LINES}
    assert classes["gui/main_window.py:MainWindow"] <= MAX_MAIN_WINDOW_LINES
