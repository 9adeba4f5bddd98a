"""Each finished photo on the terminal: what ``colorize`` shows as it goes, for a local and a Ray run alike."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..messages import one_line, printable
from ..options import Status
from ..progress import ProgressBar

if TYPE_CHECKING:
    from ..options import BatchSummary, PhotoResult

log = logging.getLogger(__package__)  # records under the command line's one name, engine.cli


class PhotoReport:
    """Each finished photo on the terminal, the same for a local and a Ray run: the progress bar, and on
    stderr a failure's reason or a done photo's note (e.g. colorized on the CPU after running out of GPU memory).
    """

    def __init__(self) -> None:
        self.bar: ProgressBar | None = None
        self.failed = 0
        self.skipped = 0
        self.done = 0
        self.chosen = False  # the model was chosen by the photos' look (--model auto): no advice

    def start(self, total: int) -> None:
        self.bar = ProgressBar(total, unit="photos")

    def __call__(self, r: PhotoResult) -> None:
        log.debug("%s: %s -> %s (decode %.0f ms, model %.0f ms, write %.0f ms, %dx%d)", printable(r.source), r.status,
                  printable(r.output) if r.output else "-", r.decode_ms, r.infer_ms, r.encode_ms, r.width, r.height)
        self.skipped += r.status == Status.SKIPPED
        self.done += r.status == Status.DONE
        if self.bar is not None and r.status != Status.CANCELLED:  # a Ctrl+C's untouched photos: not progress
            self.bar.update(self.bar.count + 1, one_line(r.source.name, 40), skipped=self.skipped)
        if r.status == Status.FAILED:
            self.failed += 1
            self.close()
            print(f"{printable(r.source)}: {one_line(r.message, 300) or 'failed'}", file=sys.stderr)
        elif r.status == Status.DONE and r.message:
            self.close()
            print(f"{printable(r.source)}: note: {one_line(r.message, 300)}", file=sys.stderr)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

    def advice(self, summary: BatchSummary, weights: Path | None) -> str | None:
        """After a run: the old-prints model suggested where most photos looked like old prints' scans."""
        from ..named_models import OLD_PRINTS, is_old_prints
        from ..print_look import old_print_advice

        if self.chosen:
            return None
        line = old_print_advice(summary.looks_old, summary.looked, is_old_prints(weights), OLD_PRINTS)
        return f"{line} (colorize --model {OLD_PRINTS})" if line else None

    def cancelled_text(self, total: int, output_dir: Path) -> str:
        """What Ctrl-C leaves behind, and how to go on from there."""
        others = ", ".join(f"{n} {what}" for n, what in ((self.skipped, "skipped"), (self.failed, "failed")) if n)
        return (f"cancelled: {self.done} of {total} photos written to {printable(output_dir)}"
                f"{f' ({others})' if others else ''}; run the same command with --skip-existing to go on "
                "where it stopped")


def print_problems(total: int, problems: list[str]) -> None:
    """Inputs that could not be read as photos, and whether any photo was found at all."""
    for p in problems:
        print(f"error: {printable(p)}", file=sys.stderr)
    if not total:
        print("error: no photos found in the given inputs", file=sys.stderr)
