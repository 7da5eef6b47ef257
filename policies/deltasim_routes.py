"""Route targets of DeltaSim: points at fixed distances along each agent's route path, in its own frame.

For each agent with a route, its route lanes are joined into one path (cached per route by
:class:`policies.idm.IdmCore`, which the junction stops share), the agent is projected onto it, and the path
points ``d`` metres further along (d in ROUTE_AHEAD_M) are the targets: a direct lane-keeping and turning
cue (through a 90-degree junction turn the targets at 10-30 m lie to the side, not ahead). With each target
comes the lowest speed cap of the path since the previous target (the lane speed limit, and the curve
speed sqrt(a_lat / curvature) at IDM's comfortable lateral acceleration; :class:`policies.idm.PathProfile`),
far enough ahead (60 m) to brake from urban speeds for a junction turn. Targets beyond the end of the
known road, and all targets of agents without a route, are marked invalid.

A route starts with the agent's current lane, so the projection is searched on that first lane, and only
the path prefix the targets can reach (first lane + the farthest distance) is kept, cached per route: the
per-step cost does not grow with how far ahead the routes are known.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from policies.base import PolicyInput
from policies.idm import IdmCore, PathProfile

ROUTE_AHEAD_M = (0.0, 3.0, 6.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0)
"""Distances (m) along the route from the agent's projection onto it."""


@dataclass(frozen=True)
class RouteFix:
    """Where S agents stand on their routes: ``profiles`` (S,) route path with IDM's junction entry (None
    without a route), arc position ``s_m`` (S,) m on it (NaN without a route), route ``targets`` (S, R, 2) m in
    each agent's frame, their validity ``valid`` (S, R) and speed caps ``cap_mps`` (S, R) (the lowest cap of
    the path from the previous target, or the agent, to this one; 0 where invalid)."""

    profiles: list[PathProfile | None]
    s_m: np.ndarray
    targets: np.ndarray
    valid: np.ndarray
    cap_mps: np.ndarray


class RouteTargets:
    """Computes route targets for batches of agents; caches each route's path prefix."""

    def __init__(self, core: IdmCore, distances: tuple[float, ...] = ROUTE_AHEAD_M) -> None:
        self.core = core
        self.distances = np.asarray(distances, dtype=np.float64)
        self._prefixes: dict[tuple[int, ...], tuple[PathProfile, tuple[np.ndarray, np.ndarray, np.ndarray, int]]] = {}

    def reset(self) -> None:
        self._prefixes.clear()

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

    def __call__(self, inp: PolicyInput, slots: np.ndarray) -> RouteFix:
        """Route profiles, arc positions and targets of the agents in ``slots`` (S,)."""
        a = inp.agents
        s_count, r_count = len(slots), len(self.distances)
        out = np.zeros((s_count, r_count, 2))
        valid = np.zeros((s_count, r_count), bool)
        s_all = np.full(s_count, np.nan)
        caps = np.zeros((s_count, r_count))
        profiles = self.core.profiles(inp, a.id[slots].tolist())
        rows = np.array([k for k, p in enumerate(profiles) if p is not None], np.int64)
        if len(rows) == 0:
            return RouteFix(profiles, s_all, out, valid, caps)
        prefixes = [self._prefix(profiles[k]) for k in rows]
        count = np.array([len(p[1]) for p in prefixes])
        first = np.array([p[3] for p in prefixes])
        n, width = len(rows), int(count.max())
        pts = np.empty((n, width, 2))
        arc = np.full((n, width), np.inf)
        cap = np.full((n, width), np.inf)
        for r, (p, s, c, _) in enumerate(prefixes):
            pts[r, :len(s)], pts[r, len(s):] = p, p[-1]
            arc[r, :len(s)] = s
            cap[r, :len(s)] = c
        xy, yaw = a.xy[slots[rows]], a.yaw[slots[rows]]
        # Projection onto the first lane's segments.
        f = int(first.max())
        seg_a, seg = pts[:, :f - 1], pts[:, 1:f] - pts[:, :f - 1]                # (n, f-1, 2)
        len2 = np.maximum(np.einsum("nki,nki->nk", seg, seg), 1e-12)
        rel = xy[:, None] - seg_a
        t = np.clip(np.einsum("nki,nki->nk", rel, seg) / len2, 0.0, 1.0)
        off = rel - t[..., None] * seg
        dist2 = np.einsum("nki,nki->nk", off, off)
        dist2[np.arange(f - 1)[None] >= (first - 1)[:, None]] = np.inf
        k = dist2.argmin(1)
        i = np.arange(n)
        s_now = arc[i, k] + t[i, k] * np.sqrt(len2[i, k])
        # Interpolation along the prefix at s_now + d.
        target = s_now[:, None] + self.distances[None]                            # (n, R)
        last = arc[i, count - 1]
        ok = target <= last[:, None] + 1e-6
        clipped = np.minimum(target, last[:, None])
        idx = np.clip((arc[:, None, :] <= clipped[..., None]).sum(-1) - 1, 0, (count - 2)[:, None])  # (n, R)
        s0, s1 = np.take_along_axis(arc, idx, 1), np.take_along_axis(arc, idx + 1, 1)
        frac = np.clip((clipped - s0) / np.maximum(s1 - s0, 1e-12), 0.0, 1.0)
        p0 = np.take_along_axis(pts, idx[..., None], 1)
        p1 = np.take_along_axis(pts, idx[..., None] + 1, 1)
        d = p0 + frac[..., None] * (p1 - p0) - xy[:, None]                         # (n, R, 2) global offsets
        c, s = np.cos(yaw)[:, None], np.sin(yaw)[:, None]
        out[rows] = np.stack([c * d[..., 0] + s * d[..., 1], -s * d[..., 0] + c * d[..., 1]], -1) * ok[..., None]
        valid[rows] = ok
        s_all[rows] = s_now
        # Lowest cap per stretch: points after the previous target (the agent for the first) up to this one,
        # plus the cap interpolated at the target itself (a stretch may hold no path point).
        before = np.concatenate([s_now[:, None], target[:, :-1]], 1)
        inside = (arc[:, None, :] > before[..., None]) & (arc[:, None, :] <= target[..., None])  # (n, R, W)
        at = np.take_along_axis(cap, idx, 1) + frac * (np.take_along_axis(cap, idx + 1, 1)
                                                       - np.take_along_axis(cap, idx, 1))
        lowest = np.minimum(np.where(inside, cap[:, None, :], np.inf).min(-1), at)
        caps[rows] = np.where(ok, lowest, 0.0)
        return RouteFix(profiles, s_all, out, valid, caps)
