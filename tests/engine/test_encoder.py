"""The EfficientNet-Lite0 port loads the published ImageNet weights strictly and classifies right."""

import cv2
import numpy as np
import pytest
import torch
from helpers import SHARED

from engine.encoder import EfficientNetLite, imagenet_input, same_pad
from engine.model import CVUNet, ModelConfig, init_encoder_from_imagenet
from engine.weights import load_imagenet

PHOTOS = SHARED / "photos" / "train"
# (photo, acceptable ImageNet classes)
EXPECTED = [
    ("gcompris_erase-red-panda.jpg", {387}),  # lesser panda
    ("gcompris_wanimal-polar-bear.jpg", {296}),  # ice bear
    ("skimage_chelsea.jpg", {281, 282, 285}),  # tabby / tiger cat / Egyptian cat
    ("opencv_orange.jpg", {950, 951}),  # orange / lemon
]


def centre_224(path):
    img = cv2.cvtColor(cv2.imread(str(path)), cv2.COLOR_BGR2RGB)
    h, w = img.shape[:2]
    s = 256 / min(h, w)
    img = cv2.resize(img, (round(w * s), round(h * s)), interpolation=cv2.INTER_AREA)
    h, w = img.shape[:2]
    y, x = (h - 224) // 2, (w - 224) // 2
    return img[y : y + 224, x : x + 224]


@pytest.mark.skipif(not PHOTOS.is_dir(), reason="shared/photos/train is not beside the checkout")
@pytest.mark.parametrize("variant", ["lite0", "lite2"])
def test_imagenet_weights_load_strictly_and_classify_photos(variant):
    model = load_imagenet(variant)  # load_state_dict(strict=True) inside
    batch = torch.stack([imagenet_input(torch.from_numpy(centre_224(PHOTOS / f)).permute(2, 0, 1))
                         for f, _ in EXPECTED])
    with torch.inference_mode():
        top = model(batch).softmax(1).argmax(1).tolist()
    for (name, ok), got in zip(EXPECTED, top, strict=True):
        assert got in ok, f"{name}: class {got}, expected one of {ok}"


def test_same_padding_matches_tensorflow_rule():
    assert same_pad(3, 2, 224) == (0, 1)
    assert same_pad(5, 2, 224) == (1, 2)
    assert same_pad(3, 1, 7) == (1, 1)
    assert same_pad(3, 2, 7) == (1, 1)


@pytest.mark.parametrize("variant", ["lite0", "lite2"])
def test_colorizer_encoder_starts_from_imagenet_with_a_grey_stem(variant):
    imagenet = load_imagenet(variant)
    model = CVUNet(ModelConfig(num_bins=10, encoder=variant))
    init_encoder_from_imagenet(model, imagenet.state_dict())
    # Grey RGB through the ImageNet stem == L through the summed 1-channel stem.
    grey = torch.rand(1, 1, 64, 64) * 2 - 1
    with torch.inference_mode():
        a = imagenet.stem().conv(grey.expand(-1, 3, -1, -1))
        b = model.encoder.stem().conv(grey)
    assert torch.allclose(a, b, atol=1e-5)
    np.testing.assert_allclose(model.encoder.blocks()[-1].convs()[-1].conv.weight.detach().numpy(),
                               imagenet.blocks()[-1].convs()[-1].conv.weight.detach().numpy())


def test_skips_are_the_last_block_at_each_stride():
    assert EfficientNetLite("lite0", 1, head=False).skip_blocks == (0, 2, 4, 10, 15)
    lite2 = EfficientNetLite("lite2", 1, head=False)
    assert lite2.skip_blocks == (0, 3, 6, 14, 20) and lite2.skip_channels == (16, 24, 48, 120, 352)
    with torch.inference_mode():
        skips = lite2.features(torch.zeros(1, 1, 64, 96))
    assert [tuple(x.shape[1:]) for x in skips] == [(c, 64 // s, 96 // s) for c, s in
                                                   zip(lite2.skip_channels, (2, 4, 8, 16, 32), strict=True)]


@pytest.mark.parametrize("variant", ["lite0", "lite2"])
def test_stage_accessors_reach_every_encoder_parameter(variant):
    # The fused runtime folds what stem(), blocks() and convs() hand it: a layer they miss would be dropped.
    enc = EfficientNetLite(variant, 1, head=False)
    layers = [enc.stem()] + [c for b in enc.blocks() for c in b.convs()]
    reached = {id(p) for layer in layers for m in (layer.conv, layer.bn) if m is not None for p in m.parameters()}
    assert reached == {id(p) for p in enc.parameters()}
    assert len(enc.blocks()) == len(enc._blocks)
