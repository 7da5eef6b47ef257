"""Paths resampled at a uniform spacing, so that a position along a path is an index, not a search.

Lane-following policies look up dozens of points along each agent's route every step. On a path whose
point j lies at arc length j * h, the point at arc length s is found by arithmetic (j = floor(s / h));
with every agent's path concatenated into one flat array, all of them come from a single gather.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vectorworld import geometry
from vectorworld.world.path_batch import PathBatch


@dataclass(frozen=True)
class UniformPath:
    """A polyline resampled so that point j lies at arc length j * spacing_m (of the original polyline).

    points: (J, 2) m, J >= 2; values: (J,) a per-point quantity interpolated the same way (e.g. a speed cap).
    """

    points: np.ndarray
    values: np.ndarray
    spacing_m: float

    @classmethod
    def resample(cls, points: np.ndarray, s: np.ndarray, values: np.ndarray, max_spacing_m: float = 1.0) -> UniformPath:
        """From a polyline (P, 2) with cumulative arc lengths ``s`` (P,) and per-point ``values`` (P,)."""
        length = float(s[-1])
        count = max(2, int(np.ceil(length / max_spacing_m)) + 1)
        at = np.linspace(0.0, length, count)
        return cls(geometry.interpolate_polyline(points, s, at), np.interp(at, s, values),
                   max(length / (count - 1), 1e-9))

    @property
    def length_m(self) -> float:
        return self.spacing_m * (len(self.points) - 1)

    def head(self, within_m: float) -> UniformPath:
        """The first points, as many as :meth:`UniformPathBatch.project` reads to project within ``within_m``."""
        used = min(max(int(np.ceil(within_m / self.spacing_m)) + 1, 2), len(self.points))
        return UniformPath(self.points[:used], self.values[:used], self.spacing_m)


@dataclass(frozen=True)
class UniformPathBatch:
    """N uniform paths concatenated: row r owns flat entries start[r] .. start[r] + count[r] - 1.

    points: (T, 2) m; values: (T,); start, count: (N,); spacing_m: (N,).
    """

    points: np.ndarray
    values: np.ndarray
    start: np.ndarray
    count: np.ndarray
    spacing_m: np.ndarray

    @classmethod
    def of(cls, paths: Sequence[UniformPath]) -> UniformPathBatch:
        n = len(paths)
        if n == 0:
            return cls(np.zeros((0, 2)), np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64), np.ones(0))
        count = np.fromiter((len(p.points) for p in paths), np.int64, n)
        return cls(np.concatenate([p.points for p in paths]), np.concatenate([p.values for p in paths]),
                   np.cumsum(count) - count, count, np.fromiter((p.spacing_m for p in paths), float, n))

    @property
    def length_m(self) -> np.ndarray:
        """(N,) total length of each path."""
        return self.spacing_m * (self.count - 1)

    def at(self, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Points (N, K, 2) and values (N, K) at arc lengths ``targets`` (N, K), clipped to each path."""
        u = geometry.clamp(targets / self.spacing_m[:, None], 0.0, (self.count - 1)[:, None])
        j = np.minimum(u.astype(np.int64), (self.count - 2)[:, None])
        frac = u - j
        flat = self.start[:, None] + j
        p0, p1 = self.points[flat], self.points[flat + 1]
        v0, v1 = self.values[flat], self.values[flat + 1]
        return p0 + frac[..., None] * (p1 - p0), v0 + frac * (v1 - v0)

    def project(self, xy: np.ndarray, within_m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Project point (N, 2) of each row onto the first ``within_m`` (N,) m of its path (at least one
        segment): arc length (N,) m and lateral offset (N,) m, + left (as ``PathBatch.project``)."""
        if len(xy) == 0:
            return np.zeros(0), np.zeros(0)
        used = geometry.clamp(np.ceil(within_m / self.spacing_m).astype(np.int64) + 1, 2, self.count)
        cols = np.minimum(np.arange(int(used.max()))[None], (used - 1)[:, None])
        head = PathBatch(self.points[self.start[:, None] + cols], cols * self.spacing_m[:, None], used)
        return head.project(xy)
