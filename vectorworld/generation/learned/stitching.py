"""Validity filter and stitching of decoded candidate lanes, in the tile frame (m).

A candidate's new lanes are checked against the frontier (ports: where the known world's lanes must
continue) and the known lanes:

* duplicates of known lanes (most points within ``overlap_m`` and aligned, or within ``opposed_m`` of a
  lane the other way) are dropped;
* every must-connect port needs a new lane starting (out port) or ending (in port) near it;
* every new lane start / end must be at a port, at another new lane's end / start, or at the tile border
  (otherwise it dangles inside the tile);
* no more lane ends meet at one point than at a real junction (a knot).

Stitching works on the winner's Bézier control points: each lane end moves with its handle exactly onto its
joint node (a port, a shared junction point, the border), so the rest of the lane keeps its shape and the
continuity gap at a link is exactly zero (up to float rounding), and the handles at a node are set along one
heading (the port's, else the mean of the lanes meeting there): no kink across a link, no hook into it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vectorworld import geometry
from vectorworld.generation.learned.bezier import MIN_HANDLE_M, bezier_points
from vectorworld.generation.learned.tile_tensors import HALF_TILE_M, LANE_POINTS


@dataclass(frozen=True)
class StitchConfig:
    """Tolerances of the validity filter (m, rad)."""

    connect_m: float = 3.0
    join_along_m: float = 5.0
    join_lateral_m: float = 1.5
    """A lane end joins a lane start when the start lies within ``join_lateral_m`` of the line through the end
    along its heading and within ``join_along_m`` along it (headings within ``connect_yaw_rad``): a decoded
    end stops short of or overshoots its joint along the road, while a lateral offset of a lane width is the
    next lane. Stitching moves joined ends onto their mean. (Ports, exact by pinning, use ``connect_m``.)"""
    connect_yaw_rad: float = 0.6
    border_m: float = 6.0
    border_reach_m: float = 16.0
    """A free lane end farther than ``border_m`` from the border still ends there when its own heading (for
    a start: backwards) reaches the border within this distance: the decoded Bézier stopped short of where
    the road leaves the tile (training lanes are cut at the border), and stitching extends it straight to
    the border. 0 switches the rule off."""
    overlap_m: float = 1.2
    overlap_fraction: float = 0.5
    opposed_m: float = 2.0
    """A lane whose points mostly run this close to a lane of the opposite direction lies on top of it (the two
    lanes of a two-way road are a lane width apart, 3.5 m in the city): a duplicate too. Two such lanes 0.9 m
    apart met head-on in a learned world's rollout."""
    pinch_m: float = 2.5
    """A new lane end closer than this to the start of a new lane the other way (within ``connect_yaw_rad`` of
    a U-turn) pinches a two-way road shut there: where that is the tile border, the next tile gets two ports
    the other way round this close, and every sample continuing both is an opposed duplicate (on 200 held-out
    tiles, 69 of 101 failed samples left such a port pair open, 1.5-2 m apart, asked for again and again).
    The lane that closes no port (else the later one) is dropped. Two 2 m-wide cars pass at 2.5 m."""
    min_length_m: float = 3.0
    max_turn_rad: float = 4.0
    """A lane whose heading turns more than this in all (summed along it) is a loop, not a road: dropped
    (U-turns turn pi; a decoded Bézier can curl into a 12 m loop that traffic cannot drive)."""
    max_mean_curvature: float = 0.25
    """A lane that bends more on average (mean |curvature|, 1/m) is a kink, not a road: dropped. The city
    corpus' tightest lane averages 0.22 (a corner of 4.6 m radius); one-step samples have a tail of short
    lanes curled at 0.5-1.6 that dominated the generated worlds' curvature statistic. A lane that closes a
    required port is spared (on 3 x 200 held-out tiles fallback 6.3% without the rule, 9.5% with it for
    every lane, 5.0% sparing port lanes; lane Frechet 5.0, 2.5, 3.0)."""
    short_handle: float = 0.15
    """A Bézier handle shorter than this share of its lane's chord is a hook (the curve turns within its
    last metre), not a heading: stitching takes the heading from the lane's body and lengthens the handle."""
    max_joint_turn_rad: float = 0.8
    """A stitched lane whose first (last) polyline segment turns more than this from the heading of its port or
    of the lane it continues (leads into) hooks back within its first metres: the handle points along the
    joint, and the curve turns round within one sample step (a rollout's lane left its port at 2.5 rad to the
    port's heading, a hairpin that a car overshot and the ego then hit). City lanes turn by at most
    0.42 rad over a first segment (a 3.3 m radius over 2.8 m)."""
    knot_radius_m: float = 1.5
    max_ends_at_point: int = 6
    """More than this many kept lane ends within ``knot_radius_m`` of one of them is a knot, not a junction
    (city data: at most 4, an arriving lane and its three connectors): the candidate is invalid. A loss that
    rewards lane ends for meeting can draw every lane into one point, which the other rules pass."""
    cross_clear_m: float = 2.0
    """A new lane that crosses a known lane farther than this (along it) from both of its ends cuts across another
    tile's road (the procedural generator never does; a one-step sample over a neighbour's road did in 44 of
    63 tiles of a rollout, and traffic jammed at the crossings): it is dropped, unless it closes a port and
    ``cross_spares_ports`` is on."""
    cross_spares_ports: bool = True
    """A lane that closes a required port is kept even where it crosses a known lane (the world makes the
    crossing a junction, or refuses the tile next to moving traffic and asks again later). Without this, in 1
    km rollouts (``mid_req``, seeds 0-19) 27% of the tiles were fallbacks, most for a port lane crossing a
    known road in the dense worlds around the ego; with it 9%, 0 ego collisions, 148 simulated s per km
    (137 without; procedural 158)."""
    prune_spurs: bool = True
    """Drop new lanes with a dangling end (repeatedly: a lane left dangling by that goes too) instead of
    rejecting the candidate; the verdict then rests on the ports still being continued. Off: the strict
    filter (any dangling end rejects), used to test the filter on ground truth."""


