"""``run_on_ray``: one cluster run from start to summary, and what it reports."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ...hints import Hint
from ...options import BatchSummary, ColorizeSettings, ExportOptions, Job, PhotoResult, engine_device
from ...partials import clean_partials
from .connection import ClusterShape, cluster_shape, connect
from .plan import Plan, plan_run
from .rounds import MAX_ROUNDS, Rounds
from .storage import as_uri, is_uri


@dataclass
class ClusterRun:
    summary: BatchSummary
    shape: ClusterShape
    engine: str = ""
    problems: list[str] = field(default_factory=list)
    rounds: int = 0

    def line(self) -> str:
        text = f"{self.summary.line()}, {self.shape.line()}"
        return f"{text} [{self.engine}]" if self.engine else text


def run_on_ray(inputs: Sequence[object], settings: ColorizeSettings, export: ExportOptions, address: str = "local",
               on_result: Callable[[PhotoResult], None] | None = None, *, max_actors: int | None = None,
               hook: Callable[[str], None] | None = None, max_rounds: int = MAX_ROUNDS,
               on_plan: Callable[[int, list[str]], None] | None = None,
               hints: Callable[[list[Job]], Mapping[int, Sequence[Hint]]] | None = None,
               measure_look: bool = True, routes: Callable[[list[Job]], Mapping[int, Path]] | None = None
               ) -> ClusterRun:
    """Colorize ``inputs`` on Ray; ``on_result`` gets each photo as it finishes (in no set order).

    ``on_plan(total, problems)`` is called once the inputs are found, before any photo is reported.
    ``hints(jobs)``: the colour hints of the photos found, by job index (a hints file matched to them);
    each photo's hints travel with it to the actor that colorizes it. ``measure_look``: as ``BatchPipeline``'s.
    ``routes(jobs)``: the weights of another model for photos that take one (auto's folders, by job index); the
    actors load it beside their own when a photo of it comes.
    Raises ValueError for settings the cluster cannot run (CUDA asked of a cluster without GPUs),
    ConnectionError where the cluster cannot be reached. Prints nothing: the caller reports.
    """
    settings = settings.validated()
    # Actors sized for the device the engine runs on (OpenVINO's "auto" holds no GPUs it would never use).
    settings = replace(settings, device=engine_device(settings.engine, settings.device))
    export = export.validated()
    connect(address)
    if settings.device == "cuda" and cluster_shape().gpus < 1:
        raise ValueError("--device cuda: the Ray cluster has no GPUs")
    start = time.perf_counter()
    plan = _plan(inputs, export, on_plan, hints)
    if routes is not None:
        plan.weights = {i: str(w) for i, w in routes(plan.jobs).items()}
    summary = BatchSummary(total=len(plan.jobs))
    rounds = Rounds(plan, settings, export, summary, on_result, hook, max_actors, measure_look=measure_look)
    rounds.report_planned()
    rounds.run_all(max_rounds)
    if plan.out_fs < 0:
        clean_partials(Path(export.output_dir))  # hidden files of workers that died mid-write
    summary.wall_s = time.perf_counter() - start
    # The share of the wall time the average actor spent in the model, as "model busy" locally.
    summary.infer_s = rounds.infer_ms / 1000 / max(1, rounds.actors)
    summary.results.sort(key=lambda r: r.index)
    for r in summary.results:
        r.renamed = r.index in plan.renamed
    return ClusterRun(summary, replace(cluster_shape(), actors=rounds.actors), rounds.engine, list(plan.problems),
                      rounds.count)


def _plan(inputs: Sequence[object], export: ExportOptions, on_plan: Callable[[int, list[str]], None] | None,
          hints: Callable[[list[Job]], Mapping[int, Sequence[Hint]]] | None) -> Plan:
    """The plan, after a local output folder is made and cleared of a killed run's hidden files; its hints added."""
    if not is_uri(as_uri(export.output_dir)):
        Path(export.output_dir).mkdir(parents=True, exist_ok=True)
        clean_partials(Path(export.output_dir))
    plan = plan_run(inputs, export)
    if on_plan is not None:
        on_plan(len(plan.jobs), plan.problems)
    if hints is not None:
        plan.hints = {i: tuple(h) for i, h in hints(plan.jobs).items() if h}
    return plan
