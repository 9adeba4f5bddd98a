"""File > Export Comparison…: the photo on screen as one before/after image, side by side and captioned.

``compose`` is a pure function of two RGB arrays and their captions (no window needed); the window
hands it the previews it shows, so the After side carries the colour strength set on screen.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QImage, QPainter
from PySide6.QtWidgets import QFileDialog, QWidget

GAP = 8  # px of white between the two sides
BAND = 34  # px of caption band above the photos
EXTENSIONS = (".png", ".jpg", ".jpeg")


def qimage_to_rgb(image: QImage) -> np.ndarray:
    """A QImage -> H x W x 3 uint8 RGB array (a copy)."""
    rgb = image.convertToFormat(QImage.Format.Format_RGB888)
    h, w, stride = rgb.height(), rgb.width(), rgb.bytesPerLine()
    data = np.frombuffer(rgb.constBits(), np.uint8, count=h * stride).reshape(h, stride)
    return data[:, : 3 * w].reshape(h, w, 3).copy()


def _to_qimage(rgb: np.ndarray) -> QImage:
    rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
    h, w, _ = rgb.shape
    return QImage(rgb.data, w, h, 3 * w, QImage.Format.Format_RGB888).copy()


def compose(before: np.ndarray, after: np.ndarray, name: str = "", after_note: str = "") -> QImage:
    """Before (left) and after (right) on a white sheet with a caption above each side ("Before · NAME",
    "After · NAME · NOTE", ``caption_pair``).

    Both are H x W x 3 uint8 RGB; the shorter side is centred vertically. The sheet is
    ``w_before + GAP + w_after`` wide and ``BAND + max(h)`` tall.
    """
    hb, wb = before.shape[:2]
    ha, wa = after.shape[:2]
    height = max(hb, ha)
    sheet = QImage(wb + GAP + wa, BAND + height, QImage.Format.Format_RGB888)
    sheet.fill(QColor("white"))
    painter = QPainter(sheet)
    try:
        painter.drawImage(0, BAND + (height - hb) // 2, _to_qimage(before))
        painter.drawImage(wb + GAP, BAND + (height - ha) // 2, _to_qimage(after))
        font = QFont()
        font.setPixelSize(max(11, min(20, BAND - 14)))
        painter.setFont(font)
        painter.setPen(QColor(30, 30, 30))
        flags = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
        boxes = [QRect(6, 0, max(1, wb - 12), BAND), QRect(wb + GAP + 6, 0, max(1, wa - 12), BAND)]
        texts = caption_pair(name, after_note, painter.fontMetrics(), min(b.width() for b in boxes))
        for box, text in zip(boxes, texts, strict=True):
            painter.drawText(box, flags, painter.fontMetrics().elidedText(text, Qt.TextElideMode.ElideRight,
                                                                          box.width()))
    finally:
        painter.end()
    return sheet


def caption_pair(name: str, after_note: str, metrics: QFontMetrics, width: int) -> tuple[str, str]:
    """("Before · NAME", "After · NAME[ · NOTE]") within ``width`` pixels each, the name cut in its middle the same
    way on both sides where it must be (cut on one side only, it read as two different photos).
    """
    note = f" · {after_note}" if after_note else ""
    if not name:
        return "Before", "After" + note
    before, after = "Before · ", "After · "
    room = width - max(metrics.horizontalAdvance(before), metrics.horizontalAdvance(after + note)) - 2  # rounding
    shown = metrics.elidedText(name, Qt.TextElideMode.ElideMiddle, max(1, room)) or "…"
    return before + shown, after + shown + note


def strength_note(strength_percent: int | None) -> str:
    """The After side's note: the colour strength where it is not the usual 100%."""
    return "" if strength_percent is None or strength_percent == 100 else f"strength {strength_percent}%"


def suggested_name(photo: Path) -> str:
    return f"{photo.stem}-before-after.png"


def write(path: Path, image: QImage, quality: int = 92) -> Path | None:
    """Save as JPEG for .jpg/.jpeg, else PNG (".png" added when the name has neither); the path written or None."""
    if path.suffix.lower() not in EXTENSIONS:
        path = path.with_name(path.name + ".png")
    fmt = "JPEG" if path.suffix.lower() in (".jpg", ".jpeg") else "PNG"
    # The stubs type ``format`` as bytes, but this binding only takes a str (bytes raise ValueError).
    saved = image.save(str(path), fmt, quality if fmt == "JPEG" else -1)  # type: ignore[call-overload]
    return path if saved else None


FullSize = Callable[[], tuple[np.ndarray, np.ndarray]]  # (before, after) RGB at the photo's own size


def full_size(source: Path, output: Path, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """The grey photo and its exported colour version at the photo's own size, the colour's chroma times ``scale``
    (the strength on screen over the one it was exported with); the grey twice when the output went missing.
    """
    from engine.color import grey_rgb, to_uint8
    from gui.model.previews import colour_image, preview_from_files

    L, ab = preview_from_files(source, output, size=1 << 30)
    before = to_uint8(grey_rgb(L))
    return before, (before if ab is None else to_uint8(colour_image(L, ab, scale)))


def export_dialog(parent: QWidget, before: QImage, after: QImage, photo: Path, folder: Path,
                  strength_percent: int | None = None, full_size: FullSize | None = None) -> Path | None:
    """Ask where to save the comparison of the photo on screen, and at which size, then write it; the path
    written or None. ``full_size`` (when the photo has an output) gives both sides at the photo's own size.
    """
    sizes = ([("full size", full_size)] if full_size is not None else []) + [("preview size", None)]
    filters = {f"{kind} image, {size} ({pattern})": make for size, make in sizes
               for kind, pattern in (("PNG", "*.png"), ("JPEG", "*.jpg *.jpeg"))}
    start = folder if folder.is_dir() else photo.parent  # an output folder not made yet: Qt would open its own cwd
    chosen, picked = QFileDialog.getSaveFileName(parent, "Export comparison", str(start / suggested_name(photo)),
                                                 ";;".join(filters), next(iter(filters)))
    if not chosen:
        return None
    make = filters.get(picked, full_size)
    pair = make() if make is not None else (qimage_to_rgb(before), qimage_to_rgb(after))
    sheet = compose(*pair, photo.name, strength_note(strength_percent))
    return write(Path(chosen), sheet)
