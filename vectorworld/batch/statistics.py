"""Small-sample statistics for batch reports, in numpy and the standard library (no scipy).

* Student's t distribution: CDF through the regularised incomplete beta function (continued fraction),
  quantiles by bisection on the CDF.
* 95% confidence intervals: t interval for a mean, Wilson score interval for a proportion.
* Welch's unequal-variance t-test for the difference of two means (two runs of the same batch).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

CONFIDENCE = 0.95


def _betacf(a: float, b: float, x: float, max_iter: int = 300, eps: float = 1e-14) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz's method)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, max_iter + 1):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def regularized_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b) for a, b > 0 and x in [0, 1]."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` > 0 degrees of freedom (``df`` may be fractional)."""
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    tail = 0.5 * regularized_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_ppf(p: float, df: float) -> float:
    """The t quantile: the t with ``t_cdf(t, df) == p``, p in (0, 1), by bisection."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"quantile level must be in (0, 1), got {p}")
    lo, hi = -1.0, 1.0
    while t_cdf(lo, df) > p:
        lo *= 2.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return 0.5 * (lo + hi)


@dataclass(frozen=True)
class MeanEstimate:
    """Mean of n samples with its 95% confidence interval (``ci_low``/``ci_high`` None when n < 2)."""

    n: int
    mean: float
    std: float
    ci_low: float | None
    ci_high: float | None
    median: float
    minimum: float
    maximum: float

    def as_dict(self) -> dict[str, object]:
        return {"n": self.n, "mean": self.mean, "std": self.std, "ci95": [self.ci_low, self.ci_high],
                "median": self.median, "min": self.minimum, "max": self.maximum}


def mean_ci(values: np.ndarray, proportion: bool = False) -> MeanEstimate:
    """Mean with a 95% CI: Student t for a mean, Wilson score for a proportion (values in {0, 1}).

    values: (n,) finite floats; n >= 1.
    """
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("mean_ci needs at least one value")
    n, mean = int(x.size), float(x.mean())
    std = float(x.std(ddof=1)) if n > 1 else 0.0
    low: float | None = None
    high: float | None = None
    if proportion:
        low, high = wilson_interval(int(round(x.sum())), n)
    elif n > 1:
        half = t_ppf(0.5 + CONFIDENCE / 2.0, n - 1) * std / math.sqrt(n)
        low, high = mean - half, mean + half
    return MeanEstimate(n, mean, std, low, high, float(np.median(x)), float(x.min()), float(x.max()))


def wilson_interval(successes: int, n: int) -> tuple[float, float]:
    """95% Wilson score interval of a proportion ``successes / n`` (n >= 1)."""
    z = NormalDist().inv_cdf(0.5 + CONFIDENCE / 2.0)  # 1.95996...
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class WelchResult:
    """Welch's t-test of mean(b) - mean(a): the difference, its 95% CI, t, df and the two-sided p-value.

    ``p_value`` is None (and the CI bounds None) when either sample has fewer than 2 values.
    """

    diff: float
    ci_low: float | None
    ci_high: float | None
    t: float | None
    df: float | None
    p_value: float | None


def welch_test(a: np.ndarray, b: np.ndarray) -> WelchResult:
    """Two-sided Welch test of mean(b) - mean(a). Zero variance in both: p = 1 if equal means, else 0."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    diff = float(y.mean() - x.mean())
    if x.size < 2 or y.size < 2:
        return WelchResult(diff, None, None, None, None, None)
    va, vb = float(x.var(ddof=1)) / x.size, float(y.var(ddof=1)) / y.size
    se2 = float(va + vb)
    if se2 <= 0.0:
        return WelchResult(diff, diff, diff, None, None, 1.0 if diff == 0.0 else 0.0)
    se = math.sqrt(se2)
    df = se2 * se2 / (va * va / (x.size - 1) + vb * vb / (y.size - 1))
    t = diff / se
    p = 2.0 * (1.0 - t_cdf(abs(t), df))
    half = t_ppf(0.5 + CONFIDENCE / 2.0, df) * se
    return WelchResult(diff, diff - half, diff + half, t, df, float(max(0.0, min(1.0, p))))


def significance_marker(p_value: float | None) -> str:
    """'***' p < 0.001, '**' p < 0.01, '*' p < 0.05, '' otherwise or unknown."""
    if p_value is None:
        return ""
    for level, marker in ((0.001, "***"), (0.01, "**"), (0.05, "*")):
        if p_value < level:
            return marker
    return ""


@dataclass(frozen=True)
class PairedResult:
    """Paired t-test of mean(b - a) over matched samples (the same seeds): the mean difference, its 95% CI,
    the two-sided p-value; CI bounds and p None with fewer than 2 pairs."""

    n: int
    diff: float
    ci_low: float | None
    ci_high: float | None
    p_value: float | None

    def as_dict(self) -> dict[str, object]:
        return {"n": self.n, "diff": self.diff, "ci95": [self.ci_low, self.ci_high], "p_value": self.p_value}


def paired_test(a: np.ndarray, b: np.ndarray) -> PairedResult:
    """Paired t-test of b - a (arrays of equal length, element i of both from the same episode seed). All
    differences equal: CI collapses to the difference, p = 1 if it is 0 else 0."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"paired_test needs samples of equal length, got {x.shape} and {y.shape}")
    d = y - x
    n = int(d.size)
    if n == 0:
        raise ValueError("paired_test needs at least one pair")
    diff = float(d.mean())
    if n < 2:
        return PairedResult(n, diff, None, None, None)
    se = float(d.std(ddof=1)) / math.sqrt(n)
    if se <= 0.0:
        return PairedResult(n, diff, diff, diff, 1.0 if diff == 0.0 else 0.0)
    t = diff / se
    half = t_ppf(0.5 + CONFIDENCE / 2.0, n - 1) * se
    p = 2.0 * (1.0 - t_cdf(abs(t), n - 1))
    return PairedResult(n, diff, diff - half, diff + half, float(max(0.0, min(1.0, p))))
