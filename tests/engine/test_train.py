"""The training command: runs, checkpoints, resumes, is deterministic, fine-tunes, writes a card."""

import json

import cv2
import pytest
import torch
from helpers import colour_photo

from engine.training.train import TrainSettings, train
from engine.training.tuning import PULLS
from engine.weights import load_model, weights_meta


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    folder = tmp_path_factory.mktemp("photos")
    for i in range(8):
        cv2.imwrite(str(folder / f"p{i}.jpg"), cv2.cvtColor(colour_photo(90 + 7 * i, 120, i), cv2.COLOR_RGB2BGR))
    grey = colour_photo(80, 80, 99).mean(axis=2).astype("uint8")
    cv2.imwrite(str(folder / "grey.png"), grey)  # nearly grey photos are skipped
    return folder


def tiny(photos, tmp, **kw):
    base = dict(data=photos, out=tmp / "w.pt", work=tmp / "work", steps=4, batch=2, size=64, freeze_steps=2,
                val_every=2, seed=3, threads=1)
    base.update(kw)
    return TrainSettings(**base)


def test_training_writes_loadable_weights_and_a_model_card(photos, tmp_path):
    card = train(tiny(photos, tmp_path))
    data = card["data"]
    assert card["steps"] == 4 and data["train_photos"] + data["tuning_photos"] + data["validation_photos"] == 8
    model = load_model(tmp_path / "w.pt")
    assert model.config.num_bins == card["bins"] > 1
    assert json.loads(weights_meta(tmp_path / "w.pt")["card"])["steps"] == 4
    assert (tmp_path / "w.json").exists() and "steps of batch" in (tmp_path / "w.md").read_text()
    # No tuning photos asked for: the read-out is set on training photos, the last step is shipped.
    assert card["readout"]["chosen_on"] == "training photos" and data["tuning_photos"] == 0
    assert card["selected_step"] == 4 and model.readout.chroma_gain == card["readout"]["chroma_gain"] >= 1.0


def test_same_seed_gives_the_same_model(photos, tmp_path):
    train(tiny(photos, tmp_path / "a"))
    train(tiny(photos, tmp_path / "b"))
    a = load_model(tmp_path / "a" / "w.pt").state_dict()
    b = load_model(tmp_path / "b" / "w.pt").state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_resume_continues_from_the_checkpoint(photos, tmp_path):
    train(tiny(photos, tmp_path, steps=2, ema_decay=0.9))
    card = train(tiny(photos, tmp_path, steps=4, resume=True, ema_decay=0.9))
    assert card["steps"] == 4
    assert [h["step"] for h in card["history"]] == [2, 4]  # the first run's history was kept
    ck = torch.load(tmp_path / "work" / "checkpoint.pt", weights_only=True)
    assert ck["average_updates"] == 4  # the weight average carried on across the resume


def test_time_budget_stops_early_and_still_saves(photos, tmp_path):
    card = train(tiny(photos, tmp_path, steps=10_000, max_minutes=0.0))
    assert card["stopped_by_time_budget"] and card["steps"] < 10_000
    assert (tmp_path / "w.pt").exists()


def test_fine_tuning_starts_from_given_weights(photos, tmp_path):
    train(tiny(photos, tmp_path / "first"))
    base = load_model(tmp_path / "first" / "w.pt")
    card = train(tiny(photos, tmp_path / "ft", init=tmp_path / "first" / "w.pt", steps=1))
    assert card["started_from"]["steps"] == 4  # the card keeps the lineage
    assert "2. 1 steps" in (tmp_path / "ft" / "w.md").read_text()
    tuned = load_model(tmp_path / "ft" / "w.pt")
    assert torch.equal(base.bins, tuned.bins)
    # One small step moves the weights a little, not back to a fresh start.
    w0, w1 = base.dec2.conv1[0].weight, tuned.dec2.conv1[0].weight
    assert not torch.equal(w0, w1)
    assert (w0 - w1).abs().max() < 0.05


def test_split_by_name_is_fixed_and_tuning_photos_are_never_validation_photos():
    from engine.training.dataset import is_validation, split_of

    names = [f"folder/photo_{i}.jpg" for i in range(2000)]
    splits = [split_of(n, tune_fraction=0.1) for n in names]
    assert splits == [split_of(n, tune_fraction=0.1) for n in names]
    assert all((s == "validation") == is_validation(n) for n, s in zip(names, splits, strict=True))
    share = {k: splits.count(k) / len(names) for k in ("validation", "tuning", "train")}
    assert 0.07 < share["validation"] < 0.13 and 0.07 < share["tuning"] < 0.13
    # Without a tuning share the validation photos stay the same and the rest train.
    assert [split_of(n) == "validation" for n in names] == [s == "validation" for s in splits]
    assert {split_of(n) for n in names} == {"validation", "train"}


