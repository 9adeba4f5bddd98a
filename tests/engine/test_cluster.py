"""Colorizing on Ray: the same outputs and messages as a local run, resume, and faults survived.

A local Ray instance of 2 CPUs serves most tests (started once: startup is slow on small machines);
the last test builds a two-node ``ray.cluster_utils.Cluster`` and removes a node mid-run.
"""

import os
import re
import threading
from pathlib import Path

import cv2
import numpy as np
import pytest
from helpers import random_model, write_grey

ray = pytest.importorskip("ray")

from engine.batch import cluster  # noqa: E402
from engine.batch.cluster import as_uri, run_on_ray, size_pool  # noqa: E402
from engine.batch.inputs import collect_inputs  # noqa: E402
from engine.batch.pipeline import BatchPipeline  # noqa: E402
from engine.cli import main  # noqa: E402
from engine.colorizer import Colorizer  # noqa: E402
from engine.options import ColorizeSettings, ExportOptions  # noqa: E402
from engine.weights import save_weights  # noqa: E402

pytestmark = [pytest.mark.timeout(240),
              # Ray's own deprecations (of its settings, read when a dataset starts): not ours to fix.
              pytest.mark.filterwarnings("ignore::DeprecationWarning:ray")]


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    path = tmp_path_factory.mktemp("w") / "model.pt"
    save_weights(random_model(), path)
    return path


@pytest.fixture(scope="module")
def _ray_instance():
    yield
    ray.shutdown()


@pytest.fixture
def local_ray(_ray_instance):
    """A local Ray instance of 2 CPUs, started on first use and kept for the module."""
    if not ray.is_initialized():
        ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="WARNING", log_to_driver=False)


def settings(weights, **kw):
    return ColorizeSettings(device="cpu", precision="fp32", size=64, batch_size=2, weights=weights, **kw)


def make_photos(root: Path, n: int = 6) -> Path:
    src = root / "in"
    for i in range(n):
        sub = "sub/" if i % 3 == 2 else ""
        write_grey(src / f"{sub}p{i:02d}{'.jpg' if i % 4 == 1 else '.png'}", 64 + 9 * i, 128 - 7 * i, i)
    return src


def outputs(folder: Path) -> dict[str, Path]:
    return {p.relative_to(folder).as_posix(): p for p in folder.rglob("*") if p.is_file()}


def assert_same_images(a: Path, b: Path, tolerance: int = 2) -> None:
    x, y = cv2.imread(str(a), cv2.IMREAD_UNCHANGED), cv2.imread(str(b), cv2.IMREAD_UNCHANGED)
    assert x is not None and y is not None and x.shape == y.shape, (a, b)
    assert int(np.abs(x.astype(np.int16) - y.astype(np.int16)).max()) <= tolerance, (a, b)


def test_pool_never_asks_for_every_cpu():
    two = size_pool(2, 0)
    assert (two.actors, two.actor_cpus, two.threads) == (1, 1.0, 1)  # 2 actors on 2 CPUs: deadlock
    one = size_pool(1, 0)
    assert one.actors == 1 and one.actor_cpus < 1 and one.tasks >= 1
    for cpus in (2, 3, 4, 16, 64):
        s = size_pool(cpus, 0)
        assert s.actors * s.actor_cpus < cpus and s.tasks >= 1 and s.threads == 1
    gpu = size_pool(16, 4)
    assert (gpu.actors, gpu.actor_gpus) == (4, 1.0) and gpu.actors * gpu.actor_cpus < 16


def test_gpu_actors_get_their_nodes_cpus_per_gpu_as_threads():
    assert size_pool(64, 8, cpus_per_gpu=8.0).threads == 8
    assert size_pool(64, 8, cpus_per_gpu=0.5).threads == 1
    assert size_pool(64, 0, cpus_per_gpu=8.0).threads == 1  # CPU actors stay single-threaded


def test_uris_collapsed_by_path_are_restored():
    assert as_uri(Path("s3://bucket/scans")) == "s3://bucket/scans"
    assert as_uri(Path("file:///data/in")) == "file:///data/in"
    assert as_uri(Path("/data/in")) == "/data/in"


def test_outputs_match_a_local_run_within_two_grey_levels(local_ray, weights, tmp_path):
    src = make_photos(tmp_path)
    run = run_on_ray([src], settings(weights), ExportOptions(tmp_path / "ray"), "local")
    assert (run.summary.done, run.summary.failed) == (6, 0)
    jobs, _ = collect_inputs([src])
    local = BatchPipeline(Colorizer.create(settings(weights)), ExportOptions(tmp_path / "local")).run(jobs)
    assert local.done == 6
    mine, theirs = outputs(tmp_path / "ray"), outputs(tmp_path / "local")
    assert sorted(mine) == sorted(theirs) and "sub/p02.png" in mine
    for name in mine:
        assert_same_images(mine[name], theirs[name])
    assert re.search(r"6 photos in .* photos/s\), model busy \d+%, on 1 node, 2 CPUs, 0 GPUs, 1 actor", run.line())


