"""Colorizing an archive on a Ray cluster: the local run's planning and writer, Ray Data in between.

The driver finds the inputs and plans every output path exactly as a local run does
(``collect_inputs``, ``OutputPlanner``: ``plan``). Ray Data then decodes in CPU tasks, colorizes in a
pool of actors (each loads the weights once; one GPU each where the cluster has GPUs) and renders and
writes in CPU tasks, with the local run's ``decode_photo`` and ``write_photo`` (``stages``): the same
reasons on failure, and the same atomic writer (a hidden temporary name, then a rename), so a photo is
complete or absent under its planned name and never written to a second one. Faults are survived in
``rounds``; inputs and outputs may be URIs (``storage``); ``connection`` and ``sizing`` reach the
cluster and size the pool to it.

Ray is imported inside functions only: the engine imports and runs without it.
"""

from .connection import ClusterShape, cluster_shape, connect
from .plan import Plan, plan_run
from .rounds import MAX_ROUNDS, TASK_RETRIES, Rounds
from .run import ClusterRun, run_on_ray
from .sizing import Sizing, size_pool
from .stages import ColorizeActor
from .storage import as_uri

__all__ = ["MAX_ROUNDS", "TASK_RETRIES", "ClusterRun", "ClusterShape", "ColorizeActor", "Plan", "Rounds", "Sizing",
           "as_uri", "cluster_shape", "connect", "plan_run", "run_on_ray", "size_pool"]
