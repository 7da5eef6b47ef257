"""The validity filter's rules on single lanes, in the tile frame (m): which decoded lanes to drop as
duplicates (of known lanes, of each other, or on top of a lane the other way), loops, kinks, cuts across a
known road, ends pinching a two-way road shut, or hooks at a joint; and the known lanes as the references
these rules test against. :mod:`stitching` applies them and judges the candidate."""

from __future__ import annotations

import numpy as np

from vectorworld import geometry
from vectorworld.generation.learned.filter_config import CandidateCheck, FrontierPort, KnownLanes, StitchConfig


def end_yaws(lanes: np.ndarray, at_end: bool) -> np.ndarray:
    """Heading (K,) at the start or end of fixed-size polylines (K, P, 2)."""
    d = lanes[:, -1] - lanes[:, -3] if at_end else lanes[:, 2] - lanes[:, 0]
    return np.arctan2(d[:, 1], d[:, 0])


def _point_headings(lanes: np.ndarray) -> np.ndarray:
    """Heading (K, P) at every vertex of polylines (K, P, 2) (central differences)."""
    g = np.gradient(lanes, axis=1)
    return np.arctan2(g[..., 1], g[..., 0])


_PROBE = slice(1, None, 2)
"""The lane vertices probed by the duplicate test (every other one)."""


def _blocks(points: np.ndarray, size: int) -> np.ndarray:
    """Points (N, 2) in blocks of ``size`` consecutive ones (B, size, 2), the last one padded far away."""
    pad = -len(points) % size
    if pad:
        points = np.concatenate([points, np.full((pad, 2), 1e9)])
    return points.reshape(-1, size, 2)