def test_file_uris_read_and_write_through_the_storage_layer(local_ray, weights, tmp_path):
    src = make_photos(tmp_path, 3)
    run_on_ray([src], settings(weights), ExportOptions(tmp_path / "plain"), "local")
    run = run_on_ray([f"file://{src}"], settings(weights), ExportOptions(Path(f"file://{tmp_path}/uri")), "local")
    assert run.summary.done == 3
    plain, uri = outputs(tmp_path / "plain"), outputs(tmp_path / "uri")
    assert sorted(plain) == sorted(uri)
    for name in plain:
        assert_same_images(plain[name], uri[name], tolerance=0)


def test_bad_inputs_get_the_local_reasons_and_exit_status_1(local_ray, weights, tmp_path, capsys):
    src = make_photos(tmp_path, 2)
    (src / "empty.jpg").write_bytes(b"")
    (src / "notes.jpg").write_text("not a photo at all")
    jobs, _ = collect_inputs([src])
    local = BatchPipeline(Colorizer.create(settings(weights)), ExportOptions(tmp_path / "local")).run(jobs)
    reasons = {r.source.name: r.message for r in local.results if r.status == "failed"}
    assert set(reasons) == {"empty.jpg", "notes.jpg"}
    status = main(["colorize", str(src), "--output", str(tmp_path / "out"), "--ray", "local", "--weights",
                   str(weights), "--size", "64", "--precision", "fp32", "--device", "cpu"])
    captured = capsys.readouterr()
    assert status == 1
    for name, reason in reasons.items():
        assert f"{src / name}: {reason}" in captured.err.splitlines()
    assert "Traceback" not in captured.err
    assert re.search(r"^2 photos in .*, 2 failed, on 1 node, 2 CPUs, 0 GPUs, 1 actor", captured.out, re.M)
    assert sorted(outputs(tmp_path / "out")) == ["p00.png", "p01.jpg"]


def test_auto_colours_each_folder_with_its_own_model_on_the_cluster_as_locally(local_ray, tmp_path, capsys):
    from helpers import SAMPLES, old_scan

    from engine.imageio import decode
    from engine.training.print_gate import grey_copy

    for folder, make in (("old", lambda rgb, i: old_scan(rgb, i)[..., ::-1]), ("clean", lambda rgb, i: grey_copy(rgb))):
        (tmp_path / folder).mkdir()
        for i, sample in enumerate(SAMPLES[:3]):
            cv2.imwrite(str(tmp_path / folder / f"{folder}{i}.png"), make(decode(sample).pixels, i))
    common = [str(tmp_path / "old"), str(tmp_path / "clean"), "--size", "64", "--precision", "fp32", "--device", "cpu",
              "--batch-size", "4"]  # a batch holds photos of both folders
    assert main(["colorize", *common, "--output", str(tmp_path / "local")]) == 0
    assert main(["colorize", *common, "--output", str(tmp_path / "ray"), "--ray", "local"]) == 0
    out = capsys.readouterr().out
    assert out.count("model auto, chosen folder by folder by the photos' look") == 2  # said the same both ways
    mine, local = outputs(tmp_path / "ray"), outputs(tmp_path / "local")
    assert sorted(mine) == sorted(local) and len(mine) == 6
    for name in mine:
        assert_same_images(mine[name], local[name])  # each photo from its folder's model, as locally
    assert main(["colorize", *common, "--output", str(tmp_path / "shipped"), "--model", "shipped"]) == 0
    shipped = outputs(tmp_path / "shipped")
    assert any(np.abs(cv2.imread(str(mine[n])).astype(int) - cv2.imread(str(shipped[n])).astype(int)).max() > 2
               for n in mine if n.startswith("old"))  # the old folder's model is not the shipped one


