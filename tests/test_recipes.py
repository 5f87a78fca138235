"""Course recipes: by name and profile, what they pass to fit, and that equal dicts mean the same training."""

import json

import pytest
import torch

from minivit import recipes
from minivit.augment import Augment, BatchRandAugment
from minivit.profile import Profile
from tests.conftest import synthetic, tiny_model


def test_get_by_profile_object_or_name():
    assert recipes.get("cifar10", "quick") is recipes.get("cifar10", Profile("quick", "cpu"))
    assert recipes.get("cifar10", "full").name == "cifar10-full"
    with pytest.raises(ValueError, match="no recipes for data set 'mnist'"):
        recipes.get("mnist", "quick")


def test_fit_kwargs_build_the_augmentation():
    quick = recipes.get("cifar10", "quick").fit_kwargs(10)
    assert isinstance(quick["augment"], Augment) and "transform" not in quick and "mix" not in quick
    full = recipes.get("cifar10", "full").fit_kwargs(10)
    assert full["augment"] == BatchRandAugment("cifar10", 2, 9)  # RandAugment (its own crop and flip) on the device
    assert "transform" not in full and "workers" not in full and callable(full["mix"])
    loader = recipes.get("cifar10", "full").with_(workers=14).fit_kwargs(10)  # the per-image pipeline, on request
    assert "augment" not in loader and loader["workers"] == 14 and callable(loader["transform"])
    ablation = recipes.get("cifar10", "full").with_(augment="none", rand_augment=None, mixup=False, workers=0)
    assert not {"augment", "transform", "mix"} & set(ablation.fit_kwargs(10))  # notebook 04's ablation
    with pytest.raises(ValueError, match="needs num_classes"):
        recipes.get("cifar10", "full").fit_kwargs()


def test_with_and_to_dict():
    r = recipes.get("cifar10", "quick")
    r2 = r.with_(augment="none", epochs=2)
    assert (r2.augment, r2.epochs, r2.lr) == ("none", 2, r.lr) and r2 != r
    d = json.loads(json.dumps(r.to_dict()))  # plain data
    assert d == r.to_dict() and d["name"] == "cifar10-quick"


def test_recipe_fit_trains_with_overrides():
    x, y = synthetic(32)
    r = recipes.Recipe("t", "cifar10", n_per_class=None, epochs=2, batch_size=16, lr=1e-2, augment="none")
    h = r.fit(tiny_model(), (x, y), device="cpu", lr=5e-3)
    assert len(h) == 2 and max(h.step_lr) == pytest.approx(5e-3)  # the override, not the recipe's lr
    assert torch.isfinite(torch.tensor(h.train_loss)).all()


def test_full_recipe_trains_with_batched_rand_augment_reproducibly():
    x, y = synthetic(32)  # 3 classes of 8-px images; the tiny model has 3 classes
    r = recipes.get("cifar10", "full").with_(epochs=2, batch_size=16, warmup_epochs=1.0)
    runs = [r.fit(tiny_model(), (x, y), device="cpu", progress=False, seed=s) for s in (0, 0, 1)]
    assert all(len(h) == 2 and torch.isfinite(torch.tensor(h.train_loss)).all() for h in runs)
    assert runs[0].train_loss == runs[1].train_loss != runs[2].train_loss  # seeded: the same augmentations


def test_fit_or_load_trains_once_then_loads_the_same_model(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIVIT_DATA", str(tmp_path))
    x, y = synthetic(32)
    r = recipes.Recipe("t", "cifar10", n_per_class=None, epochs=2, batch_size=16, lr=1e-2, augment="none")
    first = tiny_model(seed=0)
    h1 = r.fit_or_load(first, (x, y), (x, y), name="tiny", device="cpu")
    assert (tmp_path / "checkpoints" / "tiny.pt").exists()
    second = tiny_model(seed=1)  # another initialisation: loading must replace it
    h2 = r.fit_or_load(second, (x, y), (x, y), name="tiny", device="cpu")
    assert h2.val_acc == h1.val_acc and h2.epoch_time == h1.epoch_time  # loaded, not retrained
    assert all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), second.state_dict().values()))
    third = tiny_model(seed=1)
    h3 = r.fit_or_load(third, (x, y), (x[:16], y[:16]), name="tiny", device="cpu")  # other val data: train again
    assert h3.epoch_time != h1.epoch_time
    h4 = r.with_(epochs=1).fit_or_load(tiny_model(), (x, y), (x[:16], y[:16]), name="tiny", device="cpu")
    assert len(h4) == 1  # another recipe: train again