@dataclass(frozen=True)
class FrontierPort:
    """A place where a new lane may start (``is_out``: a known lane ends there) or end (a known lane starts
    there), in the tile frame: xy (2,) m, yaw rad (direction of travel).

    ``required`` ports must be continued by a new lane (the frontier's open ends); the others are joints
    a new lane may use (open ends deep in the known half, starts / ends of known lanes inside the tile: a
    new road merging into a known one). ``index`` points into the request's ports (-1 for a joint that is
    not an open port); ``lane_id`` is the known lane.
    """

    index: int
    xy: np.ndarray
    yaw: float
    is_out: bool
    required: bool = True
    lane_id: int = -1


@dataclass
class CandidateCheck:
    """Result of checking one candidate. ``keep`` indexes the candidate's lanes that survive."""

    keep: np.ndarray
    port_links: list[tuple[int, int]] = field(default_factory=list)
    """(position in the checked ports list, kept-lane position) pairs: the lane starts at (out port) / ends
    at (in port) that port. Several lanes may share one port (a junction fanning out at the frontier)."""
    successors: list[tuple[int, int]] = field(default_factory=list)
    """(i, j) kept-lane positions with end(i) joined to start(j)."""
    unmatched_ports: int = 0
    dangling: int = 0
    knotted: int = 0
    """Lane ends in the largest knot (:attr:`StitchConfig.max_ends_at_point`), 0 when there is none."""
    bent: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    """Checked lanes that stitching bent into a kink, dropped (:func:`check_and_stitch`)."""
    pruned: dict[str, int] = field(default_factory=dict)
    """Lanes the filter dropped, by reason: ``duplicate`` (of a known or kept lane, or too short), ``looped``,
    ``kinked`` (:attr:`StitchConfig.max_mean_curvature`), ``crossing`` a known lane
    (:attr:`StitchConfig.cross_clear_m`), ``pinched`` (:attr:`StitchConfig.pinch_m`), ``isolated`` (touching
    nothing at either end), ``spur`` (a dangling end, pruned until none is left), and ``bent`` by stitching into
    a kink, a loop, a stub, a hook, a pinch or across a known lane (:func:`check_and_stitch`)."""

    @property
    def valid(self) -> bool:
        return self.unmatched_ports == 0 and self.dangling == 0 and self.knotted == 0 and len(self.keep) > 0

    def score(self) -> tuple[float, ...]:
        """Larger is better: valid first, then no knot, fewer missing ports and dangling ends, more lanes."""
        return (float(self.valid), -float(self.knotted), -float(self.unmatched_ports), -float(self.dangling),
                float(len(self.keep)))


