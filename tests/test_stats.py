"""minivit.stats: McNemar's paired z, binomial and over-seeds standard errors."""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from minivit.stats import McNemar, binomial_se, mcnemar, mean_se


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
