"""`readout`: trained weights' read-out chosen again on photos from other sources."""

import cv2
import pytest
import torch
from helpers import colour_photo, random_model

from engine.training.readout import (
    READOUT_GAINS,
    READOUT_HINT_GAINS,
    READOUT_PULLS,
    ReadoutSettings,
    choose_readout_elsewhere,
    most_colourful_not_below,
    readout_rows,
)
from engine.weights import load_model, read_weights, save_weights


def row(gain_db, colour, **kw):
    return {"gain_db": gain_db, "colourfulness_ratio": colour, "temperature": 0.7, **kw}


def test_rule_keeps_the_most_colour_that_is_not_worse_than_grey():
    rows = [row(-0.8, 0.9, k=1), row(0.1, 0.5, k=2), row(0.4, 0.3, k=3), row(0.0, 0.6, k=4)]
    assert most_colourful_not_below(rows, 0.0)["k"] == 4
    assert most_colourful_not_below(rows, 0.2)["k"] == 3
    assert most_colourful_not_below(rows, -1.0)["k"] == 1


def test_rule_falls_back_to_the_least_bad_read_out_and_says_so():
    rows = [row(-0.8, 0.9, k=1), row(-0.2, 0.4, k=2)]
    chosen = most_colourful_not_below(rows, 0.0)
    assert chosen["k"] == 2 and chosen["met"] == 0.0
    assert most_colourful_not_below(rows, -0.5)["met"] == 1.0


@pytest.fixture(scope="module")
def other_photos(tmp_path_factory):
    folder = tmp_path_factory.mktemp("other")
    for i in range(5):
        cv2.imwrite(str(folder / f"o{i}.jpg"), cv2.cvtColor(colour_photo(70 + 5 * i, 90, 40 + i), cv2.COLOR_RGB2BGR))
    return folder


def test_readout_changes_only_the_read_out_and_records_where_it_was_chosen(other_photos, tmp_path):
    save_weights(random_model(seed=5), tmp_path / "w.pt", meta={"card": '{"readout": {"chosen_on": "tuning photos"}}'})
    card = choose_readout_elsewhere(ReadoutSettings(weights=tmp_path / "w.pt", photos=other_photos,
                                                    out=tmp_path / "again.pt", size=64, min_gain_db=-50.0))
    r = card["readout"]
    assert r["chosen_on"] == "photos from other sources" and r["photos"] == 5 and r["met"] == 1.0
    assert card["readout_before"] == {"chosen_on": "tuning photos"}
    rows = card["readout_search"]
    assert {x["doubt_pull"] for x in rows} == set(READOUT_PULLS)
    assert {x["chroma_gain"] for x in rows} == set(READOUT_GAINS)
    assert r["colourfulness_ratio"] == max(x["colourfulness_ratio"] for x in rows if x["gain_db"] >= -50.0)
    model = load_model(tmp_path / "again.pt")
    c = model.readout
    assert (c.temperature, c.doubt_pull, c.chroma_gain) == (r["temperature"], r["doubt_pull"], r["chroma_gain"])
    before, after = read_weights(tmp_path / "w.pt")["state"], read_weights(tmp_path / "again.pt")["state"]
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)


def test_on_a_hinted_model_the_hint_gain_is_chosen_for_the_hinted_colour_target(other_photos, tmp_path):
    from engine.model import with_hint_channels, with_hint_decoder

    save_weights(with_hint_decoder(with_hint_channels(random_model(seed=6))), tmp_path / "h.pt")
    card = choose_readout_elsewhere(ReadoutSettings(weights=tmp_path / "h.pt", photos=other_photos,
                                                    out=tmp_path / "again.pt", size=64, hint_colour_target=0.3,
                                                    spread_rule="psnr"))
    spread = card["readout"]["hint_spread"]
    rows = spread["search"]
    assert {r["gain"] for r in rows} == set(READOUT_HINT_GAINS)
    vivid = [r for r in rows if r["colourfulness_ratio"] >= 0.3]
    if vivid:
        assert spread["psnr"] == max(r["psnr"] for r in vivid)
    else:
        assert spread["colourfulness_ratio"] == max(r["colourfulness_ratio"] for r in rows)
    c = load_model(tmp_path / "again.pt").readout.spread
    assert (c.reach, c.gain) == (spread["reach"], spread["gain"])
    before, after = read_weights(tmp_path / "h.pt")["state"], read_weights(tmp_path / "again.pt")["state"]
    assert all(torch.equal(before[k], after[k]) for k in before)
    # Without a hinted colour target (as shipped), no hint gain is tried: the spread alone.
    card = choose_readout_elsewhere(ReadoutSettings(weights=tmp_path / "h.pt", photos=other_photos,
                                                    out=tmp_path / "plain.pt", size=64))
    assert {r["gain"] for r in card["readout"]["hint_spread"]["search"]} == {1.0}
    assert load_model(tmp_path / "plain.pt").readout.spread.gain == 1.0


