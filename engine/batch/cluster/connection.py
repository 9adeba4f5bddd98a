"""Reaching the Ray cluster and reading its size: what a run starts with and reports."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

from ...messages import counted


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
        # address "local": a new instance of our own. Without it Ray joins the last cluster started on this machine
        # (/tmp/ray/ray_current_cluster, even one that has since died) and then refuses num_cpus.
        ray.init(address="local", num_cpus=cpus, include_dashboard=False, **common)
    else:
        ray.init(address=address, **common)
