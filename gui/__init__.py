"""The desktop GUI (PySide6). Never imports torch: ``gui.worker`` is the only bridge to the engine."""