def test_a_row_of_the_grid_is_what_the_colorizer_gives_with_that_read_out(other_photos):
    from engine import color
    from engine.colorizer import Colorizer
    from engine.imageio import decode
    from engine.options import ColorizeSettings
    from engine.readout import Readout

    model = random_model(seed=7)
    photo = decode(sorted(other_photos.glob("*.jpg"))[0]).pixels  # 70 x 90: smaller than the working size
    (row,) = readout_rows(model, [photo], 128, (0.7,), (8.0,), (1.1,))
    model.readout = Readout(temperature=0.7, doubt_pull=8.0, chroma_gain=1.1)
    c = Colorizer.create(ColorizeSettings(engine="baseline", device="cpu", precision="fp32", size=128), model=model)
    out = c.colorize(photo)
    truth = photo.astype("float32") / 255
    assert abs(row["psnr"] - color.psnr(out.astype("float32") / 255, truth)) < 0.05  # the colorizer rounds to uint8
    assert abs(row["psnr_grey"] - color.psnr(color.grey_rgb(color.lightness(photo)), truth)) < 1e-4
    # An untrained model's colour is faint, so PSNR barely sees the read-out; colourfulness does (gain 1.0
    # instead of 1.1 here: 8% less), and both round the same uint8 output.
    assert row["colourfulness_ratio"] == pytest.approx(color.colourfulness(out) / color.colourfulness(photo), rel=0.01)


def test_the_card_of_trained_weights_says_where_the_read_out_was_chosen_and_keeps_the_first_choice(
        other_photos, tmp_path):
    from engine.training.train import TrainSettings, train

    train(TrainSettings(data=other_photos, out=tmp_path / "w.pt", work=tmp_path / "work", steps=2, batch=2, size=64,
                        freeze_steps=1, val_every=2, seed=3, threads=1))
    first = choose_readout_elsewhere(ReadoutSettings(weights=tmp_path / "w.pt", photos=other_photos,
                                                     out=tmp_path / "a.pt", size=64))
    assert first["readout_before"]["chosen_on"] == "training photos"
    assert "chosen again (`readout`) on 5 photos" in (tmp_path / "a.md").read_text()
    again = choose_readout_elsewhere(ReadoutSettings(weights=tmp_path / "a.pt", photos=other_photos,
                                                     out=tmp_path / "b.pt", size=64))
    assert again["readout_before"] == first["readout_before"]  # what the training chose, not the first re-choice


def test_hints_only_keeps_the_automatic_read_out_and_chooses_the_spread_with_its_colour_scale(other_photos, tmp_path,
                                                                                               monkeypatch):
    import engine.training.tuning as tuning
    from engine.model import with_hint_channels, with_hint_decoder
    from engine.readout import Readout

    SPREADS = tuning.SPREADS[::20] + tuning.SPREADS[-3:]  # every kind of row, restraints too, at a 20th of the time
    monkeypatch.setattr(tuning, "SPREADS", SPREADS)

    model = with_hint_decoder(with_hint_channels(random_model(seed=6)))
    model.readout = Readout(temperature=0.7, doubt_pull=32.0, chroma_gain=1.2)
    card = '{"readout": {"chosen_on": "photos from other sources", "gain_db": 0.01}, "readout_search": [{"k": 1}]}'
    save_weights(model, tmp_path / "h.pt", meta={"card": card})
    card = choose_readout_elsewhere(ReadoutSettings(weights=tmp_path / "h.pt", photos=other_photos,
                                                    out=tmp_path / "again.pt", size=64, hints_only=True,
                                                    spread_rule="psnr"))
    r = card["readout"]
    assert r["chosen_on"] == "photos from other sources" and r["gain_db"] == 0.01  # the automatic choice kept
    assert card["readout_search"] == [{"k": 1}] and "readout_before" not in card
    spread = r["hint_spread"]
    assert {(x["reach"], x["lightness"], x["floor"], x["colour"], x["fade"], x["restraint"])
            for x in spread["search"]} == set(SPREADS)
    assert spread["psnr"] == max(x["psnr"] for x in spread["search"])
    c = load_model(tmp_path / "again.pt").readout
    assert (c.temperature, c.doubt_pull, c.chroma_gain) == (0.7, 32.0, 1.2)
    assert (c.spread.reach, c.spread.colour) == (spread["reach"], spread["colour"])
    save_weights(random_model(seed=5), tmp_path / "w.pt")
    with pytest.raises(ValueError, match="no colour hints"):
        choose_readout_elsewhere(ReadoutSettings(weights=tmp_path / "w.pt", photos=other_photos,
                                                 out=tmp_path / "x.pt", size=64, hints_only=True))


def test_by_default_the_spread_is_the_least_one_hint_harm_near_the_best_ten_hint_accuracy(other_photos, tmp_path):
    from engine.model import with_hint_channels, with_hint_decoder
    from engine.training.tuning import SPREAD_SLACK_DB

    save_weights(with_hint_decoder(with_hint_channels(random_model(seed=6))), tmp_path / "h.pt")
    card = choose_readout_elsewhere(ReadoutSettings(weights=tmp_path / "h.pt", photos=other_photos,
                                                    out=tmp_path / "local.pt", size=64, hints_only=True))
    spread = card["readout"]["hint_spread"]
    rows = spread["search"]
    near = [x for x in rows if x["psnr"] >= max(x["psnr"] for x in rows) - SPREAD_SLACK_DB]
    assert spread["one_hint_harm"] == min(x["one_hint_harm"] for x in near)
    assert all(0.0 <= x["one_hint_far_moved"] <= 1.0 for x in rows)
    assert card["readout_settings"]["spread_rule"] == "local"
    with pytest.raises(ValueError, match="spread rule"):
        choose_readout_elsewhere(ReadoutSettings(weights=tmp_path / "h.pt", photos=other_photos,
                                                 out=tmp_path / "x.pt", size=64, hints_only=True, spread_rule="far"))
