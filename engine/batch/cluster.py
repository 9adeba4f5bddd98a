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
block (a photo that kills its process fails alone). Outputs keep the paths planned at the start.
A photo counts as done when its write task reports it written; where a dead worker took that report
away, when its output is new or changed since planning (an old output that ``overwrite`` was to
replace does not count), so it is not written again.

Ray is imported inside functions only: the engine imports and runs without it.
"""

from __future__ import annotations

import logging
import os
import pickle
import re
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..color import lightness
from ..colorizer import Colorizer, Prepared, ab_source
from ..hints import Hint
from ..imageio import (
    IMAGE_EXTENSIONS,
    PARTIAL_MARK,
    DecodedImage,
    ImageError,
    clean_partials,
    partial_name,
    write_error,
)
from ..messages import counted, one_line, short_reason
from ..options import BatchSummary, ColorizeSettings, ExportOptions, Job, PhotoResult, Status
from .decode_ahead import Decoded, decode_photo
from .inputs import collect_inputs
from .ordered_writes import write_photo
from .planning import OutputPlanner

log = logging.getLogger(__name__)

MAX_ROUNDS = 3  # rounds of "run what is missing" after faults Ray's own retries did not absorb
TASK_RETRIES = 3  # runs of a task or an actor's batch after its process died, per round
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):/+(.*)$")


# --- Sizing -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sizing:
    """How a round uses the cluster: the actor pool and the CPU tasks around it."""

    actors: int
    actor_cpus: float  # at most 1: a CPU actor is single-threaded
    actor_gpus: float
    tasks: int  # decode (and write) tasks running at once, at most
    threads: int  # torch threads in each actor: 1 on CPUs; a GPU actor's node's CPUs per GPU


def size_pool(cpus: float, gpus: float, max_actors: int | None = None, cpus_per_gpu: float = 1.0) -> Sizing:
    """The pool for a cluster with ``cpus`` CPUs and ``gpus`` GPUs in all.

    One actor per GPU, with as many torch threads as its node has CPUs per GPU (``cpus_per_gpu``,
    the least over the GPU nodes; the CPU fallback after running out of GPU memory uses them);
    without GPUs, one single-threaded actor per CPU, less the CPUs kept for decoding and writing
    (an eighth, at least one). The actors together never ask for all the CPUs, and the decode and
    write tasks ask for none (``_round``): Ray cannot schedule a task on CPUs that actors hold, and
    a pool holding them all (2 actors on 2 CPUs) waits forever for its inputs. Asking for none, a
    task always finds a slot, also when a node is lost and restarted actors take what is left;
    ``tasks`` caps how many run at once instead (the CPUs left to them).
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
    threads = max(1, int(cpus_per_gpu)) if actor_gpus else 1
    return Sizing(actors, actor_cpus, actor_gpus, tasks, threads)


@dataclass(frozen=True)
class ClusterShape:
    nodes: int
    cpus: float
    gpus: float
    actors: int
    cpus_per_gpu: float = 1.0  # the least over the nodes that have GPUs

    def line(self) -> str:
        return (f"on {counted(self.nodes, 'node')}, {self.cpus:g} CPUs, {self.gpus:g} GPUs, "
                f"{counted(self.actors, 'actor')}")


def cluster_shape(actors: int = 0) -> ClusterShape:
    import ray

    res = ray.cluster_resources()
    alive = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
    per_gpu = [float(r.get("CPU", 0.0)) / float(r["GPU"]) for r in alive if float(r.get("GPU", 0.0)) >= 1]
    return ClusterShape(len(alive), float(res.get("CPU", 0.0)), float(res.get("GPU", 0.0)), actors,
                        min(per_gpu, default=1.0))


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
    before: dict[int, tuple[int, ...] | None] = field(default_factory=dict)  # each output's _signature at planning
    skipped: dict[int, str] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)
    filesystems: list[Any] = field(default_factory=list)
    out_fs: int = -1
    problems: list[str] = field(default_factory=list)
    hints: dict[int, tuple[Hint, ...]] = field(default_factory=dict)  # colour hints by job index


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
        plan.before = _signatures(plan, list(plan.outputs))
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
    plan.before = _signatures(plan, list(plan.outputs))
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


def _signatures(plan: _Plan, indices: list[int]) -> dict[int, tuple[int, ...] | None]:
    """Each output's (inode, mtime_ns, size) now (on object storage: mtime_ns, size), or None where there is
    none: what tells an output written by this run from one that was there before it.
    """
    found: dict[int, tuple[int, ...] | None] = {}
    if plan.out_fs < 0:
        for i in indices:
            try:
                st = os.stat(plan.outputs[i])
            except OSError:
                found[i] = None
            else:
                found[i] = (st.st_ino, st.st_mtime_ns, st.st_size)
        return found
    if not indices:
        return found
    from pyarrow import fs

    infos = plan.filesystems[plan.out_fs].get_file_info([plan.outputs[i] for i in indices])
    for i, f in zip(indices, infos, strict=True):
        found[i] = (int(f.mtime_ns or 0), int(f.size or 0)) if f.type == fs.FileType.File else None
    return found


