"""A new lane end that reaches several ports: a merge (or a diverge) instead of open ends left beside it.

The filter lets a new lane start at every required out port it reaches (known lanes of a neighbour tile
ending within ``StitchConfig.connect_m`` of one another), and stitching puts the start exactly on one of
them. The others were left open: a dead end a metre or two beside the new lane, which the world later
continued with a straight lane on top of it, and which made the next tiles' filter reject samples (280 of
1061 port links of 200 held-out tiles). Here the new lane is cut a few metres in, and a connector runs from
each other port to the cut: the known lanes merge into the new one. A lane end reaching several in ports
diverges into them the same way. Every link is then exact (the world marks merging lanes as a junction).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from vectorworld import geometry
from vectorworld.generation.learned.filter_config import FrontierPort
from vectorworld.generation.learned.tile_tensors import LANE_POINTS


@dataclass(frozen=True)
class MergeConfig:
    """Where the cut goes, and which connectors are drivable."""

    min_m: float = 8.0
    per_gap: float = 4.0
    """The cut lies ``max(min_m, per_gap * offset)`` along the lane from its end, ``offset`` being the farthest
    other port's distance from it: a merge of 2 m across takes 8 m."""
    min_piece_m: float = 3.0
    """Both pieces of a cut lane keep at least this (the filter's ``min_length_m``)."""
    min_radius_m: float = 3.0
    """A connector bending tighter than this is not built (the port stays open, as before)."""


@dataclass(frozen=True)
class MergedLanes:
    """The lanes after merging: polylines, successor links among them, port links (each lane end exactly on
    its port), and per lane the input lane it is a piece of (-1 for a connector)."""

    lanes: list[np.ndarray]
    successors: list[tuple[int, int]]
    port_links: list[tuple[int, int]]
    source: np.ndarray


def _heading_at(points: np.ndarray, arc: np.ndarray, s: float) -> float:
    ahead, behind = geometry.interpolate_polyline(points, arc, np.array([s + 0.5, s - 0.5]))
    d = ahead - behind
    return float(np.arctan2(d[1], d[0]))


def _connector(start: np.ndarray, start_yaw: float, end: np.ndarray, end_yaw: float,
               config: MergeConfig) -> np.ndarray | None:
    lane = geometry.hermite_curve(start, start_yaw, end, end_yaw, LANE_POINTS)
    return lane if geometry.curvature(lane[None])[0].max() <= 1.0 / config.min_radius_m else None


def merge_ports(lanes: list[np.ndarray], successors: list[tuple[int, int]], port_links: list[tuple[int, int]],
                ports: list[FrontierPort], tol_m: float, config: MergeConfig = MergeConfig()) -> MergedLanes:
    """Merge the other ports a stitched lane end reached into it (see the module docstring).

    lanes: stitched polylines (N_i, 2), tile frame; successors: (from, to) lane index pairs; port_links:
    (port position, lane) pairs from the check; a link counts as made where the lane end lies within
    ``tol_m`` of the port. Only ports that no lane end lies on are merged (with adjacent lanes a lane width
    apart, a lane end reaches its neighbour's port too, which the neighbour continues). A lane end whose
    other ports get no drivable connector is left as it was (those ports stay open)."""
    out = [np.asarray(lane, np.float64) for lane in lanes]
    source = list(range(len(out)))
    succ, links = list(successors), []
    extra: dict[tuple[int, bool], list[int]] = defaultdict(list)
    for pos, lane in port_links:
        port = ports[pos]
        if np.linalg.norm(out[lane][0 if port.is_out else -1] - port.xy) <= tol_m:
            links.append((pos, lane))
    linked = {pos for pos, _ in links}
    nearest: dict[int, tuple[float, int]] = {}   # an open port: the lane end nearest to it
    for pos, lane in port_links:
        port = ports[pos]
        gap = float(np.linalg.norm(out[lane][0 if port.is_out else -1] - port.xy))
        if pos not in linked and gap < nearest.get(pos, (np.inf, -1))[0]:
            nearest[pos] = (gap, lane)
    for pos, (_, lane) in sorted(nearest.items()):
        extra[(lane, ports[pos].is_out)].append(pos)
    end_piece = list(range(len(out)))   # the piece holding each input lane's end
    for (lane, at_start), positions in sorted(extra.items(), key=lambda item: (item[0][0], not item[0][1])):
        piece = lane if at_start else end_piece[lane]
        points = out[piece]
        arc = geometry.polyline_lengths(points)
        joint = points[0] if at_start else points[-1]
        offset = max(float(np.linalg.norm(ports[p].xy - joint)) for p in positions)
        s = min(max(config.min_m, config.per_gap * offset), float(arc[-1]) - config.min_piece_m)
        if s < config.min_piece_m + offset:
            continue
        cut = s if at_start else float(arc[-1]) - s
        at, yaw = geometry.interpolate_polyline(points, arc, np.array([cut]))[0], _heading_at(points, arc, cut)
        made = [(p, _connector(ports[p].xy, ports[p].yaw, at, yaw, config) if at_start
                 else _connector(at, yaw, ports[p].xy, ports[p].yaw, config)) for p in positions]
        made = [(p, c) for p, c in made if c is not None]
        if not made:
            continue
        tail = len(out)
        out[piece] = geometry.polyline_piece(points, arc, 0.0, cut)
        out.append(geometry.polyline_piece(points, arc, cut, float(arc[-1])))
        source.append(source[piece])
        end_piece[lane] = tail
        succ = [(tail if i == piece else i, j) for i, j in succ] + [(piece, tail)]
        links = [(p, tail if k == piece and not ports[p].is_out else k) for p, k in links]
        for p, connector in made:
            out.append(connector)
            source.append(-1)
            k = len(out) - 1
            succ.append((k, tail) if at_start else (piece, k))
            links.append((p, k))
    return MergedLanes(out, succ, links, np.array(source, np.int64))
