"""Screenshots of Model > Teach from Colour Photos…, set up, mid-training, at the result and after Keep:

    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python tools/teach_screenshots.py OUT_DIR [PHOTO_FOLDER]

Without PHOTO_FOLDER it writes 24 synthetic colour photos. The tune is a tiny one (the hidden ``--batch 2 --crop
64`` and a few seconds of training), so the verdict means nothing; models, settings and photos go to a throwaway
folder, never the user's. Writes OUT_DIR/teach-setup.png, teach-training.png, teach-result.png, window-kept.png.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def synthetic_photos(folder: Path, n: int = 24) -> Path:
    import cv2
    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        rng = np.random.default_rng(i)
        h, w = 240, 320
        y, x = np.mgrid[0:h, 0:w].astype(np.float32)
        hue = (rng.integers(0, 180) + 60 * x / w + 30 * np.sin(y / h * 3)) % 180
        hsv = np.stack([hue, np.full_like(hue, 150), 80 + 150 * y / h], axis=-1).astype(np.uint8)
        bgr = cv2.cvtColor(hsv, cv2.COLOR_HSV2BGR)
        cv2.circle(bgr, (int(rng.integers(60, w - 60)), int(rng.integers(60, h - 60))), 40,
                   [int(v) for v in rng.integers(0, 255, 3)], -1)
        cv2.imwrite(str(folder / f"photo{i:02d}.png"), bgr)
    return folder


def main(out: Path, photos: Path | None) -> int:
    work = Path(tempfile.mkdtemp(prefix="teach-shots-"))
    os.environ["COLORIZER_MODELS_DIR"] = str(work / "models")
    os.environ.setdefault("COLORIZER_LOG_DIR", str(work / "logs"))
    from PySide6.QtCore import QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    from gui.bridge.worker import Backend
    from gui.main_window import MainWindow

    out.mkdir(parents=True, exist_ok=True)
    folder = photos or synthetic_photos(work / "colour")
    app = QApplication([sys.argv[0]])
    window = MainWindow(Backend(), QSettings(str(work / "settings.ini"), QSettings.Format.IniFormat))
    window.resize(1400, 900)
    window.show()
    teach = window.teach
    teach.extra_args = ("--batch", "2", "--crop", "64", "--minutes", "0.4", "--threads", "1")
    dialog = teach.open_dialog()
    teach.add_folders([folder])
    dialog.name_edit.setText("Family 1950s")
    taken: set[str] = set()

    def shot(name: str) -> None:
        taken.add(name)
        path = out / f"{name}.png"
        (window if name.startswith("window") else dialog).grab().save(str(path))
        print(path, flush=True)

    def poll() -> None:
        if "teach-setup" not in taken and "photos found" in dialog.count_label.text():
            shot("teach-setup")
            teach.start()
        elif "teach-training" not in taken and teach.steps_seen >= 12:
            shot("teach-training")
        elif "teach-result" not in taken and dialog.phase == "result":
            QTimer.singleShot(300, lambda: (shot("teach-result"), dialog.keep_button.click()))
            taken.add("teach-result")
        elif teach.dialog is None and "window-kept" not in taken:
            shot("window-kept")
            app.quit()
        elif "teach-result" not in taken and teach.run is None and "teach-setup" in taken:
            shot("teach-failed")
            print(dialog.message(), file=sys.stderr)
            app.quit()

    timer = QTimer()
    timer.timeout.connect(poll)
    timer.start(200)
    QTimer.singleShot(240_000, app.quit)
    app.exec()
    window.close()
    return 0 if "window-kept" in taken else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else None))
