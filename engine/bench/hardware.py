"""What the hardware offers: the CPU's vector units, and a 3x3 convolution's measured peak."""

from __future__ import annotations

import math
import platform
import statistics
import time
from dataclasses import dataclass

import torch

from ..devices import (
    BF16_PAYS,
    cap_allows,
    cpu_bf16_speedup,
    cpu_fields,
    cpu_flags,
    cpu_has_fast_bf16,
    first_processor,
    onednn_cap,
)
from ..runtimes import dnnl


@dataclass(frozen=True)
class CpuInfo:
    """What the CPU offers the convolutions: results differ between CPU kinds, so every bench says which."""

    model: str
    capability: str  # torch.backends.cpu.get_cpu_capability(): the widest vector ISA ATen uses (AVX2, AVX512...)
    amx: bool  # AMX tiles (Sapphire Rapids and later): oneDNN's bf16 matrix units; ATen still reports AVX512
    avx512_bf16: bool
    bf16_native: bool  # engine.devices.cpu_has_fast_bf16: bf16 offered at all (auto also asks the probe)
    onednn_cap: str = ""  # ONEDNN_MAX_CPU_ISA: oneDNN (ours and OpenVINO's) held to a narrower ISA, e.g. AVX2
    convolutions: str = ""  # which call runs our CPU convolutions (engine.runtimes.dnnl.describe)
    bf16_speedup: float | None = None  # engine.devices.cpu_bf16_speedup: whether "auto" takes bf16 where native

    def line(self) -> str:
        amx = self.amx and cap_allows(self.onednn_cap, "AMX")  # e.g. AVX2, AVX512_CORE_BF16: what oneDNN may use
        bf16 = self.avx512_bf16 and cap_allows(self.onednn_cap, "BF16")
        extras = [name for name, on in (("AMX", amx), ("AVX512-BF16", bf16)) if on]
        isa = self.capability + (f" + {' + '.join(extras)}" if extras else "")
        cap = f"; oneDNN held to {self.onednn_cap} (ONEDNN_MAX_CPU_ISA)" if self.onednn_cap else ""
        convs = f"; convolutions: {self.convolutions}" if self.convolutions else ""
        speedup, how = self.bf16_speedup, "native"
        if not self.bf16_native:
            how = "emulated (not offered)"
        elif speedup is not None and math.isinf(speedup):
            how += ", AMX: auto takes bf16"
        elif speedup is not None:
            how += f", {speedup:.2f}x fp32's speed on a probe: auto takes {'bf16' if speedup >= BF16_PAYS else 'fp32'}"
        return f"cpu: {self.model}; {isa}{cap}; bf16 {how}{convs}"


def cpu_name(cpuinfo: str) -> str:
    """The first CPU's model name from /proc/cpuinfo's text, with its family and model numbers: under a hypervisor
    the name is often just "AMD EPYC", which covers AVX2-only and AVX-512 generations alike.
    """
    return _named(first_processor(cpuinfo))


def _named(fields: dict[str, str]) -> str:
    name = fields.get("model name") or platform.processor() or platform.machine()
    numbers = [f"{word} {fields[key]}" for key, word in (("cpu family", "family"), ("model", "model"))
               if fields.get(key)]
    return f"{name} ({', '.join(numbers)})" if numbers else name


def cpu_info() -> CpuInfo:
    """The CPU the bench runs on (not Linux: the flags are unknown, and torch's own figures remain)."""
    flags = cpu_flags()
    return CpuInfo(_named(cpu_fields()), torch.backends.cpu.get_cpu_capability(), "amx_tile" in flags,
                   "avx512_bf16" in flags, cpu_has_fast_bf16(), onednn_cap(), dnnl.describe(), cpu_bf16_speedup())


def conv_peak_gflops(device: torch.device, dtype: torch.dtype) -> float:
    """A 3x3 convolution, 64 channels, 256 px, channels_last: what this hardware gives."""
    conv = torch.nn.Conv2d(64, 64, 3, padding=1, bias=False).to(device=device, dtype=dtype)
    conv = conv.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
    x = torch.randn(4, 64, 256, 256, device=device, dtype=dtype).contiguous(memory_format=torch.channels_last)
    flops = 2 * 64 * 64 * 9 * 256 * 256 * 4
    with torch.inference_mode():
        for _ in range(2):
            conv(x)
        times = []
        for _ in range(5):
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            t = time.perf_counter()
            conv(x)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            times.append(time.perf_counter() - t)
    return flops / statistics.median(times) / 1e9