def _written_since_planning(plan: _Plan, indices: list[int]) -> list[int]:
    """The photos among ``indices`` whose output is there and new or changed since planning."""
    now = _signatures(plan, indices)
    return [i for i in indices if now[i] is not None and now[i] != plan.before.get(i)]


# --- The work, row by row ----------------------------------------------------------------------


@dataclass
class _Work:
    """One photo as it goes through the stages; rows carry it pickled (numpy arrays of any shape)."""

    index: int
    src: str
    src_fs: int
    out: str
    status: Status = Status.WORKING  # until it is written, fails or is skipped
    message: str = ""
    image: DecodedImage | None = None
    small: np.ndarray | None = None  # the working-size L; after colorizing, the one the model was given
    ab: np.ndarray | None = None  # the model's half-size ab for ``small``
    width: int = 0
    height: int = 0
    decode_ms: float = 0.0
    infer_ms: float = 0.0
    encode_ms: float = 0.0
    engine: str = ""
    hints: tuple[Hint, ...] = ()  # the photo's colour hints travel with it, as relative points and colours

    def fail(self, message: str, status: Status = Status.FAILED) -> None:
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
        w.fail(d.skip, Status.SKIPPED)
    else:
        assert d.prepared is not None
        w.image, w.small = d.image, d.prepared.small  # the full-size L is made again by the writer, not shipped
    w.decode_ms = 1000 * (time.perf_counter() - t)


def _write_work(w: _Work, ctx: _Context) -> None:
    """Render and write with the local run's ``write_photo``: strips, atomic rename, the same reasons."""
    assert w.image is not None and w.ab is not None and w.small is not None
    t = time.perf_counter()
    item = Prepared(lightness(w.image.pixels), w.small)
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
        w.status, w.image, w.small, w.ab = Status.DONE, None, None, None
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
        if w.status == Status.WORKING:
            _write_work(w, ctx)
    return _batch(works)


class ColorizeActor:
    """One colorizer in the pool: loads the weights once, then colorizes batch after batch with
    ``Colorizer.infer_photos`` (its out-of-memory ladder and notes, as in a local run).

    The full-size L is not shipped to the actor: the working-size L stands in for it, which is all
    the model reads (the ladder's smaller working size is made from it). Each photo goes on with the
    working-size L the model was given, so the writer crops the ab at that size.
    ``hook`` (tests) is called with each photo's source before it is colorized.
    """

    def __init__(self, settings: ColorizeSettings, threads: int, hook: Callable[[str], None] | None = None) -> None:
        import torch

        torch.set_num_threads(threads)
        self.colorizer = Colorizer.create(settings)
        self.hook = hook

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        works = _rows(batch)
        ready = [w for w in works if w.status == Status.WORKING]
        if self.hook is not None:
            for w in ready:
                self.hook(w.src)
        if not ready:
            return _batch(works)
        t = time.perf_counter()
        items = [Prepared(w.small, w.small) for w in ready if w.small is not None]
        hints = [w.hints for w in ready] if any(w.hints for w in ready) else None
        try:
            inferred = self.colorizer.infer_photos(items, hints)
        except Exception as err:  # noqa: BLE001 - one bad batch must not end the run
            log.debug("colorization failed", exc_info=True)
            for w in ready:
                w.fail(f"colorization failed: {short_reason(err, 160)}")
            return _batch(works)
        ms = 1000 * (time.perf_counter() - t) / len(ready)
        for w, inf in zip(ready, inferred, strict=True):
            if inf.note:
                log.info("%s: %s", Path(w.src).name, inf.note)
            if inf.ab is None:
                w.fail(inf.note)
                continue
            w.ab, w.small, w.message = inf.ab, inf.item.small, inf.note
            w.infer_ms, w.engine = ms, self.colorizer.description
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


_DATA_SETTINGS: dict[str, Any] = {
    "max_errored_blocks": -1,  # a block lost for good: its photos are run again in the next round
    "enable_progress_bars": False,  # the caller counts photos
    "print_on_execution_start": False,
    "enable_auto_log_stats": False,
}
_QUIET_LOGGERS = {"ray.data": logging.WARNING, "ray.data._internal.progress": logging.ERROR}


