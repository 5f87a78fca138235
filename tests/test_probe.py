"""minivit.probe: the paper's few-shot linear evaluation (closed-form ridge onto {-1, 1}^K) and frozen features."""

import pytest
import torch

from minivit.probe import few_shot_linear, frozen_features
from tests.conftest import synthetic, tiny_model


def _clusters(n_per_class=20, k=4, d=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    centres = torch.randn(k, d, generator=g) * 4
    y = torch.arange(k).repeat_interleave(n_per_class)
    return centres[y] + torch.randn(len(y), d, generator=g), y


def test_separable_clusters_are_classified():
    f, y = _clusters()
    f_test = f + 0.1 * torch.randn(f.shape, generator=torch.Generator().manual_seed(2))  # near the same centres
    assert (few_shot_linear(f, y, f_test) == y).float().mean() > 0.95
    shuffled = y[torch.randperm(len(y), generator=torch.Generator().manual_seed(4))]  # labels unrelated to features
    assert (few_shot_linear(f, shuffled, f_test) == y).float().mean() < 0.6


def test_minus_one_one_targets_predict_like_one_hot_targets():
    # the paper's {-1, 1}^K targets are an affine map of one-hot targets; with an unpenalised intercept the
    # ridge solution maps the same way, so the predictions are identical
    f, y = _clusters(n_per_class=5, d=12)
    f_test = torch.randn(50, 12, generator=torch.Generator().manual_seed(3)) * 4
    ours = few_shot_linear(f, y, f_test, l2=3.0)
    a = (f - f.mean(0)) / f.std(0, unbiased=False)
    b = (f_test - f.mean(0)) / f.std(0, unbiased=False)
    onehot = torch.nn.functional.one_hot(y, 4).double()
    w = torch.linalg.solve(a.T.double() @ a.double() + 3.0 * torch.eye(12, dtype=torch.float64),
                           a.T.double() @ (onehot - onehot.mean(0)))
    assert torch.equal(ours, (b.double() @ w + onehot.mean(0)).argmax(-1))


def test_fewer_examples_than_features_give_the_primal_solution():
    # n < D (raw pixels: 3,072 to 49,152 features): the n x n system gives the weights of the D x D one,
    # w = (aᵀa + λI)⁻¹ aᵀt = aᵀ(aaᵀ + λI)⁻¹ t; checked against the D x D solve written out here
    f, y = _clusters(n_per_class=3, k=4, d=40)  # n = 12 < D = 40
    f_test = torch.randn(200, 40, generator=torch.Generator().manual_seed(5)) * 4
    a = ((f - f.mean(0)) / f.std(0, unbiased=False)).double()
    b = ((f_test - f.mean(0)) / f.std(0, unbiased=False)).double()
    t = 2 * torch.nn.functional.one_hot(y, 4).double() - 1
    w = torch.linalg.solve(a.T @ a + 0.5 * torch.eye(40, dtype=torch.float64), a.T @ (t - t.mean(0)))
    primal = (b @ w + t.mean(0)).argmax(-1)
    assert len(primal.unique()) == 4  # the test points spread over every class
    assert torch.equal(few_shot_linear(f, y, f_test, l2=0.5), primal)


def test_bad_inputs():
    f, y = _clusters()
    with pytest.raises(ValueError, match=r"features \(n, D\) and \(m, D\)"):
        few_shot_linear(f, y, f[:, :3])
    with pytest.raises(ValueError, match="int64 labels"):
        few_shot_linear(f, y.float(), f)
    with pytest.raises(ValueError, match="l2 > 0"):
        few_shot_linear(f, y, f, l2=0)
    with pytest.raises(ValueError, match=r"labels in \[0, 3\)"):
        few_shot_linear(f, y, f, num_classes=3)


@pytest.mark.parametrize("pool", ["model", "patch-mean"])
def test_frozen_features(pool):
    model = tiny_model().train()
    x, y = synthetic(10)
    f = frozen_features(model, (x, y), pool=pool, batch_size=4, device="cpu")
    assert f.shape == (10, model.config.dim) and f.dtype == torch.float32 and model.training
    tokens = model.eval().forward_features(x.float() / 255)
    expected = model.forward_head(tokens, pre_logits=True) if pool == "model" else tokens[:, 1:].mean(1)
    torch.testing.assert_close(f, expected.detach())
    with pytest.raises(ValueError, match="pool must be"):
        frozen_features(model, (x, y), pool="cls")


def test_pixel_baseline_reads_the_committed_rows(tmp_path):
    from minivit.probe import pixel_baseline
    row = pixel_baseline("cifar10", train_images=5000)  # the committed benchmark: CIFAR-10 rows have no "side"
    assert row is not None and row["side"] == 32 and row["train_images"] == 5000 and 0.1 < row["test_acc"] < 1
    assert pixel_baseline("cifar10")["train_images"] == 50000  # default: the largest training set
    (tmp_path / "linear_pixels_imagenette.json").write_text(
        '{"rows": [{"side": 32, "train_images": 9, "test_acc": 0.4}, {"side": 64, "train_images": 9, "test_acc": 0.3}]}')
    assert pixel_baseline("imagenette", side=64, folder=tmp_path)["test_acc"] == 0.3
    assert pixel_baseline("imagenette", folder=tmp_path) is None  # no row at the stored 128 px
    assert pixel_baseline("fashion-mnist", folder=tmp_path) is None  # no file: not in this installation
    with pytest.raises(ValueError, match="expected one of"):
        pixel_baseline("mnist")
