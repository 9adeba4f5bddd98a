"""The driver's plan of a cluster run: every photo found, and each one's output path, planned as in a local run.

Outputs keep the paths planned here for the whole run; each output's signature at planning tells one
this run wrote from one that was there before it.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ...hints import Hint
from ...messages import one_line, short_reason
from ...options import ExportOptions, Job
from ..inputs import collect_inputs
from ..planning import OutputPlanner
from .storage import as_uri, collect_uri, is_uri, mirror_existing, open_filesystem


@dataclass
class Plan:
    """Every photo of the run: its job, where it is read and where it goes."""

    jobs: list[Job] = field(default_factory=list)
    src_fs: list[int] = field(default_factory=list)  # -1: a local (shared) path; else an index in filesystems
    outputs: dict[int, str] = field(default_factory=dict)
    before: dict[int, tuple[int, ...] | None] = field(default_factory=dict)  # each output's signature at planning
    skipped: dict[int, str] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)
    filesystems: list[Any] = field(default_factory=list)
    out_fs: int = -1
    problems: list[str] = field(default_factory=list)
    hints: dict[int, tuple[Hint, ...]] = field(default_factory=dict)  # colour hints by job index
    weights: dict[int, str] = field(default_factory=dict)  # by job index: another model's weights (auto's folders)
    renamed: set[int] = field(default_factory=set)  # job indices whose output goes under a "(n)" name


def plan_run(inputs: Sequence[object], export: ExportOptions) -> Plan:
    """The driver's part: the photos, and each one's output path, planned as in a local run.

    Outputs on object storage are planned against a local stand-in of the output folder holding
    an empty file per existing output, so ``OutputPlanner`` decides skips and new names the same way.
    """
    plan = Plan()
    local = [Path(str(i)) for i in inputs if not is_uri(as_uri(i))]
    found: list[tuple[Path, Path, int]] = []
    if local:
        jobs, problems = collect_inputs(local, keep_folder_names=len(inputs) > 1,  # as a local run of the inputs
                                        leave_out=None if is_uri(as_uri(export.output_dir)) else export.output_dir)
        found += [(j.path, j.root, -1) for j in jobs]
        plan.problems += problems
    seen: set[tuple[int, str]] = set()
    for raw in inputs:
        uri = as_uri(raw)
        if not is_uri(uri):
            continue
        try:
            filesystem, path = open_filesystem(uri)
        except Exception as err:  # noqa: BLE001 - pyarrow raises several kinds for a bad URI
            plan.problems.append(f"{uri}: cannot open ({short_reason(err)})")
            continue
        plan.filesystems.append(filesystem)
        items, problems = collect_uri(uri, len(plan.filesystems) - 1, filesystem, path)
        plan.problems += problems
        for p, root, fs_id in items:
            if (fs_id, str(p)) not in seen:  # the same object listed twice
                seen.add((fs_id, str(p)))
                found.append((p, root, fs_id))
    plan.jobs = [Job(i, p, root) for i, (p, root, _) in enumerate(found)]
    plan.src_fs = [fs_id for _, _, fs_id in found]
    out_uri = as_uri(export.output_dir)
    if not is_uri(out_uri):
        _plan_outputs(plan, export, None)
        plan.before = signatures(plan, list(plan.outputs))
        return plan
    try:
        filesystem, base = open_filesystem(out_uri)
    except Exception as err:  # noqa: BLE001 - pyarrow raises several kinds for a bad URI
        raise ValueError(f"cannot open the output {out_uri} ({short_reason(err)})") from None
    plan.filesystems.append(filesystem)
    plan.out_fs = len(plan.filesystems) - 1
    with tempfile.TemporaryDirectory(prefix="colorizer-plan-") as stand_in:
        mirror_existing(filesystem, base, Path(stand_in))
        _plan_outputs(plan, replace(export, output_dir=Path(stand_in)), (Path(os.path.realpath(stand_in)), base))
    plan.before = signatures(plan, list(plan.outputs))
    return plan


def _plan_outputs(plan: Plan, export: ExportOptions, remote: tuple[Path, str] | None) -> None:
    planner = OutputPlanner(export, [j for j, f in zip(plan.jobs, plan.src_fs, strict=True) if f < 0])
    for job in plan.jobs:
        try:
            out, skip = planner.plan(job)
        except (OSError, ValueError) as err:
            plan.failed[job.index] = f"cannot choose an output name ({one_line(str(err), 120)})"
            continue
        if skip:
            plan.skipped[job.index] = skip
        elif remote is None:
            plan.outputs[job.index] = str(out)
        else:
            stand_in, base = remote
            plan.outputs[job.index] = f"{base.rstrip('/')}/{Path(out).relative_to(stand_in).as_posix()}"
    plan.renamed = planner.renamed


def signatures(plan: Plan, indices: list[int]) -> dict[int, tuple[int, ...] | None]:
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


def written_since_planning(plan: Plan, indices: list[int]) -> list[int]:
    """The photos among ``indices`` whose output is there and new or changed since planning."""
    now = signatures(plan, indices)
    return [i for i in indices if now[i] is not None and now[i] != plan.before.get(i)]
