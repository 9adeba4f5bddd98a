"""Colorizing an archive on a Ray cluster: the local run's planning and writer, Ray Data in between.

The driver finds the inputs and plans every output path exactly as a local run does
(``collect_inputs``, ``OutputPlanner``). Ray Data then decodes in CPU tasks, colorizes in a pool of
actors (each loads the weights once; one GPU each where the cluster has GPUs) and renders and
writes in CPU tasks, with the local run's ``decode_photo`` and ``write_photo``: the same reasons on
failure, and the same atomic writer (a hidden temporary name, then a rename), so a photo is
complete or absent under its planned name and never written to a second one.

Faults: Ray retries tasks and restarts actors; blocks that still fail are dropped
(``max_errored_blocks``) and, after the round, only the photos whose outputs are missing are run
again, on the cluster as it is then (a lost node shrinks the next round's pool), one photo to a
block (a photo that kills its process fails alone). Outputs keep the paths planned at the start,
so a photo written before a fault is found, not written again.

Ray is imported inside functions only: the engine imports and runs without it.
"""

from __future__ import annotations

import logging
import os
import pickle
import re
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..colorizer import Colorizer, Prepared, ab_source, pack, prepare
from ..imageio import (
    IMAGE_EXTENSIONS,
    PARTIAL_MARK,
    DecodedImage,
    ImageError,
    clean_partials,
    partial_name,
    write_error,
)
from ..messages import one_line, printable, short_reason
from ..options import BatchSummary, ColorizeSettings, ExportOptions, Job, PhotoResult
from .decode_ahead import Decoded, decode_photo
from .inputs import collect_inputs
from .ordered_writes import write_photo
from .planning import OutputPlanner

log = logging.getLogger(__name__)

MAX_ROUNDS = 3  # rounds of "run what is missing" after faults Ray's own retries did not absorb
TASK_RETRIES = 3  # runs of a task or an actor's batch after its process died, per round
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):/+(.*)$")
_OK, _DONE, _FAILED, _SKIPPED = "ok", "done", "failed", "skipped"


# --- Sizing -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sizing:
    """How a round uses the cluster: the actor pool and the CPU tasks around it."""

    actors: int
    actor_cpus: float
    actor_gpus: float
    task_cpus: float
    tasks: int  # decode (and write) tasks running at once, at most
    threads: int  # torch threads in each actor