def test_predict_or_load_keeps_a_runs_logits_beside_its_checkpoint(tmp_path, monkeypatch):
    from minivit.train import predict
    monkeypatch.setenv("MINIVIT_DATA", str(tmp_path))
    x, y = synthetic(32)
    r = recipes.Recipe("t", "cifar10", n_per_class=None, epochs=1, batch_size=16, lr=1e-2, augment="none")
    model = tiny_model(seed=0)
    with pytest.raises(ValueError, match="no checkpoint"):  # nothing trained under that name yet
        recipes.predict_or_load(model, (x, y), "tiny")
    r.fit_or_load(model, (x, y), name="tiny", device="cpu")
    first = recipes.predict_or_load(model, (x, y), "tiny")
    assert torch.equal(first, predict(model, (x, y)))
    cached = sorted((tmp_path / "checkpoints").glob("tiny.logits-*.pt"))
    assert len(cached) == 1
    torch.save({"key": torch.load(cached[0], weights_only=True)["key"], "logits": first + 1}, cached[0])
    assert torch.equal(recipes.predict_or_load(model, (x, y), "tiny"), first + 1)  # read from the file, not computed
    other = recipes.predict_or_load(model, (x[:8], y[:8]), "tiny")  # other images: their own file
    assert torch.equal(other, predict(model, (x[:8], y[:8])))
    assert len(list((tmp_path / "checkpoints").glob("tiny.logits-*.pt"))) == 2
    stranger = tiny_model(seed=1)  # not the checkpoint's weights: refused, no file written
    with pytest.raises(ValueError, match="not those of"):
        recipes.predict_or_load(stranger, (x[:4], y[:4]), "tiny")
    assert len(list((tmp_path / "checkpoints").glob("tiny.logits-*.pt"))) == 2
    r.fit_or_load(tiny_model(seed=2), (x, y), name="tiny", device="cpu", lr=5e-3)  # the run trained again, replaced
    retrained = tiny_model(seed=3)
    r.fit_or_load(retrained, (x, y), name="tiny", device="cpu", lr=5e-3)  # loaded
    assert torch.equal(recipes.predict_or_load(retrained, (x, y), "tiny"), predict(retrained, (x, y)))  # stale file not used
    cached[0].write_bytes(b"not a tensor file")  # unreadable: computed again and replaced
    assert torch.equal(recipes.predict_or_load(retrained, (x, y), "tiny"), predict(retrained, (x, y)))


def test_fingerprint_tells_data_apart():
    x, y = synthetic(8)
    assert recipes.fingerprint((x, y)) == recipes.fingerprint((x.clone(), y.clone()))
    assert recipes.fingerprint((x, y)) != recipes.fingerprint((x, y.roll(1)))
    assert recipes.fingerprint(None) is None


def test_imagenette_recipes_train_on_every_image_at_128px():
    quick, full = recipes.get("imagenette", "quick"), recipes.get("imagenette", "full")
    assert quick.dataset == full.dataset == "imagenette" and quick.n_per_class is None and full.n_per_class is None
    k = quick.fit_kwargs(10)
    assert isinstance(k["augment"], Augment) and "transform" not in k and "mix" not in k  # cheap, batched
    f = full.fit_kwargs(10)
    assert f["augment"] == BatchRandAugment("imagenette", 2, 9) and callable(f["mix"]) and "transform" not in f
    assert quick.run_name("ViT-Nano/16") == f"imagenette-quick-nall-e{quick.epochs}-ViT-Nano-16"
    images = torch.zeros(4, 3, 128, 128, dtype=torch.uint8)
    assert k["augment"](images.float()).shape == (4, 3, 128, 128)  # the crop keeps the 128 px size