@dataclass(frozen=True)
class KnownLanes:
    """The known lanes of a tile (tile frame): points (M, 2) and headings (M,) for the duplicate test, and
    their segments (S, 2, 2) for the crossing test."""

    points: np.ndarray
    headings: np.ndarray
    segments: np.ndarray = field(default_factory=lambda: np.zeros((0, 2, 2)))


def end_yaws(lanes: np.ndarray, at_end: bool) -> np.ndarray:
    """Heading (K,) at the start or end of fixed-size polylines (K, P, 2)."""
    d = lanes[:, -1] - lanes[:, -3] if at_end else lanes[:, 2] - lanes[:, 0]
    return np.arctan2(d[:, 1], d[:, 0])


def border_distance(xy: np.ndarray, half: float = HALF_TILE_M) -> np.ndarray:
    """Distance (...) of points (..., 2) to the tile border (0 on it, positive inside or outside)."""
    return np.abs(half - np.max(np.abs(xy), axis=-1))


def exit_distance(xy: np.ndarray, yaw: np.ndarray, half: float = HALF_TILE_M) -> np.ndarray:
    """Distance (K,) from points (K, 2) inside the tile square along headings ``yaw`` (K,) to where they
    leave it (inf for a point outside the square)."""
    d = np.stack([np.cos(yaw), np.sin(yaw)], -1)
    safe = np.where(np.abs(d) > 1e-9, d, 1.0)
    steps = np.where(np.abs(d) > 1e-9, (np.where(d > 0, half, -half) - xy) / safe, np.inf)
    return np.where(np.all(np.abs(xy) <= half, -1), steps.min(-1), np.inf)


def at_border(xy: np.ndarray, yaw: np.ndarray, config: StitchConfig) -> np.ndarray:
    """(K,) bool: free lane ends at ``xy`` (K, 2) travelling along ``yaw`` (K,) (for a start: the heading
    reversed) that end at the tile border: within ``config.border_m`` of it, or reaching it straight ahead
    within ``config.border_reach_m`` (see :class:`StitchConfig`)."""
    return (border_distance(xy) < config.border_m) | (exit_distance(xy, yaw) <= config.border_reach_m)


def _point_headings(lanes: np.ndarray) -> np.ndarray:
    """Heading (K, P) at every vertex of polylines (K, P, 2) (central differences)."""
    g = np.gradient(lanes, axis=1)
    return np.arctan2(g[..., 1], g[..., 0])


_PROBE = slice(1, None, 2)
"""The lane vertices probed by the duplicate test (every other one)."""


