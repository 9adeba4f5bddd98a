"""Devices, the precisions each can run, and live utilization figures (NVML or psutil)."""

from __future__ import annotations

import copy
import functools
import logging
import math
import os
import threading
import time
from dataclasses import dataclass

import psutil
import torch

log = logging.getLogger(__name__)

PRECISIONS = ("fp32", "fp16", "bf16")
BF16_PAYS = 1.15  # bf16 must run the probe this much faster than fp32 to be picked: it costs some colour accuracy


def resolve_device(name: str = "auto") -> torch.device:
    """'auto' is CUDA when present, else the CPU; asking for CUDA without it is an error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("CUDA was asked for, but this machine has no usable CUDA GPU")
    if name not in ("cpu", "cuda"):
        raise ValueError(f"unknown device {name!r}: use auto, cpu or cuda")
    return torch.device(name)


def cpu_has_fast_bf16() -> bool:
    """True where oneDNN runs bf16 natively (AVX-512 BF16 or AMX); elsewhere bf16 is emulated and slow."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


BF16_ENV = "COLORIZER_CPU_BF16"  # "1" or "0": take (or leave) bf16 on this CPU without the probe, e.g. on a cluster


def _probe_bf16() -> float:
    """fp32's time over bf16's on a small stack of the network's kinds of convolution, each the least of 5 turns
    taken in alternation after 2 warm-up turns (oneDNN builds its primitives on the first call).
    """
    x = torch.randn(1, 64, 80, 80).contiguous(memory_format=torch.channels_last)
    stack = torch.nn.Sequential(torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.Conv2d(64, 64, 3, padding=1, groups=64),
                                torch.nn.Conv2d(64, 128, 1), torch.nn.Conv2d(128, 64, 3, padding=1)).eval()
    runs = {dtype: (copy.deepcopy(stack).to(dtype=dtype, memory_format=torch.channels_last),  # type: ignore[call-overload]
                    x.to(dtype))
            for dtype in (torch.float32, torch.bfloat16)}
    best = {dtype: float("inf") for dtype in runs}
    with torch.inference_mode():
        for turn in range(7):
            for dtype, (net, inp) in runs.items():
                start = time.perf_counter()
                net(inp)
                if turn >= 2:
                    best[dtype] = min(best[dtype], time.perf_counter() - start)
    return best[torch.float32] / best[torch.bfloat16]


_probe_lock = threading.Lock()


@functools.lru_cache(maxsize=1)
def _cached_speedup() -> float | None:
    if not cpu_has_fast_bf16() or not _onednn_may_use_bf16():
        return None
    if cpu_flags() >= {"amx_tile", "amx_bf16"}:  # AMX ran the model at 2.6x and 2.8x fp32's speed (batch 1, 8)
        log.info("bf16 on AMX: taken without the probe")
        return math.inf
    try:
        with torch.random.fork_rng(devices=[]):  # the seeded draws of a training run stay as they were
            speedup = _probe_bf16()
    except RuntimeError as err:  # a kernel that will not build here: bf16 is not for this CPU
        log.warning("the bf16 probe failed (%s): fp32", err)
        return None
    log.info("bf16 runs %.2fx the speed of fp32 here (a convolution probe)", speedup)
    return speedup


def cpu_bf16_speedup() -> float | None:
    """How many times faster bf16 runs the network's kinds of convolution than fp32 here (``_probe_bf16``),
    measured once per process (about 0.2 s); None where bf16 is not native (or oneDNN is held below it), inf on AMX.

    Why measured: native is not always faster. AMX and the AVX-512 BF16 of a Zen 4 run the model about twice as fast
    as fp32 or more, but a Xeon whose AMX is hidden by its hypervisor runs oneDNN's AVX-512 BF16 kernels at about
    0.7x the speed of its fp32 ones (docs/bench-peers-xeon-no-amx.txt).
    """
    with _probe_lock:  # two first callers at once would each time the other's load
        return _cached_speedup()


def cpu_bf16_pays() -> bool:
    """Whether "auto" takes bf16 on this CPU: native, and measured faster than fp32 by BF16_PAYS (or
    ``COLORIZER_CPU_BF16`` says, so that every process of a run takes the same).
    """
    forced = os.environ.get(BF16_ENV, "").strip()
    if forced in ("0", "1"):
        return forced == "1" and cpu_has_fast_bf16()
    speedup = cpu_bf16_speedup()
    return speedup is not None and speedup >= BF16_PAYS


def onednn_cap() -> str:
    """ONEDNN_MAX_CPU_ISA (or DNNL_MAX_CPU_ISA): the widest ISA oneDNN, ours and OpenVINO's, may use ("": any)."""
    return os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA", "")


