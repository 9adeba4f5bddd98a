"""``python main.py bench``: baseline and optimized side by side, in one run, on the same inputs.

Each (engine, precision, batch) is timed in a fresh subprocess, so that its peak memory is
its own (CUDA's max_memory_allocated, or the growth of the process's peak RSS on the CPU).
The headline compares each engine at its own best batch size: at one shared batch size the
ratio flatters whichever engine that size suits.

``bench --hints`` measures instead what a user waits for after placing a colour hint: hint map,
model (batch 1) and preview, with and without hints (``run_hints_bench``); ``bench --encoders``
and ``bench --peers`` compare encoders, and our runtimes with ONNX Runtime and OpenVINO.
"""

from __future__ import annotations

from .encoders import ENCODER_ROUNDS, run_encoders_bench
from .engines import configurations, run_engines_bench
from .hardware import CpuInfo, conv_peak_gflops, cpu_info
from .hint_latency import hint_photo, hinted_colorizer, preview_rgb, run_hints_bench
from .inputs import bench_inputs, bench_model, model_gflops
from .peers import PeerRow, peer_table, peer_verdicts, run_peers_bench
from .report import Row, best_vs_best, format_table, headline_lines, ratio_lines
from .settings import BenchSettings
from .timing import measure, measure_in_subprocess, peak_rss_bytes, reset_peak_rss

__all__ = ["ENCODER_ROUNDS", "BenchSettings", "CpuInfo", "PeerRow", "Row", "bench_inputs", "bench_model",
           "best_vs_best", "configurations", "conv_peak_gflops", "cpu_info", "format_table", "headline_lines",
           "hint_photo", "hinted_colorizer", "measure", "measure_in_subprocess", "model_gflops", "peak_rss_bytes",
           "peer_table", "peer_verdicts", "preview_rgb", "ratio_lines", "reset_peak_rss", "run_bench",
           "run_encoders_bench", "run_engines_bench", "run_hints_bench", "run_peers_bench"]


def run_bench(s: BenchSettings) -> int:
    """The bench ``s`` asks for: hints to preview, encoders or peers instead where set, else the engines."""
    if s.hints:
        return run_hints_bench(s)
    if s.encoders:
        return run_encoders_bench(s)
    if s.peers:
        return run_peers_bench(s)
    return run_engines_bench(s)