def _near_pairs(probe: np.ndarray, probe_yaw: np.ndarray, points: np.ndarray, yaw: np.ndarray,
                config: StitchConfig, per_probe: int, per_point: int, skip_own: bool = False
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The pairs of probe point s and point m that lie within reach (``overlap_m`` or ``opposed_m``) of each
    other, as indices (n,) twice, and whether each pair is aligned (within ``overlap_m``, headings within
    ``connect_yaw_rad``) or opposed (within ``opposed_m``, heading the other way within ``connect_yaw_rad`` of a
    U-turn), (n,) bool twice. Probes come ``per_probe`` and points ``per_point`` to a lane; distances are
    measured only between half lanes whose bounding boxes come within reach, and never within one lane when
    ``skip_own`` (probe lane i and point lane i are the same). Headings are compared for the close pairs only."""
    reach = max(config.overlap_m, config.opposed_m)
    pieces = 2 if per_probe % 2 == 0 and per_point % 2 == 0 else 1      # half lanes have tighter boxes
    probe_block, point_block = per_probe // pieces, per_point // pieces
    probes, blocks = _blocks(probe, probe_block), _blocks(points, point_block)
    p_lo, p_hi = probes.min(1), probes.max(1)
    q_lo, q_hi = blocks.min(1) - reach, blocks.max(1) + reach
    overlap = ((p_lo[:, None, 0] <= q_hi[None, :, 0]) & (p_hi[:, None, 0] >= q_lo[None, :, 0])
               & (p_lo[:, None, 1] <= q_hi[None, :, 1]) & (p_hi[:, None, 1] >= q_lo[None, :, 1]))
    bi, bj = np.nonzero(overlap)
    if skip_own:
        other = bi * probe_block // per_probe != bj * point_block // per_point
        bi, bj = bi[other], bj[other]
    a, b = probes[bi], blocks[bj]                                                    # (n, Bs, 2), (n, Bm, 2)
    dx = a[:, :, None, 0] - b[:, None, :, 0]
    dy = a[:, :, None, 1] - b[:, None, :, 1]
    d2 = dx * dx + dy * dy
    pair, i, j = np.nonzero(d2 < reach ** 2)
    s, m, close = bi[pair] * probe_block + i, bj[pair] * point_block + j, d2[pair, i, j]
    cos = np.cos(probe_yaw[s]) * np.cos(yaw[m]) + np.sin(probe_yaw[s]) * np.sin(yaw[m])
    limit = np.cos(config.connect_yaw_rad)
    return s, m, (close < config.overlap_m ** 2) & (cos > limit), (close < config.opposed_m ** 2) & (cos < -limit)


def _probe_shares(probe: np.ndarray, lane: np.ndarray, k: int, per_lane: int, lanes: int) -> np.ndarray:
    """(k, lanes): the share of lane i's ``per_lane`` probes that have a pair (``probe`` (n,), the probe's
    index, lane i's probes numbered i * per_lane ...) with a point of lane j (``lane`` (n,))."""
    hit = np.zeros((k * per_lane, lanes), bool)
    hit[probe, lane] = True
    return hit.reshape(k, per_lane, lanes).mean(1)


def lanes_reference(lanes: np.ndarray) -> KnownLanes:
    """Known lanes as fixed-size polylines (K, P, 2) -> points and headings for the duplicate test."""
    return KnownLanes(lanes.reshape(-1, 2), _point_headings(lanes).reshape(-1),
                      np.stack([lanes[:, :-1], lanes[:, 1:]], 2).reshape(-1, 2, 2))


def dense_reference(lanes: list[np.ndarray], spacing_m: float = 1.0) -> KnownLanes:
    """Known lanes as ragged polylines, densified at ``spacing_m`` (for the duplicate test)."""
    if not lanes:
        return KnownLanes(np.zeros((0, 2)), np.zeros(0))
    pts, yaws, segments = [], [], []
    for lane in lanes:
        dense = geometry.resample_by_spacing(lane, spacing_m)
        pts.append(dense)
        yaws.append(geometry.polyline_headings(dense))
        segments.append(np.stack([lane[:-1], lane[1:]], 1))
    return KnownLanes(np.concatenate(pts), np.concatenate(yaws), np.concatenate(segments))


def crossing_lanes(lanes: np.ndarray, known: KnownLanes, config: StitchConfig) -> np.ndarray:
    """(K,) bool: lanes (K, P, 2) whose centreline crosses a known lane's farther than ``cross_clear_m``
    along it from both of its own ends: a new road cutting across another tile's road. (A lane that starts
    or ends on a known one meets it within that distance of its end.) Only the known segments inside a
    lane's bounding box are tested."""
    out = np.zeros(len(lanes), bool)
    if len(lanes) == 0 or len(known.segments) == 0:
        return out
    seg = known.segments
    lo, hi = lanes.min(1), lanes.max(1)                                              # (K, 2)
    seg_lo, seg_hi = np.minimum(seg[:, 0], seg[:, 1]), np.maximum(seg[:, 0], seg[:, 1])
    near = ((seg_lo[None, :, 0] <= hi[:, None, 0]) & (seg_hi[None, :, 0] >= lo[:, None, 0])     # (K, S)
            & (seg_lo[None, :, 1] <= hi[:, None, 1]) & (seg_hi[None, :, 1] >= lo[:, None, 1]))
    lane, which = np.nonzero(near)
    if len(lane) == 0:
        return out
    a, r = lanes[lane, :-1], np.diff(lanes, axis=1)[lane]                            # (M, P-1, 2)
    c, q = seg[which, 0][:, None], (seg[which, 1] - seg[which, 0])[:, None]          # (M, 1, 2)
    t, u, denom = geometry.segment_crossing(a, r, c, q)
    skew = np.abs(denom) > 1e-9                                                      # parallel segments never cross
    hit = skew & (t >= 0.0) & (t <= 1.0) & (u >= 0.0) & (u <= 1.0)
    step = geometry.norms(r)
    s_at = np.cumsum(step, 1) - step + t * step                                      # arc length of the crossing
    away = (s_at > config.cross_clear_m) & (s_at < step.sum(1, keepdims=True) - config.cross_clear_m)
    out[lane[(hit & away).any(1)]] = True
    return out


def duplicate_lanes(lanes: np.ndarray, known: KnownLanes, config: StitchConfig,
                    first: np.ndarray | None = None) -> np.ndarray:
    """Which lanes (K, P, 2) to drop (K,) bool: a lane is a duplicate if more than ``overlap_fraction`` of
    its probed vertices lie close to and aligned with a known lane, or with a lane kept before it, or close to
    one such lane the other way (``opposed_m``); shorter than ``min_length_m`` counts as a duplicate too. Lanes
    flagged in ``first`` (K,) bool (the ones closing a required port) are considered first, so of two
    overlapping lanes the one that closes a port stays; they are never duplicates of a known lane, and aligned
    duplicates of another lane only if both ends coincide (two ports merging into one lane are two lanes)."""
    k, p = lanes.shape[:2]
    if k == 0:
        return np.zeros(0, bool)
    yaw = _point_headings(lanes)
    probe, probe_yaw = lanes[:, _PROBE].reshape(-1, 2), yaw[:, _PROBE].reshape(-1)
    per_lane = len(range(p)[_PROBE])
    drop = geometry.polyline_lengths(lanes)[:, -1] < config.min_length_m
    if len(known.points):  # a lane that closes a port is kept even where it runs along a known lane (a merge)
        s, _, aligned, opposed = _near_pairs(probe, probe_yaw, known.points, known.headings, config, per_lane, p)
        one_lane = np.zeros(len(s), int)      # the known points taken as one lane
        dup_known = ((_probe_shares(s[aligned], one_lane[aligned], k, per_lane, 1)[:, 0] > config.overlap_fraction)
                     | (_probe_shares(s[opposed], one_lane[opposed], k, per_lane, 1)[:, 0] > config.overlap_fraction))
        drop |= dup_known if first is None else dup_known & ~first
    s, m, aligned, opposed = _near_pairs(probe, probe_yaw, lanes.reshape(-1, 2), yaw.reshape(-1), config,
                                         per_lane, p, skip_own=True)
    # fraction[i, j]: share of lane i's probes near (aligned with) lane j (never itself); against: near it the
    # other way
    fraction = _probe_shares(s[aligned], m[aligned] // p, k, per_lane, k)
    against = _probe_shares(s[opposed], m[opposed] // p, k, per_lane, k)
    duplicates = fraction > config.overlap_fraction      # (i, j): lane i duplicates lane j, were j kept
    if first is not None:  # a port closer only duplicates a lane on its ends
        ends_meet = ((geometry.norms(lanes[None, :, 0] - lanes[:, None, 0]) < config.connect_m)
                     & (geometry.norms(lanes[None, :, -1] - lanes[:, None, -1]) < config.connect_m))
        duplicates &= ~first[:, None] | ends_meet
    duplicates |= against > config.overlap_fraction
    rows, dropped = duplicates.tolist(), drop.tolist()
    kept: list[int] = []
    for i in (range(k) if first is None else np.argsort(~first, kind="stable").tolist()):
        if dropped[i]:
            continue
        if any(rows[i][j] for j in kept):
            drop[i] = True
            continue
        kept.append(i)
    return drop


def pinched_lanes(lanes: np.ndarray, alive: np.ndarray, first: np.ndarray, config: StitchConfig) -> np.ndarray:
    """(K,) bool: lanes (K, P, 2) to drop so that no end of a lane still ``alive`` (K,) lies within ``pinch_m``
    of the start of one the other way (see :attr:`StitchConfig.pinch_m`); of each such pair the one not in
    ``first`` (K,) (closing a port) goes, else the later one."""
    drop = np.zeros(len(lanes), bool)
    if len(lanes) < 2:
        return drop
    gap = np.linalg.norm(lanes[:, None, -1] - lanes[None, :, 0], axis=-1)                       # end i, start j
    turn = np.abs(geometry.wrap_angle(end_yaws(lanes, True)[:, None] - end_yaws(lanes, False)[None]))
    pinch = (gap < config.pinch_m) & (turn > np.pi - config.connect_yaw_rad) & alive[:, None] & alive[None]
    np.fill_diagonal(pinch, False)
    for i, j in zip(*np.nonzero(pinch), strict=True):
        if drop[i] or drop[j]:
            continue
        drop[(j if first[i] else i) if first[i] != first[j] else max(i, j)] = True
    return drop


def looped_lanes(lanes: np.ndarray, config: StitchConfig) -> np.ndarray:
    """(K,) bool: lanes (K, P, 2) whose heading turns more than ``max_turn_rad`` in all."""
    if len(lanes) == 0:
        return np.zeros(0, bool)
    return total_turn(lanes) > config.max_turn_rad


def total_turn(lanes: np.ndarray) -> np.ndarray:
    """How much polylines (K, P, 2) turn in all (K,) rad: the summed |heading change| between segments."""
    seg = np.diff(lanes, axis=1)
    heading = np.arctan2(seg[..., 1], seg[..., 0])
    return np.abs(geometry.wrap_angle(np.diff(heading, axis=1))).sum(1)


def kinked_lanes(lanes: np.ndarray, config: StitchConfig) -> np.ndarray:
    """(K,) bool: lanes (K, P, 2) whose mean |curvature| over the inner vertices exceeds
    ``max_mean_curvature``."""
    if len(lanes) == 0:
        return np.zeros(0, bool)
    return geometry.curvature(lanes)[:, 1:-1].mean(1) > config.max_mean_curvature


def hooked_lanes(lanes: np.ndarray, check: CandidateCheck, ports: list[FrontierPort], config: StitchConfig
                 ) -> np.ndarray:
    """(K,) bool: stitched lanes (K, P, 2) (``check.keep`` order) whose end segment turns more than
    ``max_joint_turn_rad`` from their port's heading, or from the lane they join (``check.successors``; both
    lanes, unless one of them is hooked at a port already)."""
    head, tail = lanes[:, 1] - lanes[:, 0], lanes[:, -1] - lanes[:, -2]
    first, last = np.arctan2(head[:, 1], head[:, 0]), np.arctan2(tail[:, 1], tail[:, 0])
    hooked = np.zeros(len(lanes), bool)
    for pos, lane in check.port_links:
        port = ports[pos]
        hooked[lane] |= abs(geometry.wrap_angle((first if port.is_out else last)[lane] - port.yaw)) \
            > config.max_joint_turn_rad
    at_port = hooked.copy()
    for i, j in check.successors:
        if abs(geometry.wrap_angle(first[j] - last[i])) > config.max_joint_turn_rad and not (at_port[i] or at_port[j]):
            hooked[[i, j]] = True
    return hooked
