"""bench --peers: the model exported to ONNX runs on ONNX Runtime and OpenVINO and agrees with ours."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import random_model

from engine.bench import BenchSettings, bench_inputs, peer_verdicts, run_peers_bench
from engine.options import AGREEMENT
from engine.runtimes import make_runtime
from engine.runtimes.base import ab_difference
from engine.weights import save_weights

pytest.importorskip("onnxruntime")
pytest.importorskip("openvino")


@pytest.fixture(scope="module")
def model():
    return random_model(seed=3).eval()


def test_the_exported_model_agrees_with_the_baseline_on_both_peers(model, tmp_path):
    import torch

    from engine.peers import export_onnx, onnxruntime_peer, openvino_peer

    onnx_file = export_onnx(random_model(seed=3).eval(), tmp_path / "m.onnx", 64)
    L = bench_inputs(64, 2)
    reference = make_runtime("baseline", model, torch.device("cpu"), "fp32").run(L)
    for peer in (onnxruntime_peer(onnx_file, 1), openvino_peer(onnx_file, 1, "fp32", L.shape)):
        out = peer.run(L)
        assert out.shape == reference.shape, peer.label
        p999, most = ab_difference(out, reference)
        assert most <= AGREEMENT["fp32"].max_abs and p999 <= AGREEMENT["fp32"].p999, (peer.label, most)


def test_bench_peers_prints_a_row_for_each_runtime_with_its_agreement(model, tmp_path, capsys):
    weights = tmp_path / "w.pt"
    save_weights(model, weights)
    out = tmp_path / "peers.json"
    assert run_peers_bench(BenchSettings(size=64, batches=(1, 2), weights=weights, threads=1, rounds=2, warmup=1,
                                         json_path=out)) == 0
    text = capsys.readouterr().out
    assert "cpu: " in text  # which CPU it ran on
    doc = json.loads(out.read_text())
    names = {(r["runtime"].split(" ")[0], r["precision"], r["batch"]) for r in doc["rows"]}
    for batch in (1, 2):
        assert {("ONNX", "fp32", batch), ("OpenVINO", "fp32", batch), ("ours,", "fp32", batch),
                ("--engine", "fp32", batch)} <= names
    for r in doc["rows"]:
        assert np.isfinite(r["ms_per_image"]) and len(r["rounds_ms"]) == 2 and len(r["idle_rounds_ms"]) == 2
        if r["precision"] == "fp32":
            assert r["max_abs_diff"] <= AGREEMENT["fp32"].max_abs, r
    assert "the speed of OpenVINO's fastest (" in text and "the speed of OpenVINO's f32 (" in text
    # the engine the app offers at its fastest precision here (bf16 where native), against our fastest
    assert "--engine openvino (fp32) is" in text or "--engine openvino (bf16) is" in text


def test_the_verdict_is_a_ratio_of_speeds_fastest_against_fastest():
    from engine.bench import PeerRow

    rows = [PeerRow(name, precision, 1, ms, [], 0, 0) for name, precision, ms in (
        ("ours, optimized", "fp32", 60.0), ("ours, optimized", "bf16", 30.0),
        ("OpenVINO 2026.4", "fp32", 80.0), ("OpenVINO 2026.4", "bf16", 33.0))]
    assert peer_verdicts(rows) == [
        "batch 1: our fastest (bf16) is 1.10x the speed of OpenVINO's fastest (bf16, via ONNX)",
        "batch 1: our fp32 is 1.33x the speed of OpenVINO's f32 (via ONNX)"]


def test_our_own_conversion_onto_openvino_counts_as_openvino_where_it_is_the_faster_route():
    from engine.bench import PeerRow
    from engine.bench.peers import ENGINE_ROW

    rows = [PeerRow(name, precision, 1, ms, [], 0, 0) for name, precision, ms in (
        ("ours, optimized", "fp32", 60.0), ("OpenVINO 2026.4", "fp32", 80.0), (ENGINE_ROW, "fp32", 50.0))]
    assert peer_verdicts(rows) == [
        "batch 1: our fastest (fp32) is 0.83x the speed of OpenVINO's fastest (fp32, as --engine openvino)",
        "batch 1: --engine openvino (fp32) is 1.20x the speed of our fastest",
        "batch 1: our fp32 is 0.83x the speed of OpenVINO's f32 (as --engine openvino)"]


def test_the_cpu_line_says_when_onednn_is_held_to_a_narrower_isa(monkeypatch):
    """A run with ONEDNN_MAX_CPU_ISA (an AVX2-only CPU imitated on a wider one) must not read as the wider CPU."""
    from engine.bench.hardware import cpu_info

    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    line = cpu_info().line()
    assert "oneDNN held to AVX2" in line and "AVX512-BF16" not in line and "AMX" not in line
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX512_CORE")
    assert "AVX512-BF16" not in cpu_info().line() and "AMX" not in cpu_info().line()
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA")
    assert "held to" not in cpu_info().line()


def test_the_cpu_line_says_whether_native_bf16_is_faster_here_and_so_which_precision_auto_takes():
    from engine.bench.hardware import CpuInfo

    zen4 = CpuInfo("AMD EPYC (family 25, model 17)", "AVX512", False, True, True, bf16_speedup=2.1)
    hidden_amx = CpuInfo("Intel(R) Xeon(R) Processor (family 6, model 207)", "AVX512", False, True, True,
                         bf16_speedup=0.55)
    assert "bf16 native, 2.10x fp32's speed on a probe: auto takes bf16" in zen4.line()
    assert "bf16 native, 0.55x fp32's speed on a probe: auto takes fp32" in hidden_amx.line()
    amx = CpuInfo("Intel(R) Xeon(R) Platinum (family 6, model 143)", "AVX512", True, True, True,
                  bf16_speedup=float("inf"))
    assert "bf16 native, AMX: auto takes bf16" in amx.line()
    assert "bf16 emulated (not offered)" in CpuInfo("AMD EPYC (family 25, model 1)", "AVX2", False, False, False).line()


def test_the_cpu_name_carries_family_and_model_since_a_hypervisor_may_say_only_amd_epyc():
    """Zen 3 (AVX2 only) and Zen 4 (AVX-512 BF16) both read "AMD EPYC" under KVM: bench files must tell them apart."""
    from engine.bench.hardware import cpu_name

    zen3 = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\nmodel name\t: AMD EPYC\n"
    second = "\nprocessor\t: 1\ncpu family\t: 99\nmodel\t\t: 7\nmodel name\t: Other\n"
    assert cpu_name(zen3 + second) == "AMD EPYC (family 25, model 1)"
    assert cpu_name("model name\t: Some CPU\n") == "Some CPU"


def test_the_verdict_pairs_the_rounds_so_a_slow_spell_of_the_machine_cancels_out():
    from engine.bench import PeerRow

    slow = [1.0, 1.0, 3.0, 1.0, 1.0, 3.0, 1.0]  # the machine slowed in rounds 3 and 6, for both runtimes
    ours = PeerRow("ours, optimized", "fp32", 1, 50.0, [50.0 * f for f in slow], 0, 0)
    vino = PeerRow("OpenVINO 2026.4", "fp32", 1, 55.0, [55.0 * f for f in slow], 0, 0)
    line = peer_verdicts([ours, vino])[0]
    assert line.endswith("paired by round 1.10x (90% interval 1.10-1.10)")
    few = PeerRow("ours, optimized", "fp32", 1, 50.0, [50.0] * 3, 0, 0)
    assert "paired" not in peer_verdicts([few, PeerRow("OpenVINO 2026.4", "fp32", 1, 55.0, [55.0] * 3, 0, 0)])[0]


def test_the_first_call_after_a_pause_is_reported_beside_the_back_to_back_figure_not_in_place_of_it():
    """After the bench's pause a runtime's own threads sleep (PyTorch's OpenMP worker took ~6 ms to wake on a
    virtual machine): the verdict is the back-to-back call's; the first call's latency gets a line of its own.
    """
    from engine.bench import PeerRow
    from engine.bench.peers import peer_table

    ours = PeerRow("ours, optimized", "bf16", 1, 5.0, [5.0] * 6, 0, 0, [15.0, 5.5, 15.0, 15.0, 5.5, 15.0])
    vino = PeerRow("OpenVINO 2026.4", "bf16", 1, 7.0, [7.0] * 6, 0, 0, [7.5] * 6)
    lines = peer_verdicts([ours, vino])
    assert lines[0].startswith("batch 1: our fastest (bf16) is 1.40x the speed of OpenVINO's fastest")
    assert lines[1].startswith("batch 1: after a 0.25 s pause") and "15.0 and 7.5 ms, 0.50x" in lines[1]
    assert "paired by round 0.50x" in lines[1]
    assert "| 5.0 | 1.00 | 15.0 |" in peer_table([ours, vino])[2]
