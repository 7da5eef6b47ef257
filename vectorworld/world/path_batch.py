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
        count = np.array([len(p) for p in polylines], dtype=np.int64)
        width = int(count.max()) if n else 2
        points = np.empty((n, width, 2))
        s = np.empty((n, width))
        for row, line in enumerate(polylines):
            k = len(line)
            points[row, :k], points[row, k:] = line, line[-1]
            arc = geometry.polyline_lengths(line) if arc_lengths is None else arc_lengths[row]
            s[row, :k], s[row, k:] = arc, arc[-1]
        return cls(points, s, count)

    @property
    def length_m(self) -> np.ndarray:
        """(N,) total length of each path."""
        return self.s[:, -1]

    def project(self, xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Project point (N, 2) of each row onto its own path: arc length (N,), lateral offset (N,; + left)."""
        a, b = self.points[:, :-1], self.points[:, 1:]
        ab = b - a
        len2 = np.einsum("nki,nki->nk", ab, ab)
        ap = xy[:, None, :] - a
        t = np.clip(np.einsum("nki,nki->nk", ap, ab) / np.maximum(len2, 1e-12), 0.0, 1.0)
        off = ap - t[..., None] * ab
        dist2 = np.einsum("nki,nki->nk", off, off)
        dist2[np.arange(a.shape[1])[None] >= (self.count - 1)[:, None]] = np.inf  # padding
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
        clipped = np.clip(targets, 0.0, self.length_m[:, None])
        idx = np.searchsorted(flat, (clipped + offset).ravel(), side="right").reshape(targets.shape) - 1
        idx = np.clip(idx - np.arange(n)[:, None] * width, 0, (self.count - 2)[:, None])
        s0 = np.take_along_axis(self.s, idx, 1)
        s1 = np.take_along_axis(self.s, idx + 1, 1)
        frac = np.clip((clipped - s0) / np.maximum(s1 - s0, 1e-12), 0.0, 1.0)
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
        out = np.empty(self.s.shape)
        for row, v in enumerate(values):
            out[row, : len(v)], out[row, len(v):] = v, v[-1]
        return out