def _near_lanes(probe: np.ndarray, probe_yaw: np.ndarray, points: np.ndarray, yaw: np.ndarray,
                config: StitchConfig) -> tuple[np.ndarray, np.ndarray]:
    """(S, M) bool twice: probe point s lies within ``overlap_m`` of point m with headings within
    ``connect_yaw_rad`` (aligned), or within ``opposed_m`` of it heading the other way (opposed, within
    ``connect_yaw_rad`` of a U-turn) -- one 2-D distance matrix, no per-lane-pair 4-D tensor."""
    d2 = (probe * probe).sum(-1)[:, None] + (points * points).sum(-1)[None, :] - 2.0 * probe @ points.T
    aligned = d2 < config.overlap_m ** 2
    opposed = d2 < config.opposed_m ** 2
    rows, cols = np.nonzero(aligned | opposed)
    if len(rows):  # headings only where close (a small share of the pairs)
        turn = np.abs(geometry.wrap_angle(probe_yaw[rows] - yaw[cols]))
        aligned[rows, cols] &= turn < config.connect_yaw_rad
        opposed[rows, cols] &= turn > np.pi - config.connect_yaw_rad
    return aligned, opposed


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
    near = ((seg.min(1)[None] <= hi[:, None]) & (seg.max(1)[None] >= lo[:, None])).all(-1)   # (K, S)
    lane, which = np.nonzero(near)
    if len(lane) == 0:
        return out
    a, r = lanes[lane, :-1], np.diff(lanes, axis=1)[lane]                            # (M, P-1, 2)
    c, q = seg[which, 0][:, None], (seg[which, 1] - seg[which, 0])[:, None]          # (M, 1, 2)
    t, u, denom = geometry.segment_crossing(a, r, c, q)
    skew = np.abs(denom) > 1e-9                                                      # parallel segments never cross
    hit = skew & (t >= 0.0) & (t <= 1.0) & (u >= 0.0) & (u <= 1.0)
    step = np.linalg.norm(r, axis=-1)
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
        aligned, opposed = _near_lanes(probe, probe_yaw, known.points, known.headings, config)
        dup_known = ((aligned.any(1).reshape(k, per_lane).mean(1) > config.overlap_fraction)
                     | (opposed.any(1).reshape(k, per_lane).mean(1) > config.overlap_fraction))
        drop |= dup_known if first is None else dup_known & ~first
    aligned, opposed = _near_lanes(probe, probe_yaw, lanes.reshape(-1, 2), yaw.reshape(-1), config)
    # fraction[i, j]: share of lane i's probes near lane j (reduce over j's vertices, then i's probes)
    fraction = aligned.reshape(k, per_lane, k, p).any(3).mean(1)
    against = opposed.reshape(k, per_lane, k, p).any(3).mean(1)
    kept: list[int] = []
    order = range(k) if first is None else np.argsort(~first, kind="stable")
    for i in order:
        if drop[i]:
            continue
        dup = fraction[i, kept] > config.overlap_fraction if kept else np.zeros(0, bool)
        if first is not None and first[i] and dup.any():  # a port closer only duplicates a lane on its ends
            same = ((np.linalg.norm(lanes[kept, 0] - lanes[i, 0], axis=-1) < config.connect_m)
                    & (np.linalg.norm(lanes[kept, -1] - lanes[i, -1], axis=-1) < config.connect_m))
            dup &= same
        dup |= against[i, kept] > config.overlap_fraction if kept else np.zeros(0, bool)
        if dup.any():
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


def check_candidate(lanes: np.ndarray, ports: list[FrontierPort], known: KnownLanes,
                    config: StitchConfig) -> CandidateCheck:
    """Check one candidate's new lanes (K, P, 2) (tile frame) against ports and known lanes.

    Duplicates (of known lanes or of each other), too-short lanes, loops, kinks and lanes crossing a known one
    are dropped first. Lanes connected to nothing at either end (no port, no other new lane, away from the
    border) are then dropped as debris,
    and with ``prune_spurs`` every lane with a dangling end; any dangling end left, or a port no lane
    continues, makes the candidate invalid.
    """
    closes_port = _touches_required(lanes, ports, config)
    duplicate = duplicate_lanes(lanes, known, config, closes_port)
    looped = looped_lanes(lanes, config) & ~duplicate
    kinked = kinked_lanes(lanes, config) & ~(duplicate | looped | closes_port)
    crossing = crossing_lanes(lanes, known, config) & ~(duplicate | looped | kinked) \
        & ~(closes_port & config.cross_spares_ports)
    pinched = pinched_lanes(lanes, ~(duplicate | looped | kinked | crossing), closes_port, config)
    keep = np.flatnonzero(~(duplicate | looped | kinked | crossing | pinched))
    check, starts_open, ends_open = open_ends(lanes[keep], ports, config)
    dangling, isolated = starts_open | ends_open, starts_open & ends_open
    pruned = {"duplicate": int(duplicate.sum()), "looped": int(looped.sum()),
              "kinked": int(kinked.sum()), "crossing": int(crossing.sum()), "pinched": int(pinched.sum()),
              "isolated": int(isolated.sum()), "spur": 0}
    if isolated.any():
        keep = keep[~isolated]
        check, dangling = _dangling(lanes[keep], ports, config)
    while config.prune_spurs and dangling.any() and not dangling.all():
        pruned["spur"] += int(dangling.sum())
        keep = keep[~dangling]
        check, dangling = _dangling(lanes[keep], ports, config)
    check.keep = keep
    check.pruned = pruned
    check.knotted = knot_size(lanes[keep], config)
    return check


