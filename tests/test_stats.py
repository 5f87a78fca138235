"""minivit.stats: McNemar's paired z, binomial and over-seeds standard errors."""

import math

import pytest
import torch

pytest.importorskip("hypothesis", reason="property tests need hypothesis (pip install hypothesis, a [dev] extra)")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from minivit.stats import McNemar, binomial_se, mcnemar, mean_se, paired_se  # noqa: E402


def test_mcnemar_counts_the_discordant_pairs():
    a = torch.tensor([1, 1, 1, 0, 0, 1, 0, 1], dtype=torch.bool)
    b = torch.tensor([1, 0, 0, 0, 1, 1, 0, 0], dtype=torch.bool)
    r = mcnemar(a, b)
    assert isinstance(r, McNemar) and (r.only_a, r.only_b) == (3, 1)
    assert r.z == pytest.approx((3 - 1) / math.sqrt(4))
    assert mcnemar(b, a).z == -r.z and mcnemar(a, a) == McNemar(0, 0, 0.0)


@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=200))
def test_mcnemar_matches_the_binomial_derivation(pairs):
    a = torch.tensor([p[0] for p in pairs])
    b = torch.tensor([p[1] for p in pairs])
    r = mcnemar(a, b)
    n = r.only_a + r.only_b  # under H0, only_a ~ Binomial(n, 1/2): mean n/2, variance n/4
    assert r.z == (pytest.approx((r.only_a - n / 2) / math.sqrt(n / 4)) if n else 0.0)


def test_mcnemar_refuses_what_is_not_paired_correctness():
    with pytest.raises(ValueError, match="1-D bool"):
        mcnemar(torch.tensor([1, 0]), torch.tensor([True, False]))
    with pytest.raises(ValueError, match="same examples"):
        mcnemar(torch.ones(3, dtype=torch.bool), torch.ones(4, dtype=torch.bool))


def test_binomial_se():
    assert binomial_se(0.5, 100) == pytest.approx(0.05)
    assert binomial_se(0.0, 10) == 0.0
    with pytest.raises(ValueError, match="accuracy p"):
        binomial_se(1.5, 10)
    with pytest.raises(ValueError, match="n >= 1"):
        binomial_se(0.5, 0)


def test_mean_se_over_seeds():
    mean, se = mean_se([0.01, 0.03, 0.02])
    assert mean == pytest.approx(0.02) and se == pytest.approx(0.01 / math.sqrt(3))
    with pytest.raises(ValueError, match="at least 2"):
        mean_se([0.1])


def test_paired_se_covers_the_test_images_that_all_seeds_share():
    # A world where method A is better than B on some images and worse on others (an image-specific advantage that
    # every seed of A shares, mean 0 over all images), plus per-seed shifts and per-image coin flips. Each replication draws new test images and
    # new seeds. The spread of the measured mean difference over replications must match the reported s.e.: with
    # the test part, z = mean / se is about N(0, 1); mean_se over the per-seed differences alone understates it.
    g = torch.Generator().manual_seed(0)
    reps, seeds, n = 400, 3, 500
    z_full, z_seed = [], []
    for _ in range(reps):
        q = torch.rand(n, generator=g) * 0.4 + 0.3  # each drawn image's chance of being right for B, in [0.3, 0.7]
        delta = (torch.rand(n, generator=g) - 0.5) * 0.6  # A's advantage on that image, in [-0.3, 0.3], mean 0
        pa = q + delta  # in [0, 1]: over all images A and B are equally good
        tau = torch.randn(seeds, generator=g) * 0.01  # a seed of A a little better or worse on every image
        right_a = [torch.rand(n, generator=g) < (pa + t).clamp(0, 1) for t in tau]
        right_b = [torch.rand(n, generator=g) < q for _ in range(seeds)]
        d = paired_se(right_a, right_b)
        z_full.append(d.mean / d.se)  # the true difference is 0
        old = mean_se([(x.double().mean() - y.double().mean()).item() for x, y in zip(right_a, right_b)])
        if old[1] > 0:  # three equal per-seed differences happen now and then
            z_seed.append(old[0] / old[1])
    sd_full, sd_seed = torch.tensor(z_full).std().item(), torch.tensor(z_seed).std().item()
    assert 0.85 < sd_full < 1.15  # calibrated (the s.e. of a standard deviation over 400 draws is about 0.035)
    assert sd_seed > 1.5  # the seeds alone would make a chance difference look like a result