def test_weight_average_follows_the_weights_slowly():
    from helpers import random_model

    from engine.training.average import WeightAverage

    model = random_model()
    avg = WeightAverage(model, decay=0.9)
    w = model.dec2.conv1[0].weight
    start = w.detach().clone()
    with torch.no_grad():
        w.add_(1.0)
    for _ in range(200):
        avg.update(model)
    assert torch.allclose(avg.averaged(model).dec2.conv1[0].weight, w, atol=1e-4)  # converged to a fixed model
    with torch.no_grad():
        w.copy_(start)
    avg.update(model)
    moved = avg.averaged(model).dec2.conv1[0].weight
    assert torch.allclose(moved, start + 0.9, atol=1e-4)  # one step moves it a tenth of the way
    assert not avg.averaged(model).training


def test_readout_is_chosen_on_held_out_photos_and_keeps_the_colour_target(photos, tmp_path):
    card = train(tiny(photos, tmp_path, tune_fraction=0.3, colour_target=0.5, ema_decay=0.9, gamma_jitter=0.2,
                      crop_min=0.25))
    assert card["data"]["tuning_photos"] > 0
    assert not set(card["data"]["tuning_names"]) & set(card["data"]["validation_names"])
    r = card["readout"]
    assert r["chosen_on"] == "tuning photos"
    rows = card["readout_search"]
    vivid = [x for x in rows if x["colourfulness_ratio"] >= 0.5]
    if vivid:
        assert r["colourfulness_ratio"] >= 0.5
        assert r["psnr"] == max(x["psnr"] for x in vivid)
    else:
        assert r["colourfulness_ratio"] == max(x["colourfulness_ratio"] for x in rows)
    # The shipped snapshot is the one that scored best on the tuning photos (never the validation ones).
    scores = {h["step"]: h["tuning_gain_db"] for h in card["history"]}
    assert card["selected_step"] == max(scores, key=lambda k: scores[k])
    model = load_model(tmp_path / "w.pt")
    assert (model.readout.temperature, model.readout.chroma_gain) == (r["temperature"], r["chroma_gain"])
    assert model.readout.doubt_pull == r["doubt_pull"] and {x["doubt_pull"] for x in rows} == set(PULLS)
    assert "tuning photos" in (tmp_path / "w.md").read_text()


def test_gamma_jitter_is_off_unless_asked_and_leaves_the_batches_as_they_were():
    import numpy as np
    from helpers import colour_photo

    from engine.training.dataset import PhotoSet, make_batch

    photos = PhotoSet(["a"], [colour_photo(80, 90, 1)])
    plain = make_batch(photos, 3, 32, np.random.default_rng(5))
    again = make_batch(photos, 3, 32, np.random.default_rng(5), crop_min=0.3, gamma=0.0)
    jittered = make_batch(photos, 3, 32, np.random.default_rng(5), gamma=0.2)
    assert np.array_equal(plain[0], again[0]) and np.array_equal(plain[1], again[1])
    # The first crop is drawn before any jitter: same colours, only its L differs.
    assert np.array_equal(plain[1][0], jittered[1][0]) and not np.array_equal(plain[0][0], jittered[0][0])


@pytest.mark.parametrize("native, speedup", [(True, 2.0), (True, 0.7), (True, 1.1), (False, None)])
def test_bf16_autocast_is_used_only_where_the_cpu_runs_bf16_natively_and_faster(monkeypatch, native, speedup):
    """The same on every CPU kind: the choice follows ``cpu_has_fast_bf16`` and the probe, and the card gets the
    reason (a Xeon whose AMX is hidden runs native bf16 slower than fp32).
    """
    import engine.devices as devices
    import engine.training.train as train_mod

    monkeypatch.delenv(devices.BF16_ENV, raising=False)
    for module in (devices, train_mod):  # the probe's figure, as the devices module reads it and the trainer
        monkeypatch.setattr(module, "cpu_has_fast_bf16", lambda: native)
        monkeypatch.setattr(module, "cpu_bf16_speedup", lambda: speedup)
    used, why = train_mod.resolve_autocast("bf16")
    assert used is (speedup == 2.0)
    assert ("native bf16" in why) and (why.startswith("fp32") is not used)
    assert ("only 0.70x as fast as fp32" in why) is (speedup == 0.7)
    assert ("only 1.10x as fast as fp32" in why) is (speedup == 1.1)
    assert train_mod.resolve_autocast("none") == (False, "fp32 (no autocast asked for)")
    with pytest.raises(ValueError):
        train_mod.resolve_autocast("fp8")


