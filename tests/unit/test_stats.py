"""Student's t quantiles against published two-sided 95% factors."""

from __future__ import annotations

import pytest

from sim.studies.stats import t_cdf, t_quantile


@pytest.mark.parametrize(
    ("df", "factor"),
    [
        (1, 12.706204736174698),
        (2, 4.302652729749464),
        (3, 3.182446305284263),
        (4, 2.7764451051977987),
        (9, 2.2621571627409915),
        (29, 2.045229642132703),
        (1000, 1.9623390808264078),
    ],
)
def test_the_975_quantile_is_the_published_factor(df: int, factor: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(factor, rel=1e-10)


def test_the_distribution_is_symmetric_and_the_quantile_inverts_the_cdf() -> None:
    assert t_cdf(0.0, 5) == 0.5
    assert t_quantile(0.025, 4) == pytest.approx(-t_quantile(0.975, 4), rel=1e-12)
    for p in (0.6, 0.9, 0.995):
        assert t_cdf(t_quantile(p, 7), 7) == pytest.approx(p, abs=1e-12)


def test_a_quantile_outside_the_open_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="0 < p < 1"):
        t_quantile(1.0, 3)