def test_colour_hints_travel_with_their_photos_to_the_cluster(local_ray, tmp_path, capsys):
    import json

    import torch

    from engine.model import with_hint_channels

    hinted = with_hint_channels(random_model(), 3)
    with torch.no_grad():  # hint inputs that matter: their stem weights drawn large
        hinted.encoder._conv_stem.weight[:, 1:].normal_(0, 2.0, generator=torch.Generator().manual_seed(1))
    weights = tmp_path / "hinted.pt"
    save_weights(hinted.eval(), weights)
    src = make_photos(tmp_path, 3)
    hints = tmp_path / "hints.json"
    hints.write_text(json.dumps({"version": 1, "photos": {"p00.png": [{"x": 0.5, "y": 0.5, "rgb": [220, 30, 30]}],
                                                           "gone.png": [{"x": 0.1, "y": 0.1, "rgb": [0, 0, 200]}]}}))
    common = ["--weights", str(weights), "--size", "64", "--precision", "fp32", "--device", "cpu", "--batch-size", "2"]
    assert main(["colorize", str(src), "--output", str(tmp_path / "local"), "--hints", str(hints), *common]) == 0
    capsys.readouterr()
    assert main(["colorize", str(src), "--output", str(tmp_path / "ray"), "--hints", str(hints), "--ray", "local",
                 *common]) == 0
    err = capsys.readouterr().err
    assert "'gone.png' names no input" in err  # the same warning as a local run
    assert main(["colorize", str(src), "--output", str(tmp_path / "plain"), "--ray", "local", *common]) == 0
    mine, local, plain = (outputs(tmp_path / d) for d in ("ray", "local", "plain"))
    assert sorted(mine) == sorted(local) == sorted(plain)
    for name in mine:
        assert_same_images(mine[name], local[name])  # hinted on the cluster as in a local run
    hinted_photo, plain_photo = (cv2.imread(str(d["p00.png"])) for d in (mine, plain))
    assert not np.array_equal(hinted_photo, plain_photo)  # the hint reached the actor's model
    assert_same_images(mine["p01.jpg"], plain["p01.jpg"], tolerance=0)  # the other photos have none


def test_hints_on_the_cluster_with_weights_that_take_none_exit_2(local_ray, weights, tmp_path, capsys):
    src = make_photos(tmp_path, 1)
    hints = tmp_path / "hints.json"
    hints.write_text('{"version": 1, "photos": {}}')
    with pytest.raises(SystemExit) as exit_:
        main(["colorize", str(src), "--output", str(tmp_path / "out"), "--hints", str(hints), "--ray", "local",
              "--weights", str(weights), "--size", "64", "--device", "cpu"])
    assert exit_.value.code == 2 and "take no colour hints" in capsys.readouterr().err


def test_skip_existing_resumes_without_rewriting_and_a_plain_rerun_counts_its_new_names(local_ray, weights, tmp_path):
    src = make_photos(tmp_path, 4)
    out = tmp_path / "out"
    run_on_ray([src], settings(weights), ExportOptions(out), "local")
    first = outputs(out)
    first["p00.png"].unlink()  # as if the run had been stopped before this one
    before = {n: (p.stat().st_ino, p.stat().st_mtime_ns) for n, p in outputs(out).items()}
    run = run_on_ray([src], settings(weights), ExportOptions(out, if_exists="skip"), "local")
    assert (run.summary.done, run.summary.skipped) == (1, 3)
    after = outputs(out)
    assert sorted(after) == sorted(first)
    assert {n: (p.stat().st_ino, p.stat().st_mtime_ns) for n, p in after.items() if n != "p00.png"} == before
    again = run_on_ray([src], settings(weights), ExportOptions(out), "local")  # new names, counted as a local run's
    assert (run.summary.renamed, again.summary.done, again.summary.renamed) == (0, 4, 4)


def test_an_old_output_a_round_never_replaced_is_not_reported_done(local_ray, weights, tmp_path, monkeypatch):
    src = make_photos(tmp_path, 1)
    old = tmp_path / "out" / "p00.png"
    old.parent.mkdir()
    old.write_bytes(b"an earlier run's output")
    real_round, rounds = cluster.Rounds.one_round, []

    def ends_early_the_first_time(*args, **kwargs):
        rounds.append(1)
        if len(rounds) == 1:
            raise RuntimeError("the round ended early")  # before any write: the old output is still there
        real_round(*args, **kwargs)

    monkeypatch.setattr(cluster.Rounds, "one_round", ends_early_the_first_time)
    export = ExportOptions(tmp_path / "out", if_exists="overwrite")
    run = run_on_ray([src], settings(weights), export, "local", max_rounds=1)
    assert (run.summary.done, run.summary.failed) == (0, 1)
    assert run.summary.results[0].message.startswith("not colorized after 1 rounds on the cluster")
    assert old.read_bytes() == b"an earlier run's output"
    rounds.clear()
    run = run_on_ray([src], settings(weights), export, "local", max_rounds=2)
    assert (run.summary.done, run.rounds) == (1, 2)
    assert cv2.imread(str(old)) is not None  # replaced by this run's output


