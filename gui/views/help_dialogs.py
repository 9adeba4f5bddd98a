"""Help > About and Help > Colorizer Help: short texts in dialogs that always fit on the screen.

The full model card stays in its own file (linked from About); dumping it into a message box made a
500 x 3793 px dialog whose OK button was off the screen.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

from PySide6.QtCore import QUrl
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget

MAX_WIDTH, MAX_HEIGHT = 800, 700  # no dialog grows past this, whatever its text
LICENCES = ("Colorizer: MIT. Built on PySide6 / Qt (LGPL-3.0), pyqtgraph (MIT), PyTorch (BSD-3-Clause), "
            "OpenCV (Apache-2.0), Pillow (MIT-CMU), NumPy (BSD-3-Clause), platformdirs (MIT).")


def app_version() -> str:
    try:
        return metadata.version("colorizer")
    except metadata.PackageNotFoundError:
        return "(not installed)"


def about_html(card: dict[str, Any] | None, problem: str | None, card_file: Path | None = None) -> str:
    """Version, the model in one or two lines, the licences, and a link to the full model card."""
    parts = [f"<h3>Colorizer {html.escape(app_version())}</h3>",
             "<p>Brings grayscale photos to colour, one photo or whole folders at a time.</p>"]
    if card is None:
        parts.append(f"<p><b>No trained model is installed.</b><br>{html.escape(problem or '')}</p>")
    else:
        raw = card.get("data")
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        facts = [str(card.get("name", "unnamed model"))]
        if card.get("steps"):
            facts.append(f"{card['steps']} training steps")
        if data.get("train_photos"):
            facts.append(f"trained on {data['train_photos']} photos")
        parts.append(f"<p><b>Model:</b> {html.escape(', '.join(facts))}</p>")
    if card_file is not None and card_file.is_file():
        url = QUrl.fromLocalFile(str(card_file.resolve())).toString()
        parts.append(f"<p>Model card: <a href='{html.escape(url)}'>{html.escape(card_file.name)}</a> "
                     f"({html.escape(str(card_file.parent))})</p>")
    parts.append(f"<p><small>{html.escape(LICENCES)}</small></p>")
    return "".join(parts)


def help_html(panels: Iterable[tuple[str, str]], shortcuts: Iterable[tuple[str, str]], log_path: Path) -> str:
    """What the panels mean, the keyboard shortcuts, and where the log file is."""
    panel_rows = "".join(f"<tr><td><b>{html.escape(t)}</b></td><td>{html.escape(d)}</td></tr>" for t, d in panels)
    key_rows = "".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(t)}</td></tr>" for t, k in shortcuts if k)
    return (
        "<h3>Colorizer help</h3>"
        "<p>Add photos or folders (toolbar, File menu, or drag them onto the window), press Start, and "
        "select a photo in the queue to see it before and after. Failed photos say why in the queue's "
        "Message column; Start again retries them.</p>"
        "<p><b>Colour hints</b> (weights that take them): click the preview to pick a colour for that spot; drag a "
        "hint to move it (the colour follows it as you drag), double-click it for other colours, right-click it "
        "(or click it, then Delete) to remove it; File &gt; Save/Load "
        "Hints keeps them as a file. View &gt; Show Where Unsure (Ctrl+U) stripes where the model could not tell the "
        "colour: where a hint helps most.</p>"
        "<p><b>Your own model</b>: Model &gt; Teach from Colour Photos… teaches the model from folders of your colour "
        "photos in a separate process (the window stays usable), measures it against the model it starts from on "
        "photos it held out, and keeps it under a name if you say so; the Engine panel's Model list chooses which "
        "colorizes, and its Card button shows what the chosen model learned from.</p>"
        "<p><b>Panels</b> (View menu: show or hide; drag a title bar to move, tab or float a panel)</p>"
        f"<table cellspacing='3'>{panel_rows}</table>"
        f"<p><b>Keyboard</b></p><table cellspacing='3'>{key_rows}</table>"
        f"<p><b>Log file</b>: {html.escape(str(log_path))} (Help &gt; Show Log File opens it).</p>"
    )


def text_dialog(parent: QWidget | None, title: str, text: str, width: int = 520, height: int = 420,
                markdown: bool = False) -> QDialog:
    """A dialog of at most MAX_WIDTH x MAX_HEIGHT: long text (HTML, or Markdown) scrolls inside it, links open
    outside.
    """
    dialog = QDialog(parent)
    dialog.setWindowTitle(title)
    browser = QTextBrowser()
    browser.setOpenExternalLinks(True)
    if markdown:
        browser.setMarkdown(text)
    else:
        browser.setHtml(text)
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok)
    buttons.accepted.connect(dialog.accept)
    layout = QVBoxLayout(dialog)
    layout.addWidget(browser)
    layout.addWidget(buttons)
    dialog.setMaximumSize(MAX_WIDTH, MAX_HEIGHT)
    dialog.resize(min(width, MAX_WIDTH), min(height, MAX_HEIGHT))
    return dialog