def check_and_stitch(controls: np.ndarray, lanes: np.ndarray, ports: list[FrontierPort], known: KnownLanes,
                     config: StitchConfig, bent: np.ndarray | None = None) -> tuple[CandidateCheck, list[np.ndarray]]:
    """:func:`check_candidate`, then (valid) :func:`stitch`: the check and the stitched kept lanes ([] when
    invalid). A lane that stitching bends into a kink, a loop or a stub shorter than ``min_length_m``, across
    a known lane, into a hook at a joint (:func:`hooked_lanes`) or with an end pinched against an opposed
    lane's start (:func:`pinched_lanes`), is dropped and the rest checked again, until no stitched lane is bad
    or the candidate fails: moving a short lane's ends onto joints metres away (a port and the node of lanes it
    overlaps) can fold it into a hairpin, or both ends onto one node (a lane folded back and forth on itself,
    1.6 m long, that broke a rollout's planner), and an end extended to the border can cut across a
    neighbour's road, which the check of the decoded lanes cannot see. Such lanes
    count as ``bent`` in ``check.pruned``, whether or not they close a port; ``bent`` may name lanes dropped
    so before (a second try)."""
    bent = np.zeros(0, int) if bent is None else np.asarray(bent, int)
    allowed = np.setdiff1d(np.arange(len(lanes)), bent)
    while True:
        check = check_candidate(lanes[allowed], ports, known, config)
        check.keep, check.bent = allowed[check.keep], bent
        check.pruned["bent"] = len(bent)
        if not check.valid:
            return check, []
        stitched = stitch(controls, check, ports, config)
        polylines = np.array(stitched).reshape(-1, LANE_POINTS, 2)
        closes_port = _touches_required(polylines, ports, config)
        crossing = crossing_lanes(polylines, known, config) & ~(closes_port & config.cross_spares_ports)
        bad = kinked_lanes(polylines, config) | looped_lanes(polylines, config) | crossing \
            | (geometry.polyline_lengths(polylines)[:, -1] < config.min_length_m) \
            | hooked_lanes(polylines, check, ports, config)
        bad |= pinched_lanes(polylines, ~bad, closes_port, config)
        if not bad.any():
            return check, stitched
        bent = np.concatenate([bent, check.keep[bad]])
        allowed = np.setdiff1d(allowed, bent)


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


def knot_size(lanes: np.ndarray, config: StitchConfig) -> int:
    """Lane ends (starts and ends of lanes (K, P, 2)) within ``knot_radius_m`` of the most crowded one, when
    more than ``max_ends_at_point``; else 0."""
    if 2 * len(lanes) <= config.max_ends_at_point:
        return 0
    ends = np.concatenate([lanes[:, 0], lanes[:, -1]])
    crowd = int((((ends[:, None] - ends[None]) ** 2).sum(-1) < config.knot_radius_m ** 2).sum(1).max())
    return crowd if crowd > config.max_ends_at_point else 0


def _touches_required(lanes: np.ndarray, ports: list[FrontierPort], config: StitchConfig) -> np.ndarray:
    """(K,) bool: the lane starts at a required out port or ends at a required in port (distance only)."""
    touch = np.zeros(len(lanes), bool)
    for port in ports:
        if port.required and len(lanes):
            end = lanes[:, 0] if port.is_out else lanes[:, -1]
            touch |= ((end - port.xy) ** 2).sum(-1) < config.connect_m ** 2
    return touch


def _dangling(kept: np.ndarray, ports: list[FrontierPort], config: StitchConfig
              ) -> tuple[CandidateCheck, np.ndarray]:
    """:func:`open_ends`, and which lanes dangle at either end (K,) bool."""
    check, starts_open, ends_open = open_ends(kept, ports, config)
    return check, starts_open | ends_open