def test_a_teachers_clean_crops_come_beside_the_batch_and_leave_its_crops_as_they_were():
    import numpy as np
    from helpers import colour_photo

    from engine.training.dataset import PhotoSet, make_batch

    photos = PhotoSet(["a"], [colour_photo(80, 90, 1)])
    plain = make_batch(photos, 3, 32, np.random.default_rng(5), degrade_share=1.0,
                       degrade_rng=np.random.default_rng(6))
    clean = np.full((3, 1, 32, 32), np.nan, np.float32)
    taught = make_batch(photos, 3, 32, np.random.default_rng(5), degrade_share=1.0,
                        degrade_rng=np.random.default_rng(6), clean_L=clean)
    assert np.array_equal(plain[0], taught[0]) and np.array_equal(plain[1], taught[1])
    assert np.isfinite(clean).all() and not np.allclose(clean, taught[0], atol=1.0)  # the scans differ from it
    # Neither degraded nor jittered: without either, the clean L is the network's input itself.
    same = np.empty_like(clean)
    L, _ = make_batch(photos, 3, 32, np.random.default_rng(5), augment=False, clean_L=same)
    assert np.array_equal(same, L)


def test_a_student_that_is_its_teacher_has_nothing_to_learn_until_it_sees_a_scan():
    import copy

    import numpy as np
    from helpers import random_model

    from engine.training.loop import distill_losses

    teacher = random_model(seed=4).eval()
    student = copy.deepcopy(teacher).eval()
    rng = np.random.default_rng(0)
    clean = torch.from_numpy(rng.uniform(0, 100, (2, 1, 64, 64)).astype(np.float32))
    loss, parts = distill_losses(student, teacher, clean, clean, reg_weight=10.0)
    assert parts["kl"] < 1e-5 and parts["reg"] < 1e-6
    scan = torch.clamp(clean * 0.6 + 25 + torch.from_numpy(rng.normal(0, 8, clean.shape).astype(np.float32)), 0, 100)
    loss, parts = distill_losses(student, teacher, scan, clean, reg_weight=10.0)
    assert parts["kl"] > 0 and parts["reg"] > 1e-4 and loss.requires_grad  # (an untrained model's logits are flat)


def test_training_with_a_teacher_ships_its_read_out_and_learns_from_scans(photos, tmp_path):
    from dataclasses import replace

    from engine.weights import save_weights

    train(tiny(photos, tmp_path / "first"))
    teacher = load_model(tmp_path / "first" / "w.pt")
    teacher.readout = replace(teacher.readout, temperature=0.61, doubt_pull=4.0, chroma_gain=1.3)
    save_weights(teacher, tmp_path / "teacher.pt")
    card = train(tiny(photos, tmp_path / "student", init=tmp_path / "teacher.pt", teacher=tmp_path / "teacher.pt",
                      degrade_share=0.5, keep_norm_stats=True, steps=4, val_every=1, freeze_steps=0,
                      tune_fraction=0.5))
    student = load_model(tmp_path / "student" / "w.pt")
    assert card["readout"]["chosen_on"] == "the teacher's, kept" and card["readout_search"] == []
    assert replace(student.readout, chroma_gain=1.3) == teacher.readout  # all but the gain is the teacher's
    assert student.readout.chroma_gain == card["readout"]["chroma_gain"]
    assert card["data"]["tuning_photos"] > 0 and card["readout"]["fitted_on"] == "tuning photos"
    assert card["selected_step"] == 4 and card["weights"] == "the weights at the last step"
    assert "the chroma gain was fitted on them" in (tmp_path / "student" / "w.md").read_text()
    assert not any("tuning_gain_db" in row for row in card["history"])  # no snapshot is chosen on the tuning photos
    assert "the teacher's" in (tmp_path / "student" / "w.md").read_text()
    assert not torch.equal(student.dec2.conv1[0].weight, teacher.dec2.conv1[0].weight)  # it learned something
    assert "kl" in card["history"][-1]  # the distillation's loss, not the true colours'


