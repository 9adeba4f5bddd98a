"""The baseline-vs-optimized table and the lines under it: each engine at its own best batch, and at the same."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Row:
    engine: str
    precision: str
    batch: int
    ms_per_image: float
    images_per_s: float
    peak_mem_mb: float
    max_abs_diff: float  # |ab| against the baseline at the same batch, Lab units
    p999_abs_diff: float  # its 99.9th percentile: the robust figure (see engine.options.AGREEMENT)


def format_table(rows: list[Row], gflops: float, peak: float) -> str:
    head = ("| engine | precision | batch | ms/image | images/s | peak MB | max abs diff | p99.9 abs diff | GFLOP/s "
            "| of conv peak |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    lines = [head]
    for r in rows:
        achieved = gflops * r.images_per_s
        lines.append(f"| {r.engine} | {r.precision} | {r.batch} | {r.ms_per_image:.1f} | {r.images_per_s:.2f} | "
                     f"{r.peak_mem_mb:.0f} | {r.max_abs_diff:.3g} | {r.p999_abs_diff:.3g} | {achieved:.0f} | "
                     f"{100 * achieved / peak:.0f}% |")
    return "\n".join(lines)


def best_vs_best(rows: list[Row]) -> list[dict]:
    """Each optimized precision at its best batch size against the baseline at its own best batch size."""
    base = max((r for r in rows if r.engine == "baseline"), key=lambda r: r.images_per_s, default=None)
    if base is None:
        return []
    out = []
    for precision in dict.fromkeys(r.precision for r in rows if r.engine == "optimized"):
        best = max((r for r in rows if r.engine == "optimized" and r.precision == precision),
                   key=lambda r: r.images_per_s)
        mem = best.peak_mem_mb / base.peak_mem_mb if base.peak_mem_mb > 0 else float("nan")
        out.append({"precision": precision, "batch": best.batch, "images_per_s": best.images_per_s,
                    "baseline_batch": base.batch, "baseline_images_per_s": base.images_per_s,
                    "speedup": best.images_per_s / base.images_per_s, "memory_ratio": mem})
    return out


def headline_lines(rows: list[Row]) -> list[str]:
    return [f"best vs best: optimized {b['precision']} at batch {b['batch']} is {b['speedup']:.2f}x the baseline "
            f"at its best batch {b['baseline_batch']} ({b['images_per_s']:.2f} vs "
            f"{b['baseline_images_per_s']:.2f} images/s), {b['memory_ratio']:.2f}x its peak memory"
            for b in best_vs_best(rows)]


def ratio_lines(rows: list[Row]) -> list[str]:
    out = []
    for batch in sorted({r.batch for r in rows}):
        base = next((r for r in rows if r.batch == batch and r.engine == "baseline"), None)
        if base is None:
            continue
        for r in rows:
            if r.batch == batch and r.engine == "optimized":
                mem = r.peak_mem_mb / base.peak_mem_mb if base.peak_mem_mb > 0 else float("nan")
                out.append(f"same batch {batch}: optimized {r.precision} is {r.images_per_s / base.images_per_s:.2f}x "
                           f"the baseline's images/s, {mem:.2f}x its peak memory")
    return out
