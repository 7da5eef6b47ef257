"""Validity filter and stitching of decoded candidate lanes, in the tile frame (m) (its configuration and
verdict in :mod:`filter_config`, its rules on single lanes in :mod:`lane_rules`).

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
heading (the port's, else the mean of the lanes meeting there): no kink across a link, no hook into it. A
lane that lies near its chord (:attr:`StitchConfig.straight_m`) is stitched straight: its chord gives the heading of its
ends, so the slight S-bends of one-step samples do not reach the world.
"""

from __future__ import annotations

import numpy as np

from vectorworld import geometry
from vectorworld.generation.learned.bezier import MIN_HANDLE_M, bezier_points
from vectorworld.generation.learned.filter_config import CandidateCheck, FrontierPort, KnownLanes, StitchConfig
from vectorworld.generation.learned.lane_rules import (
    crossing_lanes,
    duplicate_lanes,
    end_yaws,
    hooked_lanes,
    kinked_lanes,
    looped_lanes,
    pinched_lanes,
)
from vectorworld.generation.learned.tile_tensors import HALF_TILE_M, LANE_POINTS


def border_distance(xy: np.ndarray, half: float = HALF_TILE_M) -> np.ndarray:
    """Distance (...) of points (..., 2) to the tile border (0 on it, positive inside or outside)."""
    return np.abs(half - np.maximum(np.abs(xy[..., 0]), np.abs(xy[..., 1])))


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
    links = EndLinks(lanes[keep], ports, config)
    rows = np.arange(len(keep))         # positions in keep of the lanes still kept
    check, starts_open, ends_open = links.among(rows)
    dangling, isolated = starts_open | ends_open, starts_open & ends_open
    pruned = {"duplicate": int(duplicate.sum()), "looped": int(looped.sum()),
              "kinked": int(kinked.sum()), "crossing": int(crossing.sum()), "pinched": int(pinched.sum()),
              "isolated": int(isolated.sum()), "spur": 0}
    if isolated.any():
        rows = rows[~isolated]
        check, dangling = links.dangling(rows)
    while config.prune_spurs and dangling.any() and not dangling.all():
        pruned["spur"] += int(dangling.sum())
        rows = rows[~dangling]
        check, dangling = links.dangling(rows)
    keep = keep[rows]
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


def knot_size(lanes: np.ndarray, config: StitchConfig) -> int:
    """Lane ends (starts and ends of lanes (K, P, 2)) within ``knot_radius_m`` of the most crowded one, when
    more than ``max_ends_at_point``; else 0."""
    if 2 * len(lanes) <= config.max_ends_at_point:
        return 0
    ends = np.concatenate([lanes[:, 0], lanes[:, -1]])
    crowd = int((geometry.sq_norms(ends[:, None] - ends[None]) < config.knot_radius_m ** 2).sum(1).max())
    return crowd if crowd > config.max_ends_at_point else 0


def _touches_required(lanes: np.ndarray, ports: list[FrontierPort], config: StitchConfig) -> np.ndarray:
    """(K,) bool: the lane starts at a required out port or ends at a required in port (distance only)."""
    touch = np.zeros(len(lanes), bool)
    for port in ports:
        if port.required and len(lanes):
            end = lanes[:, 0] if port.is_out else lanes[:, -1]
            touch |= geometry.sq_norms(end - port.xy) < config.connect_m ** 2
    return touch


def open_ends(kept: np.ndarray, ports: list[FrontierPort], config: StitchConfig
              ) -> tuple[CandidateCheck, np.ndarray, np.ndarray]:
    """Port links, successor joints and dangling ends of the kept lanes (K, P, 2); also which lanes' starts
    and which lanes' ends touch nothing (no port, no other lane, away from the border), each (K,) bool."""
    return EndLinks(kept, ports, config).among(np.arange(len(kept)))


class EndLinks:
    """What each end of lanes (K, P, 2) touches: the ports it links to, the lane starts its end joins, the
    border. Each lane's links depend on that lane alone (an end links to every required port it reaches, else
    to its nearest optional one), so the verdict on any subset of the lanes (:meth:`among`) is read off
    these tables: the filter prunes spurs lane set by lane set without measuring the geometry again."""

    def __init__(self, kept: np.ndarray, ports: list[FrontierPort], config: StitchConfig) -> None:
        n = len(kept)
        starts, ends = kept[:, 0], kept[:, -1]
        start_yaw, end_yaw = end_yaws(kept, False), end_yaws(kept, True)
        self.required = np.array([p.required for p in ports], bool)
        self.is_out = np.array([p.is_out for p in ports], bool)
        self.links = np.zeros((len(ports), n), bool)                                  # port k, lane i
        if ports and n:
            self.links = _port_links(starts, start_yaw, ends, end_yaw, ports, self.is_out, self.required, config)
        self.joins = _joins(ends, end_yaw, starts, start_yaw, config) if n else np.zeros((0, 0), bool)
        np.fill_diagonal(self.joins, False)
        border = at_border(np.concatenate([starts, ends]), np.concatenate([start_yaw + np.pi, end_yaw]), config)
        self.start_at_border, self.end_at_border = border[:n], border[n:]

    def among(self, rows: np.ndarray) -> tuple[CandidateCheck, np.ndarray, np.ndarray]:
        """:func:`open_ends` of the lanes ``rows`` (m,) (indices into the measured lanes, in this order)."""
        check = CandidateCheck(keep=np.arange(len(rows)))
        ok, joined = self.links[:, rows], self.joins[np.ix_(rows, rows)]
        check.unmatched_ports = int((self.required & ~ok.any(1)).sum())
        if len(rows) == 0:
            return check, np.zeros(0, bool), np.zeros(0, bool)
        check.port_links = [(int(k), int(i)) for k, i in zip(*np.nonzero(ok), strict=True)]
        check.successors = [(int(i), int(j)) for i, j in zip(*np.nonzero(joined), strict=True)]
        start_ok = (ok & self.is_out[:, None]).any(0) | joined.any(0) | self.start_at_border[rows]
        end_ok = (ok & ~self.is_out[:, None]).any(0) | joined.any(1) | self.end_at_border[rows]
        check.dangling = int((~start_ok).sum() + (~end_ok).sum())
        return check, ~start_ok, ~end_ok

    def dangling(self, rows: np.ndarray) -> tuple[CandidateCheck, np.ndarray]:
        """:meth:`among`, and which of the lanes dangle at either end (m,) bool."""
        check, starts_open, ends_open = self.among(rows)
        return check, starts_open | ends_open