def test_a_decoder_at_rate_zero_stays_its_start_while_the_encoder_learns(photos, tmp_path):
    train(tiny(photos, tmp_path / "first"))
    start = load_model(tmp_path / "first" / "w.pt")
    train(tiny(photos, tmp_path / "enc", init=tmp_path / "first" / "w.pt", teacher=tmp_path / "first" / "w.pt",
               degrade_share=0.5, steps=3, freeze_steps=0, first_trained_block=0, decoder_lr_scale=0.0))
    after = load_model(tmp_path / "enc" / "w.pt")
    before, now = start.state_dict(), after.state_dict()  # the norm statistics too
    decoder = [n for n in before if not n.startswith("encoder.")]
    assert any(n.endswith("running_mean") for n in decoder)
    assert all(torch.equal(before[n], now[n]) for n in decoder)  # decoder, head, refinement
    assert any(not torch.equal(before[n], now[n]) for n in before if n.startswith("encoder."))


def test_a_resume_learns_at_the_rates_it_is_given_now(photos, tmp_path):
    first = tiny(photos, tmp_path / "run", steps=2, freeze_steps=0, first_trained_block=0)
    train(first)
    start = load_model(tmp_path / "run" / "w.pt")
    from dataclasses import replace

    train(replace(first, steps=4, resume=True, decoder_lr_scale=0.0, keep_norm_stats=True))
    after = load_model(tmp_path / "run" / "w.pt")
    assert all(torch.equal(start.state_dict()[n], after.state_dict()[n]) for n in start.state_dict()
               if n.startswith("head."))


def test_the_fitted_gain_gives_a_student_its_teachers_colourfulness(photos, tmp_path):
    from dataclasses import replace

    from engine.training.dataset import fixed_batch, load_photos
    from engine.training.tuning import matching_gain, quality

    train(tiny(photos, tmp_path / "first"))
    teacher = load_model(tmp_path / "first" / "w.pt")
    teacher.readout = replace(teacher.readout, chroma_gain=1.3)
    student = load_model(tmp_path / "first" / "w.pt")  # the same network at another gain: 1.3 must come back
    student.readout = replace(student.readout, chroma_gain=1.0)
    L, ab = fixed_batch(load_photos(photos, None), 64)
    fit = matching_gain(student, teacher, L, ab)
    assert fit["chroma_gain"] == pytest.approx(1.3, abs=0.01)
    assert fit["colourfulness_ratio"] == pytest.approx(quality(teacher, L, ab)["colourfulness_ratio"], rel=0.01)


def test_a_teacher_that_reads_other_inputs_is_refused(photos, tmp_path):
    from engine.model import with_hint_channels
    from engine.training.train import load_teacher
    from engine.weights import save_weights

    train(tiny(photos, tmp_path / "first"))
    student = load_model(tmp_path / "first" / "w.pt")
    save_weights(with_hint_channels(student, 3), tmp_path / "hinted.pt")
    with pytest.raises(ValueError, match="hint_channels"):
        load_teacher(tmp_path / "hinted.pt", student)
    assert load_teacher(tmp_path / "first" / "w.pt", student) is not None


def test_a_run_taught_by_a_teacher_resumes_only_with_the_same_teacher(photos, tmp_path):
    train(tiny(photos, tmp_path / "first"))
    w = tmp_path / "first" / "w.pt"
    train(tiny(photos, tmp_path, init=w, teacher=w, degrade_share=0.5, steps=2, freeze_steps=0))
    with pytest.raises(ValueError, match="--teacher"):
        train(tiny(photos, tmp_path, init=w, degrade_share=0.5, steps=4, freeze_steps=0, resume=True))
    card = train(tiny(photos, tmp_path, init=w, teacher=w, degrade_share=0.5, steps=4, freeze_steps=0, resume=True))
    assert card["steps"] == 4 and all("kl" in row for row in card["history"])


def test_a_sharpened_teacher_asks_its_own_copy_for_more_than_it_gives():
    import copy

    import numpy as np
    from helpers import random_model

    from engine.training.loop import distill_losses

    teacher = random_model(seed=4).eval()
    with torch.no_grad():
        teacher.head.weight.mul_(50.0)  # logits with some spread, so that sharpening them changes the target
    student = copy.deepcopy(teacher).eval()
    clean = torch.from_numpy(np.random.default_rng(0).uniform(0, 100, (2, 1, 64, 64)).astype(np.float32))
    same = distill_losses(student, teacher, clean, clean, 10.0)[1]["kl"]
    sharp = distill_losses(student, teacher, clean, clean, 10.0, temperature=0.5)[1]["kl"]
    assert same < 1e-5 < sharp
    with pytest.raises(ValueError, match="above 0"):
        distill_losses(student, teacher, clean, clean, 10.0, temperature=0.0)
