"""How a round uses the cluster it finds: the actor pool and the CPU tasks around it."""

from __future__ import annotations

from dataclasses import dataclass


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
    write tasks ask for none (``Rounds.one_round``): Ray cannot schedule a task on CPUs that actors
    hold, and a pool holding them all (2 actors on 2 CPUs) waits forever for its inputs. Asking for
    none, a task always finds a slot, also when a node is lost and restarted actors take what is
    left; ``tasks`` caps how many run at once instead (the CPUs left to them).
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