def open_ends(kept: np.ndarray, ports: list[FrontierPort], config: StitchConfig
              ) -> tuple[CandidateCheck, np.ndarray, np.ndarray]:
    """Port links, successor joints and dangling ends of the kept lanes (K, P, 2); also which lanes' starts
    and which lanes' ends touch nothing (no port, no other lane, away from the border), each (K,) bool."""
    check = CandidateCheck(keep=np.arange(len(kept)))
    n = len(kept)
    if n == 0:
        check.unmatched_ports = sum(p.required for p in ports)
        return check, np.zeros(0, bool), np.zeros(0, bool)
    starts, ends = kept[:, 0], kept[:, -1]
    start_yaw, end_yaw = end_yaws(kept, False), end_yaws(kept, True)
    tol = config.connect_yaw_rad
    start_used, end_used = np.zeros(n, bool), np.zeros(n, bool)
    if ports:
        p_xy = np.array([p.xy for p in ports], np.float64).reshape(-1, 2)
        p_yaw = np.array([p.yaw for p in ports], np.float64)
        p_out = np.array([p.is_out for p in ports], bool)
        p_req = np.array([p.required for p in ports], bool)
        xy = np.where(p_out[:, None, None], starts[None], ends[None])              # (Pt, K, 2)
        yaws = np.where(p_out[:, None], start_yaw[None], end_yaw[None])           # (Pt, K)
        d2 = ((xy - p_xy[:, None]) ** 2).sum(-1)
        ok = (d2 < config.connect_m ** 2) & (np.abs(geometry.wrap_angle(yaws - p_yaw[:, None])) <= tol)
        # a lane end links to every required port it reaches (a port may be shared by several lanes, and
        # known lanes may merge at one port), or else to its nearest optional joint only: an end snapped
        # onto a port and a joint metres apart would leave a gap at one of them
        for side in (p_out, ~p_out):
            req = ok & (side & p_req)[:, None]
            opt = ok & (side & ~p_req)[:, None]
            nearest = np.where(opt, d2, np.inf).argmin(0)
            single = np.zeros_like(opt)
            single[nearest, np.arange(n)] = opt[nearest, np.arange(n)]
            ok[side] = np.where(req.any(0)[None], req, single)[side]
        start_used = (ok & p_out[:, None]).any(0)
        end_used = (ok & ~p_out[:, None]).any(0)
        check.unmatched_ports = int((p_req & ~ok.any(1)).sum())
        check.port_links = [(int(k), int(i)) for k, i in zip(*np.nonzero(ok), strict=True)]
    joined = _joins(ends, end_yaw, starts, start_yaw, config)
    np.fill_diagonal(joined, False)
    check.successors = [(int(i), int(j)) for i, j in zip(*np.nonzero(joined), strict=True)]
    start_ok = start_used | joined.any(0) | at_border(starts, start_yaw + np.pi, config)
    end_ok = end_used | joined.any(1) | at_border(ends, end_yaw, config)
    check.dangling = int((~start_ok).sum() + (~end_ok).sum())
    return check, ~start_ok, ~end_ok


def _joins(ends: np.ndarray, end_yaw: np.ndarray, starts: np.ndarray, start_yaw: np.ndarray,
           config: StitchConfig) -> np.ndarray:
    """(K, K) bool: end i joins start j (:attr:`StitchConfig.join_along_m`): offset along end i's heading
    within ``join_along_m``, across it within ``join_lateral_m``, headings within ``connect_yaw_rad``."""
    d = starts[None] - ends[:, None]                                                # (K, K, 2)
    c, s = np.cos(end_yaw)[:, None], np.sin(end_yaw)[:, None]
    along, across = d[..., 0] * c + d[..., 1] * s, d[..., 1] * c - d[..., 0] * s
    aligned = np.abs(geometry.wrap_angle(end_yaw[:, None] - start_yaw[None])) <= config.connect_yaw_rad
    return (np.abs(along) <= config.join_along_m) & (np.abs(across) <= config.join_lateral_m) & aligned


def _border_exit(xy: np.ndarray, yaw: float, half: float = HALF_TILE_M) -> np.ndarray:
    """Where the line through xy along yaw leaves the square [-half, half]^2: ahead of xy when it lies inside,
    behind it when it lies beyond that border already (a decoded end overshooting the tile); an end outside
    the square heading back into it is clamped onto the square instead."""
    d = np.array([np.cos(yaw), np.sin(yaw)])
    steps = []
    for axis in range(2):
        if abs(d[axis]) > 1e-9:
            bound = half if d[axis] > 0 else -half
            steps.append((bound - xy[axis]) / d[axis])
    t = min(steps)
    if t > 0 and np.any(np.abs(xy) > half):
        return np.clip(xy, -half, half)
    return xy + t * d


def _clip_inside(points: np.ndarray, half: float = HALF_TILE_M) -> np.ndarray:
    """Clamp points into the tile square (a lane that overshoots the border a little ends on it)."""
    return np.clip(points, -half, half)