def cap_allows(cap: str, isa: str) -> bool:
    """Whether oneDNN held to ``cap`` (``onednn_cap``) may still use ``isa`` ("BF16" or "AMX"; AMX holds BF16)."""
    held = cap.upper()
    return not held or held == "ALL" or isa in held or "AMX" in held


def _onednn_may_use_bf16() -> bool:
    """False where oneDNN is held below its bf16 kernels (the bench's imitations of AVX2 CPUs)."""
    return cap_allows(onednn_cap(), "BF16")


def first_processor(cpuinfo: str) -> dict[str, str]:
    """/proc/cpuinfo's fields for the first processor (its block ends at the first empty line)."""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        if not line.strip():
            break
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


@functools.lru_cache(maxsize=1)
def cpu_fields() -> dict[str, str]:
    """The ``first_processor`` fields of this machine, read once ({} where there is no /proc/cpuinfo: not Linux)."""
    try:
        with open("/proc/cpuinfo") as f:
            return first_processor(f.read())
    except OSError:
        return {}


def cpu_flags() -> set[str]:
    return set(cpu_fields().get("flags", "").split())


def precision_support(device: torch.device) -> dict[str, str | None]:
    """For each precision: None when it runs well here, else the reason it is not offered."""
    if device.type == "cuda":
        major, _ = torch.cuda.get_device_capability(device)
        return {"fp32": None, "fp16": None,
                "bf16": None if major >= 8 else "bf16 needs an Ampere or newer GPU; use fp16"}
    bf16 = None if cpu_has_fast_bf16() else (
        "this CPU has no native bf16 (AVX-512 BF16/AMX): it would be emulated and slow")
    return {"fp32": None, "fp16": "fp16 is for CUDA GPUs; on the CPU use bf16 where supported", "bf16": bf16}


def best_precision(device: torch.device) -> str:
    """What "auto" runs: fp16 or bf16 on a GPU; bf16 on a CPU where it pays (``cpu_bf16_pays``), else fp32."""
    if device.type != "cuda":
        return "bf16" if cpu_bf16_pays() else "fp32"
    support = precision_support(device)
    return next((p for p in ("fp16", "bf16") if support[p] is None), "fp32")


def torch_dtype(precision: str) -> torch.dtype:
    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[precision]


def describe_device(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"CPU ({torch.get_num_threads()} threads)"


@dataclass(frozen=True)
class Utilization:
    """One sample of how busy the processor is. ``kind`` says which figures these are."""

    kind: str  # "gpu" or "cpu"
    time: float
    busy_percent: float  # GPU utilization or CPU utilization of the whole machine
    memory_mb: float  # GPU memory used, or this process's resident memory
    memory_total_mb: float
    label: str


class UtilizationMonitor:
    """Poll with ``sample()``; GPU figures through NVML on CUDA, CPU figures through psutil otherwise."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self._nvml = None
        self._handle = None
        if device.type == "cuda":
            try:
                import pynvml

                pynvml.nvmlInit()
                index = device.index if device.index is not None else torch.cuda.current_device()
                self._handle = pynvml.nvmlDeviceGetHandleByIndex(index)
                self._nvml = pynvml
            except Exception as err:  # NVML missing or broken: fall back to CPU figures
                log.warning("NVML unavailable (%s); showing CPU figures", err)
        self._proc = psutil.Process(os.getpid())
        psutil.cpu_percent(None)  # primes the counter: the next call measures from here

    @property
    def kind(self) -> str:
        return "gpu" if self._nvml is not None else "cpu"

    def sample(self) -> Utilization:
        now = time.time()
        if self._nvml is not None:
            util = self._nvml.nvmlDeviceGetUtilizationRates(self._handle)
            mem = self._nvml.nvmlDeviceGetMemoryInfo(self._handle)
            return Utilization("gpu", now, float(util.gpu), mem.used / 2**20, mem.total / 2**20,
                               "GPU utilization % / GPU memory MB (NVML)")
        return Utilization("cpu", now, float(psutil.cpu_percent(None)), self._proc.memory_info().rss / 2**20,
                           psutil.virtual_memory().total / 2**20, "CPU utilization % / process memory MB")

    def close(self) -> None:
        if self._nvml is not None:
            try:
                self._nvml.nvmlShutdown()
            except Exception:
                pass
            self._nvml = None


def device_options() -> dict[str, dict[str, str | None]]:
    """For the settings UI: each device name -> {precision: None if it runs well, else why not}.

    A device this machine lacks maps every precision to the reason.
    """
    options: dict[str, dict[str, str | None]] = {"cpu": precision_support(torch.device("cpu"))}
    if torch.cuda.is_available():
        options["cuda"] = precision_support(torch.device("cuda"))
    else:
        why = "no CUDA GPU on this machine"
        options["cuda"] = {p: why for p in PRECISIONS}
    return options
