"""What a bench run is asked to measure: one frozen settings object, also handed to each timing subprocess."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class BenchSettings:
    size: int = 512
    batches: tuple[int, ...] = (1, 8)
    json_path: Path | None = None
    profile: bool = False
    repeat: int = 5
    warmup: int = 2
    device: str = "auto"
    weights: Path | None = None
    threads: int | None = None
    hints: bool = False  # measure hints -> preview instead (run_hints_bench)
    preview: int = 800  # the app's previews: longer side at screen resolution, not the photo's
    hint_photo: int = 3000  # longer side of the photo hinted (a typical scan)
    hint_points: int = 5
    encoders: tuple[str, ...] = ()  # compare these encoders instead (run_encoders_bench)
    encoder: str | None = None  # a worker's: time a random model with this encoder, not the weights
    peers: bool = False  # ours beside ONNX Runtime and OpenVINO, in one process (run_peers_bench)
    cuda_graphs: bool = True  # the optimized runtime's CUDA graphs (off: every call launched anew)
    rounds: int = 9  # --peers: every runtime once a round, taking turns