def _port_links(starts: np.ndarray, start_yaw: np.ndarray, ends: np.ndarray, end_yaw: np.ndarray,
                ports: list[FrontierPort], p_out: np.ndarray, p_req: np.ndarray, config: StitchConfig
                ) -> np.ndarray:
    """(Pt, K) bool: lane i's start (out port k) or end (in port k) links to port k."""
    n = len(starts)
    p_xy = np.array([p.xy for p in ports], np.float64).reshape(-1, 2)
    p_yaw = np.array([p.yaw for p in ports], np.float64)
    xy = np.where(p_out[:, None, None], starts[None], ends[None])              # (Pt, K, 2)
    yaws = np.where(p_out[:, None], start_yaw[None], end_yaw[None])           # (Pt, K)
    d2 = geometry.sq_norms(xy - p_xy[:, None])
    ok = (d2 < config.connect_m ** 2) & (np.abs(geometry.wrap_angle(yaws - p_yaw[:, None])) <= config.connect_yaw_rad)
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
    return ok


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

    Every end moves (with its handle) onto its node: the nearest port it links to (a pinned end stays on its
    own port; port_merge joins the others to it), the mean of the lane ends that meet there, or the border
    along its heading. Each node then gets one heading (the port's, else the mean of its lanes' headings
    there) and every handle next to it is set along it, so the heading is continuous across every link and
    no lane hooks into a joint. A lane within ``config.straight_m`` of its chord takes the chord as
    its tangent at both ends (its node's heading where no port sets one): straight where its joints agree.
    Returns the stitched polylines (``LANE_POINTS`` each), one per entry of ``check.keep``: starts of out-port
    lanes equal the port xy exactly, ends of in-port lanes too, and successor pairs share one end point.
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
    # a node that reaches several ports goes onto the nearest: snapping two lanes pinned on ports 1-3 m
    # apart onto the same one stacked them on top of each other
    anchor: dict[int, FrontierPort] = {}
    anchor_gap: dict[int, float] = {}
    for index, lane in check.port_links:
        port = ports[index]
        at_end = not port.is_out
        node = find(2 * lane + at_end)
        gap = float(np.linalg.norm(kept[lane][3 if at_end else 0] - port.xy))
        if gap < anchor_gap.get(node, np.inf):
            anchor[node], anchor_gap[node] = port, gap
    groups: dict[int, list[int]] = {}
    for node in range(2 * n):
        groups.setdefault(find(node), []).append(node)
    out = kept.copy()
    # Every end's tangent, and whether a free end reaches the border along the polyline's end heading (the
    # filter's verdict, so an end it let pass always reaches the border) or along its tangent: node 2i + a.
    # A lane near its chord (config.straight_m) is stitched straight: the chord is the heading of both its ends.
    polylines = bezier_points(kept, LANE_POINTS)
    straight = geometry.chord_offsets(polylines) <= config.straight_m
    chord = kept[:, 3] - kept[:, 0]
    chord /= np.maximum(np.linalg.norm(chord, axis=-1, keepdims=True), 1e-9)
    tangents = [chord[node // 2] if straight[node // 2] else _tangent(kept[node // 2], bool(node % 2), config)
                for node in range(2 * n)]
    end_xy = kept[:, [0, 3]].reshape(-1, 2)
    back = np.tile([np.pi, 0.0], n)
    seen = np.stack([end_yaws(polylines, False), end_yaws(polylines, True)], 1).reshape(-1) + back
    unit = np.array(tangents).reshape(-1, 2)
    tangent_yaw = np.arctan2(unit[:, 1], unit[:, 0]) + back
    seen_reaches, tangent_reaches = at_border(end_xy, seen, config), at_border(end_xy, tangent_yaw, config)
    for root, nodes in groups.items():
        ends = [(node // 2, bool(node % 2)) for node in nodes]
        if root in anchor:
            port = anchor[root]
            target, heading = port.xy, np.array([np.cos(port.yaw), np.sin(port.yaw)])
        elif len(nodes) > 1:
            target = np.mean([kept[lane][3 if at_end else 0] for lane, at_end in ends], 0)
            heading = np.sum([tangents[node] for node in nodes], 0)
            heading = heading / max(float(np.linalg.norm(heading)), 1e-9)
        else:
            node = nodes[0]
            if not seen_reaches[node]:
                continue
            yaw = float(tangent_yaw[node] if tangent_reaches[node] else seen[node])  # hooked: the body's heading
            target, heading = _border_exit(end_xy[node], yaw), tangents[node]
        for lane, at_end in ends:
            k, inner = (3, 2) if at_end else (0, 1)
            move = target - out[lane][k]
            out[lane][k] = target
            out[lane][inner] += move
            _set_handle(out[lane], at_end, heading, config)
    return [_clip_inside(points) for points in bezier_points(out, LANE_POINTS)]