def size_pool(cpus: float, gpus: float, max_actors: int | None = None) -> Sizing:
    """The pool for a cluster with ``cpus`` CPUs and ``gpus`` GPUs in all.

    One actor per GPU; without GPUs, one single-threaded actor per CPU, less the CPUs kept for
    decoding and writing (an eighth, at least one). The actors together never ask for all the
    CPUs, and the decode and write tasks ask for none: Ray cannot schedule a task on CPUs that
    actors hold, and a pool holding them all (2 actors on 2 CPUs) waits forever for its inputs.
    Asking for none, a task always finds a slot, also when a node is lost and restarted actors
    take what is left; ``tasks`` caps how many run at once instead (the CPUs left to them).
    """
    cpus = max(float(cpus), 0.0)
    reserve = max(1.0, float(int(cpus) // 8)) if cpus >= 2 else cpus / 2
    if gpus >= 1:
        actors = int(gpus)
        actor_gpus = 1.0
    else:
        actors = max(1, int(cpus - reserve))
        actor_gpus = 0.0
    if max_actors is not None:
        actors = max(1, min(actors, max_actors))
    actor_cpus = min(1.0, max(cpus - reserve, 0.0) / actors) if cpus > 0 else 0.0
    actor_cpus = actor_cpus if actor_cpus >= 0.01 else 0.0
    left = max(cpus - actors * actor_cpus, 0.0)
    tasks = max(1, int(left * 2))
    return Sizing(actors, actor_cpus, actor_gpus, 0.0, tasks, max(1, int(actor_cpus)))


@dataclass(frozen=True)
class ClusterShape:
    nodes: int
    cpus: float
    gpus: float
    actors: int

    def line(self) -> str:
        return f"on {self.nodes} nodes, {self.cpus:g} CPUs, {self.gpus:g} GPUs, {self.actors} actors"


def cluster_shape(actors: int = 0) -> ClusterShape:
    import ray

    res = ray.cluster_resources()
    nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
    return ClusterShape(nodes, float(res.get("CPU", 0.0)), float(res.get("GPU", 0.0)), actors)


def connect(address: str) -> None:
    """Start (``local``) or join (``auto``, ``ray://host:10001``, ``host:6379``) a Ray cluster.

    Already connected (a test's cluster, or a job submitted with ``ray job submit``): nothing to do.
    """
    import ray

    if ray.is_initialized():
        return
    common: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False,
                              "configure_logging": False}
    if address == "local":
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        ray.init(num_cpus=cpus, include_dashboard=False, **common)
    else:
        ray.init(address=address, **common)


# --- Storage ----------------------------------------------------------------------------------


def as_uri(path: object) -> str:
    """``path`` as given on the command line: a URI whose ``//`` ``Path`` collapsed is restored."""
    text = str(path)
    m = _SCHEME.match(text)
    if m is None or len(m.group(1)) < 2:  # plain paths, and Windows drive letters
        return text
    scheme, rest = m.group(1).lower(), m.group(2)
    if "://" in text:
        return text
    return f"file:///{rest}" if scheme == "file" else f"{scheme}://{rest}"


def _filesystem(uri: str) -> tuple[Any, str]:
    """(pyarrow filesystem, path in it) for a URI (``s3://``, ``gs://``, ``file://``)."""
    from pyarrow import fs

    return fs.FileSystem.from_uri(uri)


def _is_uri(text: str) -> bool:
    m = _SCHEME.match(text)
    return m is not None and len(m.group(1)) >= 2


def _collect_uri(uri: str, fs_id: int, filesystem: Any, path: str) -> tuple[list[tuple[Path, Path, int]], list[str]]:
    """Photos under a URI, as collect_inputs finds them in folders: sorted, partial files left out."""
    from pyarrow import fs

    info = filesystem.get_file_info(path)
    if info.type == fs.FileType.NotFound:
        return [], [f"{uri}: no such file or folder"]
    if info.type == fs.FileType.File:
        p = Path(info.path)
        return [(p, p.parent, fs_id)], []
    found = []
    for f in filesystem.get_file_info(fs.FileSelector(path, recursive=True)):
        name = f.base_name
        if f.type == fs.FileType.File and Path(name).suffix.lower() in IMAGE_EXTENSIONS \
                and not name.endswith(PARTIAL_MARK):
            found.append(Path(f.path))
    return [(p, Path(path), fs_id) for p in sorted(found)], []


@dataclass
class _Plan:
    """Every photo of the run: its job, where it is read and where it goes."""

    jobs: list[Job] = field(default_factory=list)
    src_fs: list[int] = field(default_factory=list)  # -1: a local (shared) path; else an index in filesystems
    outputs: dict[int, str] = field(default_factory=dict)
    skipped: dict[int, str] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)
    filesystems: list[Any] = field(default_factory=list)
    out_fs: int = -1
    problems: list[str] = field(default_factory=list)