@pytest.mark.parametrize("profile", ["quick", "full"])
def test_imagenette64_recipes_fit_64px_images(profile):
    # pre-training at 64 px (notebook 07): the same data set (its normalisation), an augmentation that keeps any
    # image size (no crop sized for 128 px), and the same classes as the 128-px recipe it hands over to
    r, r128 = recipes.get("imagenette64", profile), recipes.get("imagenette", profile)
    assert r.name == f"imagenette64-{profile}" and r.dataset == r128.dataset == "imagenette"
    assert r.rand_augment is None and r.augment in ("flip", "none")
    kwargs = r.fit_kwargs(10)
    images = torch.randint(0, 256, (4, 3, 64, 64), dtype=torch.uint8)
    assert kwargs["augment"](images, torch.Generator().manual_seed(0)).shape == (4, 3, 64, 64)
    if r.mixup:
        x, soft = kwargs["mix"](images.float() / 255, torch.arange(4))
        assert x.shape == (4, 3, 64, 64) and soft.shape == (4, 10)
    assert r.run_name("ViT-Nano/16") != r128.run_name("ViT-Nano/16")  # its own checkpoint


def test_fit_or_load_ends_on_the_runs_device_when_loaded(tmp_path, monkeypatch):
    # trained and loaded models must end in the same place: a cache hit moves the model to the run's device
    monkeypatch.setenv("MINIVIT_DATA", str(tmp_path))
    x, y = synthetic(32)
    r = recipes.Recipe("t", "cifar10", n_per_class=None, epochs=1, batch_size=16, lr=1e-2, augment="none")
    h1 = r.fit_or_load(tiny_model(), (x, y), name="dev", device="cpu")
    assert h1.loaded_from is None  # trained now
    loaded = tiny_model(seed=1)
    h2 = r.fit_or_load(loaded, (x, y), name="dev", device="meta")  # a cache hit: no training on meta
    assert h2.loaded_from == str(tmp_path / "checkpoints" / "dev.pt")
    assert {p.device.type for p in loaded.parameters()} == {"meta"}


