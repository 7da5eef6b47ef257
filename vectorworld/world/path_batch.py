"""Many polylines padded into one array, so that N agents project onto / sample along their own path
in a few numpy calls instead of N Python-level calls (the per-step hot path of lane-following policies).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vectorworld import geometry


@dataclass(frozen=True)
class PathBatch:
    """N polylines padded to P points by repeating their last point.

    points: (N, P, 2) m; s: (N, P) m cumulative arc length (constant over the padding); count: (N,) real
    points per row (>= 2).
    """

    points: np.ndarray
    s: np.ndarray
    count: np.ndarray

    @classmethod
    def of(cls, polylines: Sequence[np.ndarray], arc_lengths: Sequence[np.ndarray] | None = None) -> PathBatch:
        """Pad ``polylines`` (each (Pi, 2), Pi >= 2); ``arc_lengths`` (each (Pi,)) if already known."""
        n = len(polylines)
        if n == 0:
            return cls(np.zeros((0, 2, 2)), np.zeros((0, 2)), np.zeros(0, np.int64))
        count = np.fromiter(map(len, polylines), np.int64, n)
        if arc_lengths is None:
            arc_lengths = [geometry.polyline_lengths(line) for line in polylines]
        rows, cols = _padded_index(count)
        points = np.repeat(np.array([line[-1] for line in polylines])[:, None], int(count.max()), 1)
        points[rows, cols] = np.concatenate(polylines)
        s = np.repeat(np.array([arc[-1] for arc in arc_lengths])[:, None], int(count.max()), 1)
        s[rows, cols] = np.concatenate(arc_lengths)
        return cls(points, s, count)

    @property
    def length_m(self) -> np.ndarray:
        """(N,) total length of each path."""
        return self.s[:, -1]

    def project(self, xy: np.ndarray, within: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Project point (N, 2) of each row onto its own path: arc length (N,), lateral offset (N,; + left).
        ``within`` (N,) limits each row to its first points (a known stretch: cheaper, and unambiguous)."""
        count = self.count if within is None else geometry.clamp(within, 2, self.count)
        width = int(count.max()) if len(count) else 2
        a, b = self.points[:, : width - 1], self.points[:, 1:width]
        ab = b - a
        len2 = np.einsum("nki,nki->nk", ab, ab)
        ap = xy[:, None, :] - a
        t = geometry.clamp(np.einsum("nki,nki->nk", ap, ab) / np.maximum(len2, 1e-12), 0.0, 1.0)
        off = ap - t[..., None] * ab
        dist2 = np.einsum("nki,nki->nk", off, off)
        dist2[np.arange(a.shape[1])[None] >= (count - 1)[:, None]] = np.inf  # padding or out of reach
        seg = dist2.argmin(1)
        rows = np.arange(len(xy))
        seg_len = np.sqrt(len2[rows, seg])
        s = self.s[rows, seg] + t[rows, seg] * seg_len
        direction = ab[rows, seg] / np.maximum(seg_len, 1e-12)[:, None]
        rel = ap[rows, seg]
        lateral = direction[:, 0] * rel[:, 1] - direction[:, 1] * rel[:, 0]
        return s, lateral

    def _locate(self, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Segment index (N, K) and fraction (N, K) of arc lengths ``targets`` (N, K), clipped to the path."""
        n, width = self.s.shape
        span = float(self.s.max()) + 1.0 if self.s.size else 1.0
        offset = np.arange(n)[:, None] * span
        flat = (self.s + offset).ravel()
        clipped = geometry.clamp(targets, 0.0, self.length_m[:, None])
        idx = np.searchsorted(flat, (clipped + offset).ravel(), side="right").reshape(targets.shape) - 1
        idx = geometry.clamp(idx - np.arange(n)[:, None] * width, 0, (self.count - 2)[:, None])
        s0 = np.take_along_axis(self.s, idx, 1)
        s1 = np.take_along_axis(self.s, idx + 1, 1)
        frac = geometry.clamp((clipped - s0) / np.maximum(s1 - s0, 1e-12), 0.0, 1.0)
        return idx, frac, clipped

    def interpolate(self, targets: np.ndarray) -> np.ndarray:
        """Points (N, K, 2) at arc lengths ``targets`` (N, K) along each row's path (clipped to its ends)."""
        idx, frac, _ = self._locate(targets)
        p0 = np.take_along_axis(self.points, idx[..., None], 1)
        p1 = np.take_along_axis(self.points, idx[..., None] + 1, 1)
        return p0 + frac[..., None] * (p1 - p0)

    def sample(self, values: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """Per-point ``values`` (N, P) linearly interpolated at arc lengths ``targets`` (N, K)."""
        idx, frac, _ = self._locate(targets)
        v0 = np.take_along_axis(values, idx, 1)
        v1 = np.take_along_axis(values, idx + 1, 1)
        return v0 + frac * (v1 - v0)

    def pad(self, values: Sequence[np.ndarray]) -> np.ndarray:
        """Per-point values (each (Pi,)) of the rows padded like the points: (N, P)."""
        out = np.repeat(np.array([v[-1] for v in values], float)[:, None], self.s.shape[1], 1)
        rows, cols = _padded_index(self.count)
        out[rows, cols] = np.concatenate(values)
        return out


def _padded_index(count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row and column (each (sum(count),)) of every real entry of rows with ``count`` entries each."""
    rows = np.repeat(np.arange(len(count)), count)
    cols = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    return rows, cols