def _round(plan: _Plan, pending: list[int], settings: ColorizeSettings, export: ExportOptions, sizing: Sizing,
           hook: Callable[[str], None] | None, on_work: Callable[[_Work], None], per_block: int) -> None:
    """One Ray Data pass over ``pending``, ``per_block`` photos to a block and a model batch; each
    finished photo goes to ``on_work`` as it arrives.
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
        _run_round(plan, pending, settings, export, sizing, hook, on_work, per_block)
    finally:  # the process's Ray Data settings and loggers, as they were: a round changes them only while it runs
        for name, value in settings_before.items():
            setattr(ctx, name, value)
        for name, level in levels_before.items():
            logging.getLogger(name).setLevel(level)


def _run_round(plan: _Plan, pending: list[int], settings: ColorizeSettings, export: ExportOptions, sizing: Sizing,
               hook: Callable[[str], None] | None, on_work: Callable[[_Work], None], per_block: int) -> None:
    import ray.data

    context = _Context(settings.size, export, tuple(plan.filesystems), plan.out_fs)
    works = [_Work(i, str(plan.jobs[i].path), plan.src_fs[i], plan.outputs[i], hints=plan.hints.get(i, ()))
             for i in pending]
    blobs = [{"index": w.index, "work": pickle.dumps(w, protocol=5)} for w in works]
    blocks = max(1, -(-len(blobs) // per_block))
    ds: Any = ray.data.from_items(blobs, override_num_blocks=blocks)  # typed loosely: Ray types fn_kwargs UDFs narrowly
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
        ds = ds.map_batches(_decode_batch, fn_kwargs={"ctx": context}, compute=tasks, num_cpus=0,
                            batch_size=per_block, batch_format="numpy", **retries)
        ds = ds.map_batches(ColorizeActor, fn_constructor_kwargs={"settings": settings, "threads": sizing.threads,
                                                                  "hook": hook},
                            compute=ray.data.ActorPoolStrategy(size=sizing.actors,
                                                               max_tasks_in_flight_per_actor=in_flight),
                            num_cpus=sizing.actor_cpus,
                            num_gpus=sizing.actor_gpus, batch_size=per_block, batch_format="numpy",
                            max_restarts=-1, max_task_retries=TASK_RETRIES)
        ds = ds.map_batches(_write_batch, fn_kwargs={"ctx": context}, compute=tasks, num_cpus=0,
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
               on_plan: Callable[[int, list[str]], None] | None = None,
               hints: Callable[[list[Job]], Mapping[int, Sequence[Hint]]] | None = None) -> ClusterRun:
    """Colorize ``inputs`` on Ray; ``on_result`` gets each photo as it finishes (in no set order).

    ``on_plan(total, problems)`` is called once the inputs are found, before any photo is reported.
    ``hints(jobs)``: the colour hints of the photos found, by job index (a hints file matched to them);
    each photo's hints travel with it to the actor that colorizes it.
    Raises ValueError for settings the cluster cannot run (CUDA asked of a cluster without GPUs),
    ConnectionError where the cluster cannot be reached. Prints nothing: the caller reports.
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
    if hints is not None:
        plan.hints = {i: tuple(h) for i, h in hints(plan.jobs).items() if h}
    summary = BatchSummary(total=len(plan.jobs))
    run = ClusterRun(summary, shape, problems=list(plan.problems))
    finished: dict[int, PhotoResult] = {}
    infer_ms = 0.0

    def emit(result: PhotoResult) -> None:
        finished[result.index] = result
        summary.add(result)
        if on_result is not None:
            on_result(result)

    for job in plan.jobs:
        if job.index in plan.skipped:
            emit(PhotoResult(job.index, job.path, Status.SKIPPED, plan.skipped[job.index]))
        elif job.index in plan.failed:
            emit(PhotoResult(job.index, job.path, Status.FAILED, plan.failed[job.index]))

    def on_work(w: _Work) -> None:
        nonlocal infer_ms
        if w.index in finished:
            return
        infer_ms += w.infer_ms
        run.engine = run.engine or w.engine
        out = Path(w.out) if w.status == Status.DONE else None
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
        sizing = size_pool(now.cpus, now.gpus, max_actors, now.cpus_per_gpu)
        actors = max(actors, sizing.actors)
        try:
            # Later rounds take the photos one by one: one that brings its process down fails alone.
            per_block = settings.batch_size if run.rounds == 1 else 1
            _round(plan, pending, settings, export, sizing, hook, on_work, per_block)
        except Exception as err:  # noqa: BLE001 - Ray's errors: what is missing is run in the next round
            last_error = short_reason(err, 160)
            log.warning("a round on the cluster ended early: %s", last_error)
        # Written before a fault took the write task's report away: found, not written again. Only an
        # output new or changed since planning counts (with overwrite, the old one is still there).
        for i in _written_since_planning(plan, [i for i in pending if i not in finished]):
            emit(PhotoResult(i, plan.jobs[i].path, Status.DONE, output=Path(plan.outputs[i])))
    for i in plan.outputs:
        if i not in finished:
            reason = f"not colorized after {run.rounds} rounds on the cluster"
            emit(PhotoResult(i, plan.jobs[i].path, Status.FAILED, f"{reason}: {last_error}" if last_error else reason))
    if plan.out_fs < 0:
        clean_partials(Path(export.output_dir))  # hidden files of workers that died mid-write
    summary.wall_s = time.perf_counter() - start
    # The share of the wall time the average actor spent in the model, as "model busy" locally.
    summary.infer_s = infer_ms / 1000 / max(1, actors)
    summary.results.sort(key=lambda r: r.index)
    run.shape = replace(cluster_shape(), actors=actors)
    return run

