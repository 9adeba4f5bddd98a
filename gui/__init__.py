"""The desktop GUI (PySide6). Never imports torch: ``gui.bridge`` is the only bridge to the engine.

``model/`` holds Qt-item models and state without widgets, ``views/`` the widgets, ``presenters/`` one class
per part of the window (queue, batch, preview and hints, settings, help), ``bridge/`` the engine's side,
and ``main_window.py`` the shell that builds them, with its menus and toolbar from ``actions.py``.
"""
