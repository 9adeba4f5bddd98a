"""The rounds of a cluster run: a Ray Data pass over the photos whose outputs are missing, then again.

Ray retries tasks and restarts actors; blocks that still fail are dropped (``max_errored_blocks``)
and, after the round, only the photos whose outputs are missing are run again, on the cluster as it
is then (a lost node shrinks the next round's pool), one photo to a block (a photo that kills its
process fails alone). A photo counts as done when its write task reports it written; where a dead
worker took that report away, when its output is new or changed since planning (an old output that
``overwrite`` was to replace does not count), so it is not written again.
"""

from __future__ import annotations

import logging
import pickle
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...messages import short_reason
from ...options import BatchSummary, ColorizeSettings, ExportOptions, PhotoResult, Status
from .connection import cluster_shape
from .plan import Plan, written_since_planning
from .sizing import Sizing, size_pool
from .stages import ColorizeActor, StageContext, Work, decode_batch, write_batch

log = logging.getLogger(__package__)  # records under the cluster run's one name, engine.batch.cluster

MAX_ROUNDS = 3  # rounds of "run what is missing" after faults Ray's own retries did not absorb
TASK_RETRIES = 3  # runs of a task or an actor's batch after its process died, per round

_DATA_SETTINGS: dict[str, Any] = {
    "max_errored_blocks": -1,  # a block lost for good: its photos are run again in the next round
    "enable_progress_bars": False,  # the caller counts photos
    "print_on_execution_start": False,
    "enable_auto_log_stats": False,
}
_QUIET_LOGGERS = {"ray.data": logging.WARNING, "ray.data._internal.progress": logging.ERROR}


