"""minivit.preprocess: your own image (a file, PIL, a tensor) -> a model's normalised input."""

import numpy as np
import pytest
import torch
from PIL import Image

from minivit import ViT, get_preset
from minivit.data import NORMALIZATION, normalize
from minivit.preprocess import Preprocess, load_image, preprocess


def test_a_data_set_image_comes_out_as_normalize_makes_it():
    x = torch.randint(0, 256, (4, 3, 32, 32), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    model = ViT.from_preset("ViT-Nano/4")
    prep = Preprocess.for_model(model, "cifar10")
    torch.testing.assert_close(prep(x), normalize(x, "cifar10"))
    torch.testing.assert_close(prep(x[0]), normalize(x[:1], "cifar10"))  # one image (C, H, W): a batch of 1
    torch.testing.assert_close(prep(x.float() / 255), normalize(x, "cifar10"))
    assert prep.config == {"input_size": (3, 32, 32), "mean": NORMALIZATION["cifar10"][0],
                           "std": NORMALIZATION["cifar10"][1], "interpolation": "bilinear", "crop": "center"}


def test_a_jpeg_is_resized_cropped_and_normalised_for_the_model(tmp_path):
    rgb = np.zeros((60, 90, 3), dtype=np.uint8)
    rgb[:, 15:75] = (255, 0, 0)  # a red centre 60 x 60, black bands left and right
    Image.fromarray(rgb).save(tmp_path / "wide.png")
    model = ViT.from_preset("ViT-Nano/16")  # 128 x 128 RGB
    x = preprocess(tmp_path / "wide.png", model, "imagenette")
    assert x.shape == (1, 3, 128, 128) and x.dtype == torch.float32
    red = (torch.tensor([1.0, 0, 0]) - torch.tensor(NORMALIZATION["imagenette"][0])) / torch.tensor(NORMALIZATION["imagenette"][1])
    torch.testing.assert_close(x[0, :, 64, 64], red)  # the centre crop keeps the red square
    torch.testing.assert_close(x[0, :, 2, 2], red, atol=0.05, rtol=0)  # and its corners: the black bands are cut
    stretched = Preprocess.for_model(model, "imagenette", crop=False)(Image.open(tmp_path / "wide.png"))
    assert stretched.shape == (1, 3, 128, 128) and stretched[0, 0, 64, 2] < 0  # the black band stays, squeezed
    assert model(x).shape == (1, 10)
    assert load_image(tmp_path / "wide.png").shape == (3, 60, 90)


def test_rgb_to_a_grey_model_uses_luma():
    model = ViT(get_preset("ViT-Nano/4", image_size=28, in_channels=1, patch_size=7))
    rgb = torch.zeros(3, 28, 28)
    rgb[1] = 1.0  # pure green
    x = preprocess(rgb, model, "fashion-mnist")
    mean, std = NORMALIZATION["fashion-mnist"]
    assert x.shape == (1, 1, 28, 28)
    torch.testing.assert_close(x[0, 0, 0, 0], torch.tensor((0.587 - mean[0]) / std[0]))


def test_bad_images_are_clear_errors(tmp_path):
    model = ViT.from_preset("ViT-Nano/4")
    with pytest.raises(ValueError, match=r"expected float images in \[0, 1\]"):
        preprocess(torch.full((3, 8, 8), 255.0), model, "cifar10")
    with pytest.raises(FileNotFoundError, match="no image file"):
        preprocess(tmp_path / "missing.jpg", model, "cifar10")
    with pytest.raises(TypeError, match="expected a path, a PIL image or a tensor"):
        preprocess([1, 2, 3], model, "cifar10")
    with pytest.raises(ValueError, match="unknown data set 'imagenet'"):
        Preprocess.for_model(model, "imagenet")
    with pytest.raises(ValueError, match="takes 3 channel"):
        Preprocess.for_model(model, "fashion-mnist")
