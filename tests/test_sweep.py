"""minivit.sweep: notebook 05's runs at equal training FLOPs, and the committed record of them."""

import json

import pytest
import torch

from minivit import sweep
from minivit.data import ImageDataset
from minivit.flops import training_flops_per_image
from minivit.recipes import RECIPES


def fake_split(n: int = 50_000) -> ImageDataset:
    """CIFAR-10's training split in shape only (the recipes count images, never look at them)."""
    images = torch.zeros(1, 3, 32, 32, dtype=torch.uint8).expand(n, 3, 32, 32)
    return ImageDataset(images, torch.arange(n) % 10, tuple(f"c{i}" for i in range(10)), "cifar10", "train")


def planned_flops(recipe, model, train) -> int:
    """The training FLOPs a recipe plans: each phase's epochs x images x one image's FLOPs at its side; the first
    phase trains on recipe.training_set(train), each later one on its own training_set of that (Recipe.fit)."""
    total, data, r = 0, recipe.training_set(train), recipe
    while r is not None:
        images = len(data) if r is recipe else len(r.training_set(data))
        total += r.epochs * images * training_flops_per_image(lambda: sweep.build(model), r.image_size or 32)
        r = r.then
    return total


def test_level_6_is_notebook_04s_training():
    train = fake_split()
    assert sweep.level_recipe(6, sweep.BASE_MODEL, train) == RECIPES[sweep.BASE_RECIPE]
    cnn = sweep.level_recipe(6, "ResNet-8", train)
    assert cnn.run_name(sweep.checkpoint_model_name("ResNet-8")) == "cifar10-lowres-quick-flops-nall-e5-ResNet-8"
    assert RECIPES[sweep.BASE_RECIPE].run_name(sweep.checkpoint_model_name(sweep.BASE_MODEL)) == \
        "cifar10-lowres-quick-nall-e6-ViT-Nano-4"


@pytest.mark.parametrize("level", sweep.LEVELS)
def test_every_model_spends_vit_nano_4s_flops(level):
    """Equal FLOPs up to the rounding of whole epochs (0.1%), except a model whose 32-px share would need more
    than the whole split: it sees all 50,000 images once there and spends less (the record holds what it spent)."""
    train = fake_split()
    budget = planned_flops(sweep.level_recipe(level, sweep.BASE_MODEL, train), sweep.BASE_MODEL, train)
    for model in sweep.MODELS:
        recipe = sweep.level_recipe(level, model, train)
        spent = planned_flops(recipe, model, train) / budget
        if len(recipe.then.training_set(train)) == len(train):  # the 32-px phase capped at the whole split
            assert spent < 1 and recipe.then.epochs == 1
        else:
            assert abs(spent - 1) < 1e-3, (model, spent)


def test_the_data_study_sees_the_same_images_on_a_tenth_of_them():
    train = fake_split()
    whole, small = sweep.level_recipe(6, sweep.BASE_MODEL, train), sweep.level_recipe(6, sweep.BASE_MODEL, train, 500)
    subset = small.training_set(train)
    assert len(subset) == 5_000
    assert small.epochs * len(subset) == whole.epochs * len(train)  # 16 px: 300,000 images seen
    assert small.then.epochs * len(small.then.training_set(subset)) == len(whole.then.training_set(train))  # 32 px
    for model in ("ResNet-8",):
        cnn = sweep.level_recipe(6, model, train, 500)
        assert abs(planned_flops(cnn, model, train) / planned_flops(small, sweep.BASE_MODEL, train) - 1) < 0.03


def test_bad_input_says_what_was_expected():
    train = fake_split()
    with pytest.raises(ValueError, match="unknown sweep model"):
        sweep.level_recipe(2, "ViT-H/14", train)
    with pytest.raises(ValueError, match="level must be a positive int"):
        sweep.level_recipe(0, sweep.BASE_MODEL, train)
    with pytest.raises(ValueError, match="smaller than the 32-px phase"):
        sweep.level_recipe(6, sweep.BASE_MODEL, train, 2000)
    with pytest.raises(ValueError, match="unknown sweep model"):
        sweep.build("ResNet-50")
    with pytest.raises(FileNotFoundError, match="benchmarks/scaling_sweep.py"):
        sweep.load_record("/nonexistent/sweep.json")


def test_a_model_of_your_own_is_cut_to_the_same_flops():
    from minivit import ViT, ViTConfig, get_preset
    train = fake_split()
    config = ViTConfig(**{**get_preset("ViT-Nano/4").to_dict(), "dim": 128, "mlp_dim": 256})
    recipe = sweep.level_recipe(6, lambda: ViT(config), train)
    assert recipe.epochs < 6  # about 3.9x ViT-Nano/4's FLOPs per image: fewer epochs


def test_the_committed_record_describes_this_code():
    """Every run the benchmark plans is in the record, under the checkpoint name this code gives it, with answers
    that count to its accuracy and training FLOPs equal to what its recipe plans."""
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location(
        "scaling_sweep", Path(__file__).resolve().parents[1] / "benchmarks" / "scaling_sweep.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    record = sweep.load_record()
    assert json.loads(sweep.RECORD.read_text())["test_images"] == 10_000
    train = fake_split()
    for model, level, seed, n in bench.runs():
        run = sweep.find(record, model, level, seed, n)
        recipe = sweep.level_recipe(level, model, train, n)
        assert run["checkpoint_name"] == recipe.run_name(sweep.checkpoint_model_name(model))
        assert run["recipe"] == recipe.to_dict()
        assert run["train_flops"] == planned_flops(recipe, model, train)
        assert int(run["right"].sum()) == round(run["test_acc"] * 10_000)
    assert len(record["runs"]) == len(bench.runs())
    with pytest.raises(KeyError, match="no run"):
        sweep.find(record, "ResNet-14", 6, seed=1)