@dataclass
class Rounds:
    """The rounds of one run, on the driver: what every round shares, and what they have reported so far.

    Each photo is reported once, to ``on_result``, as it finishes (in no set order), and counted in
    ``summary``; ``hook`` (tests) goes to the actors, which call it with each photo's source.
    """

    plan: Plan
    settings: ColorizeSettings
    export: ExportOptions
    summary: BatchSummary
    on_result: Callable[[PhotoResult], None] | None = None
    hook: Callable[[str], None] | None = None
    max_actors: int | None = None
    measure_look: bool = True  # photos read for the old-prints advice (off when auto chose the model already)
    finished: dict[int, PhotoResult] = field(default_factory=dict)
    count: int = 0  # rounds run
    actors: int = 0  # the largest pool a round had
    engine: str = ""  # the actors' colorizer, as the first photo colorized reports it
    infer_ms: float = 0.0  # model time over every photo colorized
    last_error: str = ""  # why the last round that ended early did

    def emit(self, result: PhotoResult) -> None:
        self.finished[result.index] = result
        self.summary.add(result)
        if self.on_result is not None:
            self.on_result(result)

    def report_planned(self) -> None:
        """The photos the plan already settled: skipped, or failed to get an output name."""
        for job in self.plan.jobs:
            if job.index in self.plan.skipped:
                self.emit(PhotoResult(job.index, job.path, Status.SKIPPED, self.plan.skipped[job.index]))
            elif job.index in self.plan.failed:
                self.emit(PhotoResult(job.index, job.path, Status.FAILED, self.plan.failed[job.index]))

    def run_all(self, max_rounds: int) -> None:
        """Up to ``max_rounds`` rounds, until every planned output is there; what is still missing then fails."""
        for _ in range(max_rounds):
            pending = [i for i in self.plan.outputs if i not in self.finished]
            if not pending:
                break
            self.count += 1
            now = cluster_shape()
            sizing = size_pool(now.cpus, now.gpus, self.max_actors, now.cpus_per_gpu)
            self.actors = max(self.actors, sizing.actors)
            try:
                # Later rounds take the photos one by one: one that brings its process down fails alone.
                per_block = self.settings.batch_size if self.count == 1 else 1
                self.one_round(pending, sizing, per_block)
            except Exception as err:  # noqa: BLE001 - Ray's errors: what is missing is run in the next round
                self.last_error = short_reason(err, 160)
                log.warning("a round on the cluster ended early: %s", self.last_error)
            # Written before a fault took the write task's report away: found, not written again. Only an
            # output new or changed since planning counts (with overwrite, the old one is still there).
            for i in written_since_planning(self.plan, [i for i in pending if i not in self.finished]):
                self.emit(PhotoResult(i, self.plan.jobs[i].path, Status.DONE, output=Path(self.plan.outputs[i])))
        for i in self.plan.outputs:
            if i not in self.finished:
                reason = f"not colorized after {self.count} rounds on the cluster"
                self.emit(PhotoResult(i, self.plan.jobs[i].path, Status.FAILED,
                                      f"{reason}: {self.last_error}" if self.last_error else reason))

    def one_round(self, pending: list[int], sizing: Sizing, per_block: int) -> None:
        """One Ray Data pass over ``pending``, ``per_block`` photos to a block and a model batch; each
        finished photo is reported as it arrives.
        """
        import ray.data

        ctx = ray.data.DataContext.get_current()
        settings_before = {name: getattr(ctx, name) for name in _DATA_SETTINGS}
        levels_before = {name: logging.getLogger(name).level for name in _QUIET_LOGGERS}
        for name, value in _DATA_SETTINGS.items():
            setattr(ctx, name, value)
        for name, level in _QUIET_LOGGERS.items():
            logging.getLogger(name).setLevel(level)
        try:
            self._pass(pending, sizing, per_block)
        finally:  # the process's Ray Data settings and loggers, as they were: a round changes them only while it runs
            for name, value in settings_before.items():
                setattr(ctx, name, value)
            for name, level in levels_before.items():
                logging.getLogger(name).setLevel(level)

    def _pass(self, pending: list[int], sizing: Sizing, per_block: int) -> None:
        import ray.data

        plan, settings = self.plan, self.settings
        context = StageContext(settings.size, self.export, tuple(plan.filesystems), plan.out_fs, self.measure_look)
        works = [Work(i, str(plan.jobs[i].path), plan.src_fs[i], plan.outputs[i], hints=plan.hints.get(i, ()),
                      weights=plan.weights.get(i)) for i in pending]
        blobs = [{"index": w.index, "work": pickle.dumps(w, protocol=5)} for w in works]
        blocks = max(1, -(-len(blobs) // per_block))
        # Typed loosely: Ray types fn_kwargs UDFs narrowly.
        ds: Any = ray.data.from_items(blobs, override_num_blocks=blocks)
        # Retries: a task whose worker dies is run again, an actor that dies is restarted (without limit:
        # a lost node's actors come back elsewhere) and its batch run again. Both are bounded, unlike Ray
        # Data's defaults, so that a photo that kills every process reading it cannot keep the run going
        # for ever: its block is set aside, and the next round tries its photos one by one.
        # A photo's own failure is a row with its reason, never an exception.
        # The decode and write tasks ask for no CPU (see size_pool); sizing.tasks caps how many run at once.
        retries = {"max_retries": TASK_RETRIES}
        tasks = ray.data.TaskPoolStrategy(size=min(sizing.tasks, blocks))
        # A round that tries photos one by one gives each actor one photo at a time: a photo that kills its
        # actor then takes no other photo's attempts down with it (queued calls die with the actor, and
        # would use up their own retries).
        in_flight = 1 if per_block == 1 else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # retries as Ray remote args: deprecated in 2.60
            ds = ds.map_batches(decode_batch, fn_kwargs={"ctx": context}, compute=tasks, num_cpus=0,
                                batch_size=per_block, batch_format="numpy", **retries)
            ds = ds.map_batches(ColorizeActor, fn_constructor_kwargs={"settings": settings, "threads": sizing.threads,
                                                                      "hook": self.hook},
                                compute=ray.data.ActorPoolStrategy(size=sizing.actors,
                                                                   max_tasks_in_flight_per_actor=in_flight),
                                num_cpus=sizing.actor_cpus,
                                num_gpus=sizing.actor_gpus, batch_size=per_block, batch_format="numpy",
                                max_restarts=-1, max_task_retries=TASK_RETRIES)
            ds = ds.map_batches(write_batch, fn_kwargs={"ctx": context}, compute=tasks, num_cpus=0,
                                batch_size=per_block, batch_format="numpy", **retries)
        with warnings.catch_warnings():
            # Ray Data warns about its own settings and sizing as it runs (in its executor's thread):
            # notes for Ray, not failures of the run, where warnings are errors (the tests).
            warnings.filterwarnings("ignore", module="ray")
            for row in ds.iter_rows():
                self._on_work(pickle.loads(row["work"]))

    def _on_work(self, w: Work) -> None:
        """A photo back from the write stage, reported unless it has been already."""
        if w.index in self.finished:
            return
        self.infer_ms += w.infer_ms
        self.engine = self.engine or w.engine
        out = Path(w.out) if w.status == Status.DONE else None
        self.emit(PhotoResult(w.index, self.plan.jobs[w.index].path, w.status, w.message, output=out, width=w.width,
                              height=w.height, decode_ms=w.decode_ms, infer_ms=w.infer_ms, encode_ms=w.encode_ms,
                              looks_old=w.looks_old, in_colour=w.in_colour))
