"""``main.py tune ... --progress-json`` in a separate process: the training never runs in the window's process,
so the window only reads the lines the tune prints and stays responsive whatever the training does.
"""

from __future__ import annotations

import logging
import sys
from collections import deque
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import QObject, QProcess, QProcessEnvironment, QTimer, Signal, Slot

from gui.model.teach import parse_event

log = logging.getLogger(__name__)

MAIN_PY = Path(__file__).resolve().parents[2] / "main.py"
KILL_AFTER_MS = 2000  # a tune that has not stopped this long after terminate() is killed


def tune_arguments(photos: Sequence[Path], name: str, minutes: float, replace: bool = False,
                   extra: Sequence[str] = (), base: str | None = None) -> list[str]:
    """The command line after the interpreter: ``main.py tune PHOTOS... --name NAME --minutes M --progress-json``,
    with ``--base BASE`` for a model other than the shipped one to start from (None: the shipped one).
    """
    args = [str(MAIN_PY), "tune", *(str(p) for p in photos), "--name", name, "--minutes", f"{minutes:g}",
            "--progress-json"]
    return args + (["--base", base] if base else []) + (["--replace"] if replace else []) + list(extra)


def complete_lines(pending: bytes, chunk: bytes) -> tuple[list[str], bytes]:
    """The non-blank lines a pipe's bytes complete (stripped), and the unfinished rest to keep for the next read."""
    *lines, rest = (pending + chunk).split(b"\n")
    return [text for raw in lines if (text := raw.decode("utf-8", "replace").strip())], rest


class TuneProcess(QObject):
    """One tune run by ``QProcess`` (``sys.executable`` unless told otherwise; the environment passes through,
    ``COLORIZER_MODELS_DIR`` included). Lives on the UI thread; every signal arrives there.

    Signals: ``reported(dict)`` for each JSON line of its stdout; ``ended(exit_code, message, cancelled)`` once, last
    (``message``: the error event's, else the last line on stderr; "" when it succeeded; ``exit_code`` -1 when it
    crashed, was killed, or never started).
    """

    reported = Signal(object)  # one JSON event (dict); not ``event``, QObject's own method
    ended = Signal(int, str, bool)

    def __init__(self, arguments: Sequence[str], program: str | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.process = QProcess(self)
        self.process.setProgram(program or sys.executable)
        self.process.setArguments(list(arguments))
        env = QProcessEnvironment.systemEnvironment()  # read now: what the caller set in os.environ counts
        env.insert("PYTHONUNBUFFERED", "1")
        self.process.setProcessEnvironment(env)
        self.process.readyReadStandardOutput.connect(self._read_stdout)
        self.process.readyReadStandardError.connect(self._read_stderr)
        self.process.finished.connect(self._on_finished)
        self.process.errorOccurred.connect(self._on_error)
        self.cancelled = False
        self._stdout = b""
        self._stderr = b""
        self._stderr_tail: deque[str] = deque(maxlen=20)
        self._error = ""
        self._ended = False
        self._kill = QTimer(self)
        self._kill.setSingleShot(True)
        self._kill.setInterval(KILL_AFTER_MS)
        self._kill.timeout.connect(self.process.kill)

    def start(self) -> None:
        log.info("starting the tune: %s %s", self.process.program(), " ".join(self.process.arguments()))
        self.process.start()

    def running(self) -> bool:
        return self.process.state() != QProcess.ProcessState.NotRunning

    def cancel(self) -> None:
        """Stop it: terminate now, kill if it is still there after KILL_AFTER_MS; ``ended`` follows (cancelled)."""
        if self.running():
            self.cancelled = True
            self.process.terminate()
            self._kill.start()

    def kill_now(self, wait_ms: int = 3000) -> None:
        """The window is closing: kill it and wait for it to go (no events after this)."""
        if self.running():
            self.cancelled = True
            self.process.blockSignals(True)
            self.process.kill()
            self.process.waitForFinished(wait_ms)

    @Slot()
    def _read_stdout(self) -> None:
        lines, self._stdout = complete_lines(self._stdout, bytes(self.process.readAllStandardOutput().data()))
        for line in lines:
            event = parse_event(line)
            if event is None:
                log.info("tune: %s", line)
                continue
            if event["event"] == "error":
                self._error = str(event.get("message", ""))
            self.reported.emit(event)

    @Slot()
    def _read_stderr(self) -> None:
        lines, self._stderr = complete_lines(self._stderr, bytes(self.process.readAllStandardError().data()))
        for line in lines:
            self._stderr_tail.append(line)
            log.info("tune: %s", line)

    @Slot(int, QProcess.ExitStatus)
    def _on_finished(self, code: int, status: QProcess.ExitStatus) -> None:
        self._kill.stop()
        self._read_stdout()
        self._read_stderr()
        for rest in (self._stdout, self._stderr):  # a last line without its newline
            if rest.strip():
                text = rest.decode("utf-8", "replace").strip()
                event = parse_event(text)
                if event is not None:
                    self.reported.emit(event)
                else:
                    self._stderr_tail.append(text)
        self._stdout = self._stderr = b""
        crashed = status != QProcess.ExitStatus.NormalExit
        exit_code = -1 if crashed else code
        message = "" if exit_code == 0 else (self._error or self.last_error_line()
                                             or f"the training stopped (exit code {exit_code})")
        self._end(exit_code, message)

    @Slot(QProcess.ProcessError)
    def _on_error(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.ProcessError.FailedToStart:  # no finished() follows
            self._end(-1, f"could not start {self.process.program()}: {self.process.errorString()}")

    def _end(self, exit_code: int, message: str) -> None:
        if self._ended:
            return
        self._ended = True
        log.info("the tune ended: exit code %d%s%s", exit_code, " (cancelled)" if self.cancelled else "",
                 f": {message}" if message else "")
        self.ended.emit(exit_code, message, self.cancelled)

    def last_error_line(self) -> str:
        """The last line on stderr that says what went wrong ("error: ..."), else its last line."""
        for line in reversed(self._stderr_tail):
            if line.lower().startswith(("error", "traceback")) or "Error:" in line:
                return line
        return self._stderr_tail[-1] if self._stderr_tail else ""