def test_train_or_load_moves_a_trained_model_too(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIVIT_DATA", str(tmp_path))
    model = tiny_model()
    calls = []

    def train():
        calls.append(1)
        return recipes.History()
    recipes.train_or_load("t", model, {"k": 1}, train, device="meta")
    assert calls == [1] and {p.device.type for p in model.parameters()} == {"meta"}


def test_fashion_mnist_recipes_are_the_benchmark_and_notebook_03_full():
    quick, full = recipes.get("fashion-mnist", "quick"), recipes.get("fashion-mnist", "full")
    assert (quick.dataset, quick.n_per_class, quick.epochs, quick.batch_size, quick.lr, quick.label_smoothing,
            quick.augment) == ("fashion-mnist", None, 7, 256, 5e-3, 0.0, "none")  # benchmarks/README.md: 88.64%
    assert (full.epochs, full.batch_size, full.lr, full.warmup_epochs, full.augment) == (40, 256, 1e-3, 3.0, "basic")
    assert quick.fit_kwargs(10)["epochs"] == 7 and "augment" not in quick.fit_kwargs(10)


def test_get_says_which_argument_is_wrong():
    with pytest.raises(ValueError, match=r"no recipes for data set 'cifar-10'; recipes exist for \['cifar10', 'cifar10-lowres', "
                                         r"'fashion-mnist', 'imagenette', 'imagenette64', 'mosaic64'\]"):
        recipes.get("cifar-10", "quick")
    with pytest.raises(ValueError, match=r"unknown profile 'fast' for 'cifar10'; expected one of \['quick', 'full'\]"):
        recipes.get("cifar10", "fast")


def _synthetic_set(n=48, side=8):
    from minivit.data import ImageDataset
    x, y = synthetic(n)
    if side != 8:
        x = torch.nn.functional.interpolate(x.float(), size=side).round().to(torch.uint8)
    return ImageDataset(x, y, ("a", "b", "c"), "cifar10", "train")


def test_a_recipe_in_phases_trains_low_then_fine_tunes_at_the_full_size():
    """image_size, then: the first phase on resized images (the ViT's grid and position embeddings follow, §3.2),
    the next on a stratified subset at the data's own size; one History for both, its phases recorded."""
    train = _synthetic_set(48, side=8)
    fine = recipes.Recipe("t-ft", "cifar10", n_per_class=4, epochs=1, batch_size=4, lr=5e-3, augment="none")
    r = recipes.Recipe("t", "cifar10", n_per_class=None, epochs=2, batch_size=16, lr=1e-2, augment="none",
                       image_size=4, then=fine)
    model = tiny_model()  # 8-px images, 4-px patches: a 2x2 grid, 1x1 at 4 px
    grids = []
    model.register_forward_pre_hook(lambda m, args: grids.append(tuple(args[0].shape[-2:])))
    h = r.fit(model, train, train, device="cpu", progress=False)
    assert [p["image_size"] for p in h.phases] == [4, 8] and [p["epochs"] for p in h.phases] == [2, 1]
    assert [p["steps_per_epoch"] for p in h.phases] == [3, 3]  # 48 images / 16, then 12 (4 per class) / 4
    assert h.epoch == [1, 2, 3] and len(h.step_lr) == 9 and len(h.step_grad_norm) == 9
    assert h.step_epochs() == pytest.approx([1 / 3, 2 / 3, 1, 4 / 3, 5 / 3, 2, 7 / 3, 8 / 3, 3])
    assert (4, 4) in grids and grids[-1] == (8, 8) and model.config.image_size == 8
    assert max(h.step_lr[6:]) == pytest.approx(5e-3)  # the fine-tune's own peak (its own warm-up and decay)
    d = r.to_dict()
    assert d["image_size"] == 4 and d["then"]["name"] == "t-ft" and json.loads(json.dumps(d)) == d
    assert "then" not in fine.to_dict() and "image_size" not in fine.to_dict()  # the keys of one-phase recipes
    assert recipes.History.from_dict(h.to_dict()).phases == h.phases


def test_a_recipe_in_phases_is_refused_with_a_clear_error():
    with pytest.raises(ValueError, match="image_size must be a positive int"):
        recipes.Recipe("t", "cifar10", None, 1, 4, 1e-3, image_size=0)
    with pytest.raises(ValueError, match="then must be a Recipe"):
        recipes.Recipe("t", "cifar10", None, 1, 4, 1e-3, then={"epochs": 1})
    with pytest.raises(ValueError, match="one data set"):
        recipes.Recipe("t", "cifar10", None, 1, 4, 1e-3, then=recipes.Recipe("u", "imagenette", None, 1, 4, 1e-3))
    x, y = synthetic(16)
    with pytest.raises(ValueError, match="an ImageDataset"):
        recipes.Recipe("t", "cifar10", None, 1, 4, 1e-3, image_size=4).fit(tiny_model(), (x, y), device="cpu")


def test_recipes_print_their_phases_only_when_they_have_them():
    one_phase = repr(recipes.get("cifar10", "quick"))
    assert "then=" not in one_phase and "image_size" not in one_phase
    r = recipes.get("cifar10-lowres", "quick")
    assert f"image_size={r.image_size}" in repr(r) and "then=Recipe(" in repr(r)


def test_a_history_in_phases_plots_each_step_where_its_phase_puts_it():
    import matplotlib
    matplotlib.use("Agg")
    first = recipes.History(steps_per_epoch=4, step_lr=[1.0] * 8)
    for e in (1, 2):
        first.append(epoch=e, train_loss=1.0, train_acc=0.5, val_loss=None, val_acc=None, lr=1.0, images_per_s=1.0,
                     epoch_time=1.0)
    second = recipes.History(steps_per_epoch=2, step_lr=[0.5] * 2)
    second.append(epoch=1, train_loss=0.5, train_acc=0.7, val_loss=None, val_acc=None, lr=0.5, images_per_s=1.0,
                  epoch_time=1.0)
    h = first.then(second)
    assert h.epoch == [1, 2, 3] and h.step_epochs() == pytest.approx([.25, .5, .75, 1, 1.25, 1.5, 1.75, 2, 2.5, 3])
    fig = h.plot()
    x = fig.axes[2].lines[0].get_xdata()
    assert list(x) == pytest.approx(h.step_epochs())


def test_at_flops_cuts_each_phase_to_the_other_models_compute():
    """Recipe.at_flops: a phase of several epochs gets the nearest whole number, a phase of one epoch the images that
    spend what is left, rounding's rest carried on; its own name, so that its checkpoints are its own. The 04/06
    comparisons at equal training FLOPs."""
    train = _synthetic_set(48, side=8)  # 16 images per class
    fine = recipes.Recipe("t-ft", "cifar10", n_per_class=8, epochs=1, batch_size=4, lr=5e-3, augment="none")
    r = recipes.Recipe("t", "cifar10", n_per_class=None, epochs=6, batch_size=16, lr=1e-2, warmup_epochs=1.5,
                       augment="none", image_size=4, then=fine)
    base = {4: 1.0, 8: 4.0}.__getitem__  # the base model's FLOPs per image at 4 and 8 px
    cut = r.at_flops({4: 2.0, 8: 8.0}.__getitem__, base, train)  # twice as costly at both sizes: exact halves
    assert (cut.name, cut.epochs, cut.warmup_epochs, cut.image_size) == ("t-flops", 3, 0.75, 4)
    assert (cut.then.name, cut.then.epochs, cut.then.n_per_class) == ("t-ft-flops", 1, 4)

    def total(recipe, cost):
        h = recipes.History(phases=[{"epochs": recipe.epochs, "image_size": 4}, {"epochs": 1, "image_size": 8}])
        return sum(n * cost(size) for size, n in recipe.epoch_images(h, train))
    costly = {4: 2.5, 8: 8.0}.__getitem__  # 6 / 2.5 = 2.4 epochs: 2, and the rest carried on to the next phase
    cut = r.at_flops(costly, base, train)
    assert cut.epochs == 2 and cut.then.n_per_class == 6  # (6*48*1 + 8*3*4 - 2*48*2.5) / 8 / 3 = 6 per class
    assert total(cut, costly) == total(r, base) == 384  # the same FLOPs in all
    rounded_up = r.at_flops({4: 1.6, 8: 8.0}.__getitem__, base, train)  # 6 / 1.6 = 3.75 epochs: 4, overspent
    assert (rounded_up.epochs, rounded_up.then.n_per_class) == (4, 3)  # (288 + 96 - 4*48*1.6) / 8 / 3 = 3.2
    one = recipes.Recipe("o", "cifar10", n_per_class=None, epochs=1, batch_size=4, lr=1e-3)
    assert one.at_flops(lambda size: 4.0, lambda size: 1.0, train).n_per_class == 4  # all 16 per class, cut by 4
    assert one.at_flops(lambda size: 0.5, lambda size: 1.0, train).n_per_class == 16  # never more than there are
    assert r.at_flops(lambda size: 100.0, base, train).epochs == 1  # never below one epoch


def test_epoch_images_and_flops_by_epoch_count_each_phase_at_its_size():
    from minivit import ViT
    from minivit.flops import count_flops, flops_by_epoch, training_flops_per_image
    train = _synthetic_set(48, side=8)
    fine = recipes.Recipe("t-ft", "cifar10", n_per_class=4, epochs=1, batch_size=4, lr=5e-3, augment="none")
    r = recipes.Recipe("t", "cifar10", n_per_class=None, epochs=2, batch_size=16, lr=1e-2, augment="none",
                       image_size=4, then=fine)
    h = r.fit(tiny_model(), train, None, device="cpu", progress=False)
    assert r.epoch_images(h, train) == [(4, 48), (4, 48), (8, 12)]
    sizes = []
    per_image = lambda size: sizes.append(size) or {4: 10, 8: 100}[size]  # noqa: E731
    assert flops_by_epoch(r, h, train, per_image) == [480, 960, 960 + 1200]
    assert sizes == [4, 8]  # one count per side
    with pytest.raises(ValueError, match="2 phase"):
        fine.epoch_images(h, train)  # a history of another recipe
    # the per-image count: the model set to the side first, forward + backward on the meta device
    cfg = tiny_model().config  # 8-px images, 4-px patches
    build = lambda: ViT(cfg)  # noqa: E731
    with torch.device("meta"):
        at4 = ViT(cfg).set_image_size(4)
    assert training_flops_per_image(build, 4) == count_flops(at4, (1, 3, 4, 4), backward=True)
    assert training_flops_per_image(build, 8) > training_flops_per_image(build, 4)
    with pytest.raises(ValueError, match="positive int"):
        training_flops_per_image(build, 0)
