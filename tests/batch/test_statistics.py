"""Statistics without scipy: t quantiles against table values, Welch test, Wilson interval, markers."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vectorworld.batch.statistics import mean_ci, significance_marker, t_cdf, t_ppf, welch_test, wilson_interval


@pytest.mark.parametrize("df, q975", [(1, 12.7062), (2, 4.3027), (5, 2.5706), (7, 2.3646), (30, 2.0423),
                                      (1000, 1.9623)])
def test_t_quantiles_match_tables(df, q975):
    assert t_ppf(0.975, df) == pytest.approx(q975, abs=1e-4)
    assert t_ppf(0.025, df) == pytest.approx(-q975, abs=1e-4)


def test_t_cdf_known_values():
    assert t_cdf(0.0, 3) == pytest.approx(0.5)
    assert t_cdf(2.0, 3) == pytest.approx(0.930337, abs=1e-6)
    assert t_cdf(1.0, 1) == pytest.approx(0.75)  # Cauchy: 1/2 + atan(1)/pi


@settings(max_examples=50, deadline=None)
@given(st.floats(0.001, 0.999), st.floats(0.5, 200.0))
def test_t_ppf_inverts_cdf(p, df):
    assert t_cdf(t_ppf(p, df), df) == pytest.approx(p, abs=1e-7)


def test_mean_ci_is_the_t_interval():
    est = mean_ci(np.array([1.0, 2.0, 3.0, 4.0]))
    half = 3.182446 * np.std([1, 2, 3, 4], ddof=1) / 2.0
    assert est.mean == 2.5 and est.n == 4
    assert est.ci_low == pytest.approx(2.5 - half, abs=1e-5) and est.ci_high == pytest.approx(2.5 + half, abs=1e-5)
    single = mean_ci(np.array([5.0]))
    assert single.ci_low is None and single.std == 0.0


def test_proportion_uses_wilson():
    low, high = wilson_interval(7, 8)
    assert (low, high) == pytest.approx((0.5291, 0.9776), abs=1e-4)
    est = mean_ci(np.array([1, 1, 1, 1, 1, 1, 1, 0], float), proportion=True)
    assert (est.ci_low, est.ci_high) == pytest.approx((low, high))
    assert wilson_interval(8, 8)[1] == 1.0 and wilson_interval(0, 8)[0] == 0.0


def test_welch_test_against_hand_computation():
    a = np.array([19.1, 21.3, 20.2, 18.7, 22.0, 20.5])
    b = np.array([22.4, 23.9, 21.7, 25.1, 24.0])
    res = welch_test(a, b)
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    df = (va + vb) ** 2 / (va**2 / 5 + vb**2 / 4)
    t = (b.mean() - a.mean()) / math.sqrt(va + vb)
    assert res.diff == pytest.approx(b.mean() - a.mean())
    assert res.t == pytest.approx(t) and res.df == pytest.approx(df)
    assert res.p_value == pytest.approx(2 * (1 - t_cdf(abs(t), df)))
    assert 0.0 < res.p_value < 0.01 and res.ci_low > 0.0
    same = welch_test(a, a + 0.0)
    assert same.p_value == pytest.approx(1.0) and same.ci_low < 0.0 < same.ci_high


def test_welch_degenerate_cases():
    assert welch_test(np.ones(4), np.ones(4)).p_value == 1.0
    assert welch_test(np.ones(4), np.full(4, 2.0)).p_value == 0.0
    assert welch_test(np.ones(1), np.ones(3)).p_value is None


@pytest.mark.parametrize("p, marker", [(0.0005, "***"), (0.005, "**"), (0.04, "*"), (0.2, ""), (None, "")])
def test_significance_marker(p, marker):
    assert significance_marker(p) == marker