def test_paired_se_refuses_unpaired_input():
    a = [torch.ones(4, dtype=torch.bool)] * 3
    with pytest.raises(ValueError, match="same number"):
        paired_se(a, a[:2])
    with pytest.raises(ValueError, match="same test images"):
        paired_se(a, [torch.ones(5, dtype=torch.bool)] * 3)
    with pytest.raises(ValueError, match="bool"):
        paired_se([torch.ones(4)] * 2, [torch.ones(4)] * 2)


def test_paired_bar_is_students_t_with_the_satterthwaite_degrees_of_freedom():
    from minivit.stats import PairedSE, paired_bar
    # quantiles from the tables: the normal's 0.975 point; t's with 2 and with 8 degrees of freedom
    assert paired_bar(PairedSE(1.0, 0.0, 0.5, 0.5), seeds=3) == pytest.approx(1.959964, abs=1e-6)
    assert paired_bar(PairedSE(1.0, 0.5, 0.0, 0.5), seeds=3) == pytest.approx(4.302653, abs=1e-6)
    # equal parts, 3 seeds: df = se^4 / (seed_se^4 / 2) = 4 / (1 / 2) = 8
    assert paired_bar(PairedSE(1.0, 1.0, 1.0, 2 ** 0.5), seeds=3) == pytest.approx(2.306004, abs=1e-6)
    # more seeds behind the same seed part: fewer standard errors needed
    assert paired_bar(PairedSE(1.0, 0.5, 0.0, 0.5), seeds=10) == pytest.approx(2.262157, abs=1e-6)
    for bad in (1, 2.0, True):
        with pytest.raises(ValueError, match="seeds must be an int >= 2"):
            paired_bar(PairedSE(1.0, 0.5, 0.5, 0.7), seeds=bad)
    with pytest.raises(ValueError, match="level must lie in"):
        paired_bar(PairedSE(1.0, 0.5, 0.5, 0.7), seeds=3, level=0.3)


def test_unpaired_z_is_the_difference_over_both_binomial_errors():
    from minivit.stats import unpaired_z
    z = unpaired_z(0.6, 10_000, 0.4, 10_000)
    assert z == pytest.approx(0.2 / math.hypot(math.sqrt(0.24 / 10_000), math.sqrt(0.24 / 10_000)))
    assert unpaired_z(0.4, 10_000, 0.6, 10_000) == pytest.approx(-z)
    assert unpaired_z(0.6, 100, 0.4, 10_000) < z  # fewer examples: a larger error, a smaller z
    assert unpaired_z(1.0, 50, 1.0, 50) == 0.0 and unpaired_z(1.0, 50, 0.0, 50) == math.inf
    with pytest.raises(ValueError, match="accuracy p in"):
        unpaired_z(1.2, 10, 0.5, 10)


def test_gap_change_is_calibrated_and_finds_a_real_change():
    """05's test of a changing gap (round 5, M7): under no change z is about standard normal; a gap that grows by
    5 points on 2,000 images is found; the numbers are the per-image differences' mean and s.e."""
    from minivit.stats import gap_change
    g = torch.Generator().manual_seed(0)
    n = 2000

    def models(p_a, p_b):  # two models' correctness, correlated through a shared image difficulty
        easy = torch.rand(n, generator=g)
        return easy < p_a, easy < p_b

    zs = []
    for _ in range(400):
        a1, b1 = models(0.45, 0.40)
        a2, b2 = models(0.50, 0.45)  # both better, the same gap: no change
        zs.append(gap_change(a1, b1, a2, b2).z)
    zs = torch.tensor(zs)
    assert abs(zs.mean()) < 0.2 and 0.85 < zs.std() < 1.15  # about N(0, 1): 400 draws, each bound ~3 s.e. wide
    a1, b1 = models(0.45, 0.40)
    a2, b2 = models(0.55, 0.45)  # the gap grows from 5 to 10 points
    r = gap_change(a1, b1, a2, b2)
    d = (a2.double() - b2.double()) - (a1.double() - b1.double())
    assert math.isclose(r.change, d.mean().item()) and math.isclose(r.se, d.std().item() / math.sqrt(n))
    assert r.z > 3 and r.first < r.second


