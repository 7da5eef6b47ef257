"""Route targets of DeltaSim: points at fixed distances along each agent's route path, in its own frame.

For each agent with a route, its route lanes are joined into one path (cached per route by
:class:`policies.route_paths.RoutePaths`, which the junction stops share), the agent is projected onto it, and the path
points ``d`` metres further along (d in ROUTE_AHEAD_M) are the targets: a direct lane-keeping and turning
cue (through a 90-degree junction turn the targets at 10-30 m lie to the side, not ahead). With each target
comes the lowest speed cap of the path since the previous target (the lane speed limit, and the curve
speed sqrt(a_lat / curvature) at IDM's comfortable lateral acceleration; :class:`policies.idm.PathProfile`),
far enough ahead (60 m) to brake from urban speeds for a junction turn. Targets beyond the end of the
known road, and all targets of agents without a route, are marked invalid.

A route starts with the agent's current lane, so the projection is searched on that first lane, and only
the path prefix the targets can reach (first lane + the farthest distance) is kept, cached per route: the
per-step cost does not grow with how far ahead the routes are known. The prefixes of a batch are kept as
padded rows from one step to the next (rows rewritten where an agent's route changed), and where along its
row each target lies is one binary search for the whole batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from policies.base import PolicyInput
from policies.route_paths import PathProfile, RoutePaths
from vectorworld import geometry

ROUTE_AHEAD_M = (0.0, 3.0, 6.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0)
"""Distances (m) along the route from the agent's projection onto it."""
PATCH_ROWS = 8
"""At most this many changed routes are patched into last step's padded rows; more: rebuilt."""


@dataclass(frozen=True)
class RouteFix:
    """Where S agents stand on their routes: ``profiles`` (S,) route path with IDM's junction entry (None
    without a route), arc position ``s_m`` (S,) m on it (NaN without a route), route ``targets`` (S, R, 2) m in
    each agent's frame, their validity ``valid`` (S, R) and speed caps ``cap_mps`` (S, R) (the lowest cap of
    the path from the previous target, or the agent, to this one; 0 where invalid), and ``connector_m`` (S,)
    m, how far along the route the entry of the profile's first junction connector lies ahead of the agent
    (``profile.connector_s - s_m``; negative once past it; inf without a route or connector)."""

    profiles: list[PathProfile | None]
    s_m: np.ndarray
    targets: np.ndarray
    valid: np.ndarray
    cap_mps: np.ndarray
    connector_m: np.ndarray