def plan_run(inputs: Sequence[object], export: ExportOptions) -> _Plan:
    """The driver's part: the photos, and each one's output path, planned as in a local run.

    Outputs on object storage are planned against a local stand-in of the output folder holding
    an empty file per existing output, so ``OutputPlanner`` decides skips and new names the same way.
    """
    plan = _Plan()
    local = [Path(str(i)) for i in inputs if not _is_uri(as_uri(i))]
    found: list[tuple[Path, Path, int]] = []
    if local:
        jobs, problems = collect_inputs(local)
        found += [(j.path, j.root, -1) for j in jobs]
        plan.problems += problems
    seen: set[tuple[int, str]] = set()
    for raw in inputs:
        uri = as_uri(raw)
        if not _is_uri(uri):
            continue
        try:
            filesystem, path = _filesystem(uri)
        except Exception as err:  # noqa: BLE001 - pyarrow raises several kinds for a bad URI
            plan.problems.append(f"{uri}: cannot open ({short_reason(err)})")
            continue
        plan.filesystems.append(filesystem)
        items, problems = _collect_uri(uri, len(plan.filesystems) - 1, filesystem, path)
        plan.problems += problems
        for p, root, fs_id in items:
            if (fs_id, str(p)) not in seen:  # the same object listed twice
                seen.add((fs_id, str(p)))
                found.append((p, root, fs_id))
    plan.jobs = [Job(i, p, root) for i, (p, root, _) in enumerate(found)]
    plan.src_fs = [fs_id for _, _, fs_id in found]
    out_uri = as_uri(export.output_dir)
    if not _is_uri(out_uri):
        _plan_outputs(plan, export, None)
        return plan
    try:
        filesystem, base = _filesystem(out_uri)
    except Exception as err:  # noqa: BLE001 - pyarrow raises several kinds for a bad URI
        raise ValueError(f"cannot open the output {out_uri} ({short_reason(err)})") from None
    plan.filesystems.append(filesystem)
    plan.out_fs = len(plan.filesystems) - 1
    with tempfile.TemporaryDirectory(prefix="colorizer-plan-") as stand_in:
        _mirror_existing(filesystem, base, Path(stand_in))
        _plan_outputs(plan, replace(export, output_dir=Path(stand_in)), (Path(os.path.realpath(stand_in)), base))
    return plan


def _mirror_existing(filesystem: Any, base: str, stand_in: Path) -> None:
    from pyarrow import fs

    for f in filesystem.get_file_info(fs.FileSelector(base, recursive=True, allow_not_found=True)):
        if f.type == fs.FileType.File:
            target = stand_in / Path(f.path).relative_to(base)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.touch()


def _plan_outputs(plan: _Plan, export: ExportOptions, remote: tuple[Path, str] | None) -> None:
    planner = OutputPlanner(export, [j for j, f in zip(plan.jobs, plan.src_fs, strict=True) if f < 0])
    for job in plan.jobs:
        try:
            out, skip = planner.plan(job)
        except (OSError, ValueError) as err:
            plan.failed[job.index] = f"cannot choose an output name ({one_line(str(err), 120)})"
            continue
        if out is None:
            plan.skipped[job.index] = skip
        elif remote is None:
            plan.outputs[job.index] = str(out)
        else:
            stand_in, base = remote
            plan.outputs[job.index] = f"{base.rstrip('/')}/{Path(out).relative_to(stand_in).as_posix()}"


def _exists(plan: _Plan, out: str) -> bool:
    if plan.out_fs < 0:
        return os.path.isfile(out)
    from pyarrow import fs

    return plan.filesystems[plan.out_fs].get_file_info(out).type == fs.FileType.File


# --- The work, row by row ----------------------------------------------------------------------


@dataclass
class _Work:
    """One photo as it goes through the stages; rows carry it pickled (numpy arrays of any shape)."""

    index: int
    src: str
    src_fs: int
    out: str
    status: str = _OK
    message: str = ""
    image: DecodedImage | None = None
    small: np.ndarray | None = None
    ab: np.ndarray | None = None
    width: int = 0
    height: int = 0
    decode_ms: float = 0.0
    infer_ms: float = 0.0
    encode_ms: float = 0.0
    engine: str = ""

    def fail(self, message: str, status: str = _FAILED) -> None:
        self.status, self.message, self.image, self.small, self.ab = status, message, None, None, None