def test_out_of_memory_is_survived_in_the_actor_and_noted_on_each_photo(local_ray, weights, tmp_path):
    src = make_photos(tmp_path, 2)
    marker = tmp_path / "short-of-memory"
    marker.touch()

    def batches_run_out_of_memory(_source: str) -> None:
        from engine.colorizer import Colorizer as InActor

        if getattr(InActor.infer, "patched", False):
            return
        real = InActor.infer

        def infer(self, batch, *args, **kwargs):
            if batch.shape[0] > 1 and marker.exists():  # later tests in a reused process: no effect
                raise MemoryError("out of memory")
            return real(self, batch, *args, **kwargs)

        infer.patched = True  # type: ignore[attr-defined]
        InActor.infer = infer  # type: ignore[method-assign, assignment]

    from engine.options import PhotoResult

    seen: list[PhotoResult] = []
    run = run_on_ray([src], settings(weights), ExportOptions(tmp_path / "out"), "local", seen.append,
                     hook=batches_run_out_of_memory)
    marker.unlink()
    assert (run.summary.done, run.summary.failed) == (2, 0)
    assert [r.message for r in seen] == ["out of memory on the CPU: colorized alone"] * 2
    assert sorted(outputs(tmp_path / "out")) == ["p00.png", "p01.jpg"]


def test_a_worker_killed_mid_run_still_writes_every_photo_once(local_ray, weights, tmp_path):
    src = make_photos(tmp_path, 8)
    marker = tmp_path / "killed"

    def kill_once(source: str) -> None:
        if source.endswith("p04.png") and not marker.exists():
            marker.touch()
            os._exit(1)  # the actor's process dies mid-batch, as a crashed worker would

    run = run_on_ray([src], settings(weights), ExportOptions(tmp_path / "out"), "local", hook=kill_once)
    assert marker.exists()
    assert (run.summary.done, run.summary.failed) == (8, 0)
    names = sorted(outputs(tmp_path / "out"))
    assert len(names) == 8 and not any("(" in n or n.startswith(".") for n in names)
    assert sorted(r.index for r in run.summary.results) == list(range(8))


def test_a_photo_that_kills_every_worker_fails_alone_and_the_run_ends(local_ray, weights, tmp_path):
    src = make_photos(tmp_path, 4)

    def always_dies_on_p01(source: str) -> None:
        if source.endswith("p01.jpg"):
            os._exit(1)

    run = run_on_ray([src], settings(weights), ExportOptions(tmp_path / "out"), "local", hook=always_dies_on_p01,
                     max_rounds=2)
    failed = [r for r in run.summary.results if r.status == "failed"]
    assert (run.summary.done, [r.source.name for r in failed]) == (3, ["p01.jpg"])
    assert failed[0].message.startswith("not colorized after 2 rounds on the cluster")
    assert sorted(outputs(tmp_path / "out")) == ["p00.png", "p03.png", "sub/p02.png"]


def test_removing_a_node_mid_run_still_completes_every_photo(weights, tmp_path):
    from ray.cluster_utils import Cluster

    ray.shutdown()  # this test brings its own cluster
    src = make_photos(tmp_path, 12)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2})
    node = cluster.add_node(num_cpus=2)
    removed = threading.Event()
    try:
        ray.init(address=cluster.address, logging_level="WARNING", log_to_driver=False)

        def remove_after_the_first(_result) -> None:
            if not removed.is_set():
                removed.set()
                cluster.remove_node(node)

        def slow(_source: str) -> None:
            import time

            time.sleep(0.2)  # so that the node goes while photos are still in flight

        run = run_on_ray([src], settings(weights), ExportOptions(tmp_path / "out"), "auto",
                         remove_after_the_first, hook=slow)
    finally:
        ray.shutdown()
        cluster.shutdown()
    assert removed.is_set()
    assert (run.summary.done, run.summary.failed) == (12, 0)
    assert run.shape.nodes == 1 and run.shape.cpus == 2
    names = sorted(outputs(tmp_path / "out"))
    assert len(names) == 12 and not any("(" in n or n.startswith(".") for n in names), names


def test_a_local_run_starts_its_own_ray_even_where_another_cluster_is_named(tmp_path):
    """``--cluster local`` must not join the last cluster started on this machine (RAY_ADDRESS, or Ray's
    /tmp/ray/ray_current_cluster, which outlives a cluster that died) and then fail on num_cpus.
    """
    import subprocess
    import sys

    probe = ("from engine.batch.cluster.connection import connect\nconnect('local')\nimport ray\n"
             "print('cpus', ray.cluster_resources().get('CPU'))\nray.shutdown()\n")
    env = {**os.environ, "RAY_ADDRESS": "127.0.0.1:1", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert re.search(r"^cpus [1-9]", out.stdout, re.M)