class RouteTargets:
    """Computes route targets for batches of agents; caches each route's path prefix."""

    def __init__(self, core: RoutePaths, distances: tuple[float, ...] = ROUTE_AHEAD_M) -> None:
        self.core = core
        self.distances = np.asarray(distances, dtype=np.float64)
        self._prefixes: dict[tuple[int, ...], tuple[PathProfile, tuple[np.ndarray, np.ndarray, np.ndarray, int]]] = {}
        self._last_rows: tuple[list[PathProfile], tuple[np.ndarray, ...]] | None = None

    def reset(self) -> None:
        self._prefixes.clear()
        self._last_rows = None

    def _prefix(self, profile: PathProfile) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """Points (P, 2), arc lengths (P,) and speed caps (P,) of the reachable prefix of the profile's path,
        and the number of points of its first lane (>= 2)."""
        path = profile.path
        hit = self._prefixes.get(path.lane_ids)
        if hit is None or hit[0] is not profile:  # a lane of the route changed: the core built a new profile
            first = max(int(np.count_nonzero(path.lane_index == 0)), 2)
            reach = path.s[first - 1] + float(self.distances.max())
            end = min(int(np.searchsorted(path.s, reach, side="right")) + 1, len(path.s))
            hit = (profile, (path.points[:end], path.s[:end], profile.cap[:end], first))
            if len(self._prefixes) > 4096:
                self._prefixes.clear()
            self._prefixes[path.lane_ids] = hit
        return hit[1]

    def _rows(self, profiles: list[PathProfile]) -> tuple[np.ndarray, ...]:
        """The prefixes of ``profiles`` (n of them) as padded rows: point count (n,), first-lane point count
        (n,), points (n, W, 2) (the last point repeated), arc lengths (n, W) and caps (n, W) (inf beyond the
        last point), the arc position (n,) of each first junction connector (inf: none), and the search keys
        (n * W,) complex ``row + 1j * arc length`` (ascending). Kept while the next call asks for the same
        profiles (the same objects, in order); where only a few of them changed (an agent entered its next
        lane), those rows are rewritten in place."""
        hit = self._last_rows
        if hit is not None and len(hit[0]) == len(profiles):
            changed = [r for r, (old, new) in enumerate(zip(hit[0], profiles, strict=True)) if old is not new]
            if not changed:
                return hit[1]
            if len(changed) <= PATCH_ROWS and self._patch(hit[1], profiles, changed):
                self._last_rows = (profiles, hit[1])
                return hit[1]
        prefixes = [self._prefix(p) for p in profiles]
        n = len(prefixes)
        count = np.fromiter((len(p[1]) for p in prefixes), np.int64, n)
        first = np.fromiter((p[3] for p in prefixes), np.int64, n)
        col = np.arange(int(count.max()))
        src = (np.cumsum(count) - count)[:, None] + np.minimum(col, count[:, None] - 1)   # (n, W)
        beyond = col >= count[:, None]
        pts = np.concatenate([p[0] for p in prefixes])[src]                              # (n, W, 2)
        arc = np.concatenate([p[1] for p in prefixes])[src]
        arc[beyond] = np.inf
        cap = np.concatenate([p[2] for p in prefixes])[src]
        cap[beyond] = np.inf
        connector_s = np.fromiter((p.connector_s if p.connector >= 0 else np.inf for p in profiles), np.float64, n)
        keys = np.empty(arc.shape, np.complex128)
        keys.real, keys.imag = np.arange(n)[:, None], arc
        rows = (count, first, pts, arc, cap, connector_s, keys.ravel())
        self._last_rows = (profiles, rows)
        return rows

    def _patch(self, rows: tuple[np.ndarray, ...], profiles: list[PathProfile], changed: list[int]) -> bool:
        """Rewrite the rows ``changed`` of the padded ``rows`` (see :meth:`_rows`) in place for ``profiles``;
        False (nothing written) when a new prefix is longer than the rows are wide."""
        count, first, pts, arc, cap, connector_s, keys = rows
        width = arc.shape[1]
        prefixes = [self._prefix(profiles[r]) for r in changed]
        if max(len(p[1]) for p in prefixes) > width:
            return False
        flat_keys = keys.reshape(arc.shape)
        for r, (p, s, c, f) in zip(changed, prefixes, strict=True):
            size = len(s)
            pts[r, :size], pts[r, size:] = p, p[-1]
            arc[r, :size], arc[r, size:] = s, np.inf
            cap[r, :size], cap[r, size:] = c, np.inf
            flat_keys[r].imag = arc[r]
            count[r], first[r] = size, f
            profile = profiles[r]
            connector_s[r] = profile.connector_s if profile.connector >= 0 else np.inf
        return True

    def __call__(self, inp: PolicyInput, slots: np.ndarray) -> RouteFix:
        """Route profiles, arc positions and targets of the agents in ``slots`` (S,)."""
        a = inp.agents
        s_count, r_count = len(slots), len(self.distances)
        out = np.zeros((s_count, r_count, 2))
        valid = np.zeros((s_count, r_count), bool)
        s_all = np.full(s_count, np.nan)
        caps = np.zeros((s_count, r_count))
        profiles = self.core.profiles(inp, a.id[slots].tolist())
        routed = [k for k, p in enumerate(profiles) if p is not None]
        if not routed:
            return RouteFix(profiles, s_all, out, valid, caps, np.full(s_count, np.inf))
        rows = np.array(routed, np.int64)
        count, first, pts, arc, cap, connector_s, keys = self._rows([profiles[k] for k in routed])
        n, width = len(rows), arc.shape[1]
        col = np.arange(width)
        xy, yaw = a.xy[slots[rows]], a.yaw[slots[rows]]
        # Projection onto the first lane's segments.
        f = min(int(first.max()), width)
        seg_a, seg = pts[:, :f - 1], pts[:, 1:f] - pts[:, :f - 1]                # (n, f-1, 2)
        len2 = np.maximum(np.einsum("nki,nki->nk", seg, seg), 1e-12)
        rel = xy[:, None] - seg_a
        t = geometry.clamp(np.einsum("nki,nki->nk", rel, seg) / len2, 0.0, 1.0)
        off = rel - t[..., None] * seg
        dist2 = np.einsum("nki,nki->nk", off, off)
        dist2[col[None, :f - 1] >= (first - 1)[:, None]] = np.inf
        k = dist2.argmin(1)
        i = np.arange(n)
        s_now = arc[i, k] + t[i, k] * np.sqrt(len2[i, k])
        # Interpolation along the prefix at s_now + d.
        target = s_now[:, None] + self.distances[None]                            # (n, R)
        last = arc[i, count - 1]
        ok = target <= last[:, None] + 1e-6
        clipped = np.minimum(target, last[:, None])
        # Path points up to the agent and up to each target (the same up to the clipped target: no point lies
        # beyond the last one): one search of (row, arc length) keys for all rows, ordered as complex numbers
        # (real part first).
        query = np.empty((n, len(self.distances) + 1), np.complex128)
        query.real, query.imag = i[:, None], s_now[:, None]
        query.imag[:, 1:] += self.distances[None]                                  # == target
        upto = np.searchsorted(keys, query.ravel(), side="right").reshape(n, -1) - (i * width)[:, None]
        idx = geometry.clamp(upto[:, 1:] - 1, 0, (count - 2)[:, None])                    # (n, R)
        row = i[:, None]
        s0, s1 = arc[row, idx], arc[row, idx + 1]
        frac = geometry.clamp((clipped - s0) / np.maximum(s1 - s0, 1e-12), 0.0, 1.0)
        p0, p1 = pts[row, idx], pts[row, idx + 1]
        d = p0 + frac[..., None] * (p1 - p0) - xy[:, None]                         # (n, R, 2) global offsets
        c, s = np.cos(yaw)[:, None], np.sin(yaw)[:, None]
        out[rows] = np.stack([c * d[..., 0] + s * d[..., 1], -s * d[..., 0] + c * d[..., 1]], -1) * ok[..., None]
        valid[rows] = ok
        s_all[rows] = s_now
        # Lowest cap per stretch: points after the previous target (the agent for the first) up to this one,
        # plus the cap interpolated at the target itself (a stretch may hold no path point). The stretch from
        # the previous target to this one holds the points upto[:, j] .. upto[:, j + 1] - 1: one minimum per
        # run of the flattened caps (runs of the row ends are dropped; an empty run reads inf).
        bounds = (i * width)[:, None] + upto                                        # (n, R + 1)
        runs = np.minimum.reduceat(np.append(cap.ravel(), np.inf), bounds.ravel()).reshape(n, -1)[:, :-1]
        stretch = np.where(upto[:, 1:] > upto[:, :-1], runs, np.inf)
        cap0, cap1 = cap[row, idx], cap[row, idx + 1]
        lowest = np.minimum(stretch, cap0 + frac * (cap1 - cap0))
        caps[rows] = np.where(ok, lowest, 0.0)
        connector = np.full(s_count, np.inf)
        connector[rows] = connector_s - s_now
        return RouteFix(profiles, s_all, out, valid, caps, connector)