@dataclass(frozen=True)
class _Context:
    """What every task needs besides its rows (pickled once per stage)."""

    size: int
    export: ExportOptions
    filesystems: tuple[Any, ...]
    out_fs: int


def _fetch(filesystem: Any, path: str, folder: str) -> Path:
    """A copy of an object-store photo on this worker's disk, for the same decoder as local files."""
    local = Path(folder) / f"photo{Path(path).suffix}"
    try:
        with filesystem.open_input_stream(path) as src, open(local, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    except FileNotFoundError:
        raise ImageError("file not found") from None
    except Exception as err:  # noqa: BLE001 - storage clients raise many kinds
        raise ImageError(f"unreadable file ({short_reason(err)})") from None
    return local


def _decode_work(w: _Work, ctx: _Context) -> None:
    """Read and prepare one photo with the local run's own ``decode_photo``: the same reasons on failure."""
    t = time.perf_counter()
    job = Job(w.index, Path(w.src), Path(w.src).parent)
    skip_colour = ctx.export.colour_inputs == "skip"
    if w.src_fs < 0:
        d = decode_photo(job, None, "", size=ctx.size, skip_colour=skip_colour)
    else:
        with tempfile.TemporaryDirectory(prefix="colorizer-in-") as folder:
            try:
                local = _fetch(ctx.filesystems[w.src_fs], w.src, folder)
            except ImageError as err:
                d = Decoded(job, None, error=str(err))
            else:
                d = decode_photo(replace(job, path=local), None, "", size=ctx.size, skip_colour=skip_colour)
    if d.image is not None:
        w.width, w.height = d.image.size
    if d.error is not None:
        w.fail(d.error)
    elif d.skip is not None:
        w.fail(d.skip, _SKIPPED)
    else:
        assert d.prepared is not None
        w.image, w.small = d.image, d.prepared.small  # the full-size L is made again by the writer, not shipped
    w.decode_ms = 1000 * (time.perf_counter() - t)


def _write_work(w: _Work, ctx: _Context) -> None:
    """Render and write with the local run's ``write_photo``: strips, atomic rename, the same reasons."""
    assert w.image is not None and w.ab is not None
    t = time.perf_counter()
    item = prepare(w.image.pixels, ctx.size)
    source = ab_source(w.ab, item)
    job = Job(w.index, Path(w.src), Path(w.src).parent)
    if ctx.out_fs < 0:
        outcome = write_photo(Decoded(job, Path(w.out), w.image, item), source, ctx.export)
    else:
        with tempfile.TemporaryDirectory(prefix="colorizer-out-") as folder:
            local = Path(folder) / f"out{Path(w.out).suffix}"
            outcome = write_photo(Decoded(job, local, w.image, item), source, ctx.export)
            if outcome.error is None:
                try:
                    _put(ctx.filesystems[ctx.out_fs], local, w.out)
                except ImageError as err:
                    outcome = replace(outcome, error=str(err))
    if outcome.error is not None:
        w.fail(outcome.error)
    else:
        w.status, w.image, w.small, w.ab = _DONE, None, None, None
    w.encode_ms = 1000 * (time.perf_counter() - t)


def _put(filesystem: Any, local: Path, final: str) -> None:
    """Upload a written output under a hidden temporary name, then move it into place.

    On object storage the final object appears whole when the move's copy completes; on a
    mounted or local file system the move is a rename.
    """
    hidden = partial_name(Path(final)).as_posix()
    try:
        filesystem.create_dir(Path(final).parent.as_posix(), recursive=True)
        with open(local, "rb") as src, filesystem.open_output_stream(hidden) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        filesystem.move(hidden, final)
    except Exception as err:  # noqa: BLE001 - storage clients raise many kinds
        try:
            filesystem.delete_file(hidden)
        except Exception:  # noqa: BLE001 - nothing there to delete
            pass
        if isinstance(err, OSError) and err.errno is not None:
            raise write_error(err) from None
        raise ImageError(f"could not write the output ({short_reason(err)})") from None


def _rows(batch: dict[str, Any]) -> list[_Work]:
    return [pickle.loads(b) for b in batch["work"]]


def _batch(works: list[_Work]) -> dict[str, Any]:
    blobs = np.empty(len(works), dtype=object)
    blobs[:] = [pickle.dumps(w, protocol=5) for w in works]
    return {"index": np.array([w.index for w in works], dtype=np.int64), "work": blobs}


def _decode_batch(batch: dict[str, Any], ctx: _Context) -> dict[str, Any]:
    works = _rows(batch)
    for w in works:
        _decode_work(w, ctx)
    return _batch(works)


def _write_batch(batch: dict[str, Any], ctx: _Context) -> dict[str, Any]:
    works = _rows(batch)
    for w in works:
        if w.status == _OK:
            _write_work(w, ctx)
    return _batch(works)


class ColorizeActor:
    """One colorizer in the pool: loads the weights once, then colorizes batch after batch.

    ``hook`` (tests) is called with each photo's source before it is colorized.
    """

    def __init__(self, settings: ColorizeSettings, threads: int, hook: Callable[[str], None] | None = None) -> None:
        import torch

        torch.set_num_threads(threads)
        self.colorizer = Colorizer.create(settings)
        self.hook = hook

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        works = _rows(batch)
        ready = [w for w in works if w.status == _OK]
        if self.hook is not None:
            for w in ready:
                self.hook(w.src)
        if ready:
            t = time.perf_counter()
            try:
                items = [Prepared(w.small, w.small) for w in ready if w.small is not None]
                ab = self.colorizer.infer(pack(items))
            except Exception as err:  # noqa: BLE001 - one bad batch must not end the run
                log.debug("inference failed", exc_info=True)
                for w in ready:
                    w.fail(f"colorization failed: {short_reason(err, 160)}")
            else:
                ms = 1000 * (time.perf_counter() - t) / len(ready)
                for w, a in zip(ready, ab, strict=True):
                    assert w.small is not None
                    h, wd = w.small.shape
                    w.ab = np.ascontiguousarray(a[:, : (h + 1) // 2, : (wd + 1) // 2])
                    w.small, w.infer_ms, w.engine = None, ms, self.colorizer.description
        return _batch(works)


# --- The run ------------------------------------------------------------------------------------


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


def _round(plan: _Plan, pending: list[int], settings: ColorizeSettings, export: ExportOptions, sizing: Sizing,
           hook: Callable[[str], None] | None, on_work: Callable[[_Work], None], per_block: int) -> None:
    """One Ray Data pass over ``pending``, ``per_block`` photos to a block and a model batch; each
    finished photo goes to ``on_work`` as it arrives.
    """
    import ray.data

    ctx = ray.data.DataContext.get_current()
    ctx.max_errored_blocks = -1  # a block lost for good: its photos are run again in the next round
    ctx.enable_progress_bars = False  # the command's own bar counts photos
    ctx.print_on_execution_start = False
    ctx.enable_auto_log_stats = False
    for name in ("ray.data", "ray.data._internal.progress"):  # progress is counted by the caller
        logging.getLogger(name).setLevel(logging.ERROR if name.endswith("progress") else logging.WARNING)
    context = _Context(settings.size, export, tuple(plan.filesystems), plan.out_fs)
    works = [_Work(i, str(plan.jobs[i].path), plan.src_fs[i], plan.outputs[i]) for i in pending]
    blobs = [{"index": w.index, "work": pickle.dumps(w, protocol=5)} for w in works]
    blocks = max(1, -(-len(blobs) // per_block))
    ds: Any = ray.data.from_items(blobs, override_num_blocks=blocks)  # typed loosely: Ray types fn_kwargs UDFs narrowly
    # Retries: a task whose worker dies is run again, an actor that dies is restarted (without limit:
    # a lost node's actors come back elsewhere) and its batch run again. Both are bounded, unlike Ray
    # Data's defaults, so that a photo that kills every process reading it cannot keep the run going
    # for ever: its block is set aside, and the next round tries its photos one by one.
    # A photo's own failure is a row with its reason, never an exception.
    retries = {"max_retries": TASK_RETRIES}
    tasks = ray.data.TaskPoolStrategy(size=min(sizing.tasks, blocks))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # retries as Ray remote args: deprecated in 2.60
        ds = ds.map_batches(_decode_batch, fn_kwargs={"ctx": context}, compute=tasks, num_cpus=sizing.task_cpus,
                            batch_size=per_block, batch_format="numpy", **retries)
        ds = ds.map_batches(ColorizeActor, fn_constructor_kwargs={"settings": settings, "threads": sizing.threads,
                                                                  "hook": hook},
                            compute=ray.data.ActorPoolStrategy(size=sizing.actors), num_cpus=sizing.actor_cpus,
                            num_gpus=sizing.actor_gpus, batch_size=per_block, batch_format="numpy",
                            max_restarts=-1, max_task_retries=TASK_RETRIES)
        ds = ds.map_batches(_write_batch, fn_kwargs={"ctx": context}, compute=tasks, num_cpus=sizing.task_cpus,
                            batch_size=per_block, batch_format="numpy", **retries)
    with warnings.catch_warnings():
        # Ray Data warns about its own settings and sizing as it runs (in its executor's thread):
        # notes for Ray, not failures of the run, where warnings are errors (the tests).
        warnings.filterwarnings("ignore", module="ray")
        for row in ds.iter_rows():
            on_work(pickle.loads(row["work"]))


def run_on_ray(inputs: Sequence[object], settings: ColorizeSettings, export: ExportOptions, address: str = "local",
               on_result: Callable[[PhotoResult], None] | None = None, *, max_actors: int | None = None,
               hook: Callable[[str], None] | None = None, max_rounds: int = MAX_ROUNDS,
               on_plan: Callable[[int, list[str]], None] | None = None) -> ClusterRun:
    """Colorize ``inputs`` on Ray; ``on_result`` gets each photo as it finishes (in no set order).

    Raises ValueError for settings the cluster cannot run (CUDA asked of a cluster without GPUs).
    """
    settings = settings.validated()
    export = export.validated()
    connect(address)
    shape = cluster_shape()
    if settings.device == "cuda" and shape.gpus < 1:
        raise ValueError("--device cuda: the Ray cluster has no GPUs")
    start = time.perf_counter()
    if not _is_uri(as_uri(export.output_dir)):
        Path(export.output_dir).mkdir(parents=True, exist_ok=True)
        clean_partials(Path(export.output_dir))
    plan = plan_run(inputs, export)
    if on_plan is not None:
        on_plan(len(plan.jobs), plan.problems)
    summary = BatchSummary(total=len(plan.jobs))
    run = ClusterRun(summary, shape, problems=list(plan.problems))
    finished: dict[int, PhotoResult] = {}
    infer_ms = 0.0

    def emit(result: PhotoResult) -> None:
        finished[result.index] = result
        summary.results.append(result)
        if result.status == _DONE:
            summary.done += 1
        elif result.status == _FAILED:
            summary.failed += 1
        elif result.status == _SKIPPED:
            summary.skipped += 1
        if on_result is not None:
            on_result(result)

    for job in plan.jobs:
        if job.index in plan.skipped:
            emit(PhotoResult(job.index, job.path, _SKIPPED, plan.skipped[job.index]))
        elif job.index in plan.failed:
            emit(PhotoResult(job.index, job.path, _FAILED, plan.failed[job.index]))

    def on_work(w: _Work) -> None:
        nonlocal infer_ms
        if w.index in finished:
            return
        infer_ms += w.infer_ms
        run.engine = run.engine or w.engine
        out = Path(w.out) if w.status == _DONE else None
        emit(PhotoResult(w.index, plan.jobs[w.index].path, w.status, w.message, output=out, width=w.width,
                         height=w.height, decode_ms=w.decode_ms, infer_ms=w.infer_ms, encode_ms=w.encode_ms))

    last_error = ""
    actors = 0
    for _ in range(max_rounds):
        pending = [i for i in plan.outputs if i not in finished]
        if not pending:
            break
        run.rounds += 1
        now = cluster_shape()
        sizing = size_pool(now.cpus, now.gpus, max_actors)
        actors = max(actors, sizing.actors)
        try:
            # Later rounds take the photos one by one: one that brings its process down fails alone.
            per_block = settings.batch_size if run.rounds == 1 else 1
            _round(plan, pending, settings, export, sizing, hook, on_work, per_block)
        except Exception as err:  # noqa: BLE001 - Ray's errors: what is missing is run in the next round
            last_error = short_reason(err, 160)
            log.warning("a round on the cluster ended early: %s", last_error)
        for i in pending:  # written before a fault took its result away: found, not written again
            if i not in finished and _exists(plan, plan.outputs[i]):
                emit(PhotoResult(i, plan.jobs[i].path, _DONE, output=Path(plan.outputs[i])))
    for i in plan.outputs:
        if i not in finished:
            reason = f"not colorized after {run.rounds} rounds on the cluster"
            emit(PhotoResult(i, plan.jobs[i].path, _FAILED, f"{reason}: {last_error}" if last_error else reason))
    if plan.out_fs < 0:
        clean_partials(Path(export.output_dir))  # hidden files of workers that died mid-write
    summary.wall_s = time.perf_counter() - start
    # The share of the wall time the average actor spent in the model, as "model busy" locally.
    summary.infer_s = infer_ms / 1000 / max(1, actors)
    summary.results.sort(key=lambda r: r.index)
    run.shape = replace(cluster_shape(), actors=actors)
    return run


def colorize_on_ray(inputs: Sequence[object], settings: ColorizeSettings, export: ExportOptions, address: str,
                    progress: Callable[[int], Any] | None = None) -> int:
    """The ``colorize --ray`` command: messages and exit status as in a local run (0, or 1 if any failed).

    ``progress(total)`` makes the command's progress bar (``update(count, label)``, ``close()``).
    Raises ValueError for a usage error.
    """
    try:
        import ray  # noqa: F401
    except ImportError:
        print("error: --ray needs Ray: pip install 'colorizer[cluster]'", file=sys.stderr)
        return 1
    from ..weights import DEFAULT_WEIGHTS, WeightsError, read_weights

    try:
        read_weights(settings.weights if settings.weights is not None else DEFAULT_WEIGHTS)
    except WeightsError as err:
        print(f"error: {short_reason(err, 300)}", file=sys.stderr)
        return 1
    bar: Any = None
    count = 0

    def on_plan(total: int, problems: list[str]) -> None:
        nonlocal bar
        for p in problems:
            print(f"error: {printable(p)}", file=sys.stderr)
        if not total:
            print("error: no photos found in the given inputs", file=sys.stderr)
        bar = progress(total) if progress is not None else None

    def on_result(r: PhotoResult) -> None:
        nonlocal count
        count += 1
        if bar is not None:
            bar.update(count, one_line(r.source.name, 40))
        if r.status == _FAILED:
            if bar is not None:
                bar.close()
            print(f"{printable(r.source)}: {one_line(r.message, 300) or 'failed'}", file=sys.stderr)

    try:
        run = run_on_ray(inputs, settings, export, address, on_result, on_plan=on_plan)
    except ConnectionError as err:
        print(f"error: cannot reach the Ray cluster at {address}: {short_reason(err)}", file=sys.stderr)
        return 1
    if bar is not None:
        bar.close()
    if not run.summary.total:
        return 1
    print(run.line())
    return 1 if run.summary.failed or run.problems else 0