def _tangent(control: np.ndarray, at_end: bool, config: StitchConfig) -> np.ndarray:
    """Unit direction of travel of a Bézier lane (4, 2) at its start or end. A handle shorter than
    ``config.short_handle`` of the chord is a hook, not a heading: the far inner control point gives it."""
    end, inner, far = (control[3], control[2], control[1]) if at_end else (control[0], control[1], control[2])
    chord = float(np.linalg.norm(control[3] - control[0]))
    handle = end - inner if at_end else inner - end
    if np.linalg.norm(handle) < config.short_handle * chord:
        handle = end - far if at_end else far - end
    return handle / max(float(np.linalg.norm(handle)), 1e-9)


def _set_handle(control: np.ndarray, at_end: bool, heading: np.ndarray, config: StitchConfig) -> None:
    """Point the handle next to an end along ``heading`` (in place), keeping its length, at least
    ``config.short_handle`` of the chord."""
    chord = float(np.linalg.norm(control[3] - control[0]))
    if at_end:
        length = max(float(np.linalg.norm(control[3] - control[2])), config.short_handle * chord, MIN_HANDLE_M)
        control[2] = control[3] - length * heading
    else:
        length = max(float(np.linalg.norm(control[1] - control[0])), config.short_handle * chord, MIN_HANDLE_M)
        control[1] = control[0] + length * heading


def stitch(controls: np.ndarray, check: CandidateCheck, ports: list[FrontierPort], config: StitchConfig
           ) -> list[np.ndarray]:
    """Snap the kept lanes, Bézier control points (K, 4, 2) in the tile frame, onto ports, shared junction
    nodes and the border, with one heading per joint.

    Every end moves (with its handle) onto its node: the port, the mean of the lane ends that meet there, or
    the border along its heading. Each node then gets one heading (the port's, else the mean of its lanes'
    headings there) and every handle next to it is set along it, so the heading is continuous across every
    link and no lane hooks into a joint. Returns the stitched polylines (``LANE_POINTS`` each), one per entry
    of ``check.keep``: starts of out-port lanes equal the port xy exactly, ends of in-port lanes too, and
    successor pairs share one end point.
    """
    kept = np.array(controls[check.keep], np.float64).reshape(-1, 4, 2)
    n = len(kept)
    # Union-find over lane ends: node 2i = start of lane i, 2i+1 = end of lane i.
    parent = list(range(2 * n))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for i, j in check.successors:
        parent[find(2 * i + 1)] = find(2 * j)
    anchor: dict[int, FrontierPort] = {}
    for index, lane in check.port_links:
        port = ports[index]
        anchor[find(2 * lane if port.is_out else 2 * lane + 1)] = port
    groups: dict[int, list[int]] = {}
    for node in range(2 * n):
        groups.setdefault(find(node), []).append(node)
    out = kept.copy()
    for root, nodes in groups.items():
        ends = [(node // 2, bool(node % 2)) for node in nodes]
        tangents = [_tangent(kept[lane], at_end, config) for lane, at_end in ends]
        if root in anchor:
            port = anchor[root]
            target, heading = port.xy, np.array([np.cos(port.yaw), np.sin(port.yaw)])
        elif len(nodes) > 1:
            target = np.mean([kept[lane][3 if at_end else 0] for lane, at_end in ends], 0)
            heading = np.sum(tangents, 0)
            heading = heading / max(float(np.linalg.norm(heading)), 1e-9)
        else:
            lane, at_end = ends[0]
            end_xy = kept[lane][3 if at_end else 0]
            back = 0.0 if at_end else np.pi
            # The filter's verdict (on the polyline's end heading), so an end it let pass always reaches the border.
            seen = end_yaws(bezier_points(kept[lane][None], LANE_POINTS), at_end) + back
            if not at_border(end_xy[None], seen, config)[0]:
                continue
            yaw = float(np.arctan2(tangents[0][1], tangents[0][0])) + back
            if not at_border(end_xy[None], np.array([yaw]), config)[0]:  # a hooked tangent: the body's heading
                yaw = float(seen[0])
            target, heading = _border_exit(end_xy, yaw), tangents[0]
        for lane, at_end in ends:
            k, inner = (3, 2) if at_end else (0, 1)
            move = target - out[lane][k]
            out[lane][k] = target
            out[lane][inner] += move
            _set_handle(out[lane], at_end, heading, config)
    return [_clip_inside(points) for points in bezier_points(out, LANE_POINTS)]