def test_gap_change_refuses_bad_input():
    from minivit.stats import gap_change
    t = torch.ones(5, dtype=torch.bool)
    with pytest.raises(ValueError, match="same test images"):
        gap_change(t, t, t, torch.ones(4, dtype=torch.bool))
    with pytest.raises(ValueError):
        gap_change(t, t, t, torch.ones(5))  # not bool
    assert gap_change(t, t, t, t).z == 0.0  # no image changes sides


def test_paired_gap_change_holds_its_level_when_seeds_vary():
    """05's data study over three seeds: a change of the gap that differs from seed to seed but is zero on average
    is claimed (mean > paired_bar * se) about as often as the level allows, while the test part alone (what
    `gap_change` on one seed sees) claims it far more often; a real change (some 10 points) is found."""
    from minivit.stats import paired_bar, paired_gap_change
    g = torch.Generator().manual_seed(1)
    n, seeds = 2000, 3

    def run(p):  # one model's correctness on the n images: a shared difficulty plus this run's own luck
        return (0.7 * easy + 0.3 * torch.rand(n, generator=g)) < p

    claimed, claimed_test_only = 0, 0
    trials = 300
    for _ in range(trials):
        easy = torch.rand(n, generator=g)
        lists = [[], [], [], []]
        for _ in range(seeds):
            wobble = 0.04 * torch.randn(1, generator=g).item()  # this seed's change of the gap: zero on average
            for k, p in enumerate((0.45, 0.40, 0.50 + wobble, 0.45)):
                lists[k].append(run(p))
        d = paired_gap_change(*lists)
        claimed += d.mean > paired_bar(d, seeds) * d.se
        claimed_test_only += d.mean > 1.96 * d.test_se
    assert claimed / trials < 0.06  # one-sided level 0.025; 300 trials
    assert claimed_test_only / trials > 0.15  # the seeds' spread, ignored, makes false claims
    easy = torch.rand(n, generator=g)
    lists = [[run(p) for _ in range(seeds)] for p in (0.45, 0.40, 0.58, 0.45)]  # the gap grows
    d = paired_gap_change(*lists)
    accuracy = [torch.stack(v).double().mean().item() for v in lists]
    assert math.isclose(d.mean, (accuracy[2] - accuracy[3]) - (accuracy[0] - accuracy[1]), abs_tol=1e-12)
    assert d.mean > 0.05 and d.mean > paired_bar(d, seeds) * d.se


def test_paired_gap_change_refuses_bad_input():
    from minivit.stats import paired_gap_change
    t = torch.ones(5, dtype=torch.bool)
    with pytest.raises(ValueError, match="same number"):
        paired_gap_change([t, t], [t, t], [t, t], [t])
    with pytest.raises(ValueError, match="same test images"):
        paired_gap_change([t, t], [t, t], [t, t], [torch.ones(4, dtype=torch.bool)] * 2)


def test_new_run_t_is_students_t_for_a_run_like_the_others():
    """A fourth draw of the same training lies outside the 99% bound about 1 time in 100 (3 earlier seeds, 2
    degrees of freedom: bar 9.92); a run 14 s.d. away from three seeds is found."""
    from minivit.stats import new_run_t
    g = torch.Generator().manual_seed(2)
    draws = 0.56 + 0.005 * torch.randn(4000, 4, generator=g, dtype=torch.float64)
    outside = sum(abs((r := new_run_t(row[3].item(), row[:3])).t) > r.bar for row in draws)
    assert new_run_t(0.5, [0.4, 0.6]).df == 1 and abs(new_run_t(0.5, [0.4, 0.5, 0.6]).bar - 9.925) < 1e-3
    assert 0.004 < outside / len(draws) < 0.018  # 1%; binomial s.e. 0.16% over 4,000
    assert abs(new_run_t(0.56, [0.4, 0.5, 0.6]).t) < 1
    far = new_run_t(0.63, [0.560, 0.565, 0.555])  # 14 s.d. above the seeds' mean
    assert far.t > far.bar
    with pytest.raises(ValueError, match="at least 2"):
        new_run_t(0.5, [0.5])
