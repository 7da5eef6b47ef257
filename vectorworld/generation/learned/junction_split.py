"""Junction split: a lane that cuts across another one is cut at the junction, as maps cut their lanes.

Maps (and the corpus the model learns from) end a road's lane where a junction begins: the part inside the
junction is a connector of its own, a few metres past the last lane it crosses, and the road goes on as a
third lane after it. The one-step model draws the roads of a junction well but often as one lane straight
through it (held-out `mid_req` tiles: 43% of its lanes link to no other lane, against 22% in the data; its
lanes are 24 m long at the median against 17 m). Such a lane holds its whole length in junction right of way
(the world marks a lane that crosses another one a connector, up to 120 m of it), and reads as fewer, longer,
unlinked lanes than a real junction.

:func:`split_at_crossings` cuts every lane that crosses an unlinked lane at an angle into approach,
junction and exit pieces, linked in a chain. The junction piece reaches ``margin_m`` past the outermost
crossing of one junction on either side; a lane is cut only where both outer pieces keep ``min_piece_m``,
so a junction's own connectors (which cross each other near their middles) stay whole: the held-out tiles
have no lane this cuts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vectorworld import geometry


@dataclass(frozen=True)
class SplitConfig:
    """Where a crossing lane is cut."""

    margin_m: float = 4.0
    """The junction piece runs this far past the first and the last crossing (about a lane width and a half)."""
    min_piece_m: float = 5.0
    """An approach or exit piece shorter than this is not cut off: the lane stays whole."""
    min_angle_rad: float = 0.5
    """Lanes that meet at a shallower angle are a merge or a drift, not a crossing."""


@dataclass(frozen=True)
class SplitLanes:
    """The lanes after the split, and where each original lane went."""

    lanes: list[np.ndarray]
    pieces: list[list[int]]
    """Per original lane, its new lanes in driving order (one when it was not cut)."""
    successors: list[tuple[int, int]]
    """Links among the new lanes: the original ones, rewired from last to first piece, plus each chain."""
    junction: np.ndarray
    """(M,) bool: the new lane is the part of a cut lane inside a junction."""

    def piece_at(self, lane: int, arc_m: float) -> int:
        """The new lane that holds arc length ``arc_m`` along original lane ``lane``."""
        pieces = self.pieces[lane]
        ends = np.cumsum([geometry.polyline_lengths(self.lanes[k])[-1] for k in pieces])
        return pieces[min(int(np.searchsorted(ends, arc_m)), len(pieces) - 1)]


def crossing_arcs(lanes: list[np.ndarray], linked: np.ndarray, min_angle_rad: float) -> list[np.ndarray]:
    """Per lane (polylines (N_i, 2)), the sorted arc lengths (m) where it crosses a lane it is not linked to
    (``linked`` (n, n) bool, symmetric) at ``min_angle_rad`` or more. Only segment pairs whose bounding
    boxes overlap are intersected."""
    owner = np.concatenate([np.full(len(p) - 1, i) for i, p in enumerate(lanes)])
    start = np.concatenate([p[:-1] for p in lanes])
    step = np.concatenate([np.diff(p, axis=0) for p in lanes])
    arc0 = np.concatenate([geometry.polyline_lengths(p)[:-1] for p in lanes])
    lo, hi = np.minimum(start, start + step), np.maximum(start, start + step)
    x_lo, y_lo, x_hi, y_hi = lo[:, 0], lo[:, 1], hi[:, 0], hi[:, 1]
    boxes = ((x_lo[:, None] <= x_hi) & (x_lo <= x_hi[:, None]) & (y_lo[:, None] <= y_hi) & (y_lo <= y_hi[:, None]))
    a, b = np.nonzero(np.triu(boxes))
    other = (owner[a] != owner[b]) & ~linked[owner[a], owner[b]]
    a, b = a[other], b[other]
    t, u, denom = geometry.segment_crossing(start[a], step[a], start[b], step[b])
    length_a, length_b = geometry.norms(step[a]), geometry.norms(step[b])
    sine = np.abs(denom) / np.maximum(length_a * length_b, 1e-12)
    hit = (t >= 0.0) & (t <= 1.0) & (u >= 0.0) & (u <= 1.0) & (sine >= np.sin(min_angle_rad))
    who = np.concatenate([owner[a[hit]], owner[b[hit]]])
    arcs = np.concatenate([arc0[a[hit]] + t[hit] * length_a[hit], arc0[b[hit]] + u[hit] * length_b[hit]])
    return [np.sort(arcs[who == i]) for i in range(len(lanes))]


def junction_spans(arcs: np.ndarray, length_m: float, config: SplitConfig) -> list[tuple[float, float]]:
    """The (start, end) arc lengths of the junction pieces to cut out of a lane ``length_m`` long whose
    crossings lie at ``arcs``: crossings closer than two margins and a piece form one junction."""
    spans: list[tuple[float, float]] = []
    for s in arcs:
        a, b = s - config.margin_m, s + config.margin_m
        if spans and a < spans[-1][1] + config.min_piece_m:
            spans[-1] = (spans[-1][0], b)
        else:
            spans.append((a, b))
    kept: list[tuple[float, float]] = []
    for a, b in spans:
        before = a - (kept[-1][1] if kept else 0.0)
        if before >= config.min_piece_m and length_m - b >= config.min_piece_m:
            kept.append((a, b))
    return kept


def split_at_crossings(lanes: list[np.ndarray], successors: list[tuple[int, int]],
                       config: SplitConfig = SplitConfig()) -> SplitLanes:
    """Cut every lane (polylines (N_i, 2)) that crosses another one it is not linked to (``successors``:
    (from, to) index pairs) at its junctions; see the module docstring."""
    n = len(lanes)
    linked = np.zeros((n, n), bool)
    for i, j in successors:
        linked[i, j] = linked[j, i] = True
    arcs = crossing_arcs(lanes, linked, config.min_angle_rad) if n > 1 else [np.zeros(0)] * n
    out: list[np.ndarray] = []
    pieces: list[list[int]] = []
    junction: list[bool] = []
    chains: list[tuple[int, int]] = []
    for points, crossings in zip(lanes, arcs, strict=True):
        arc = geometry.polyline_lengths(points)
        cuts = [0.0]
        for a, b in junction_spans(crossings, float(arc[-1]), config):
            cuts += [a, b]
        cuts.append(float(arc[-1]))
        first = len(out)
        for k in range(len(cuts) - 1):
            out.append(points if len(cuts) == 2 else geometry.polyline_piece(points, arc, cuts[k], cuts[k + 1]))
            junction.append(k % 2 == 1)
        pieces.append(list(range(first, len(out))))
        chains += [(p, p + 1) for p in range(first, len(out) - 1)]
    rewired = [(pieces[i][-1], pieces[j][0]) for i, j in successors]
    return SplitLanes(out, pieces, rewired + chains, np.array(junction, bool))


def unsplit(lanes: list[np.ndarray], successors: list[tuple[int, int]]) -> SplitLanes:
    """The lanes as they are, in :class:`SplitLanes` form (the split switched off)."""
    return SplitLanes(list(lanes), [[i] for i in range(len(lanes))], list(successors),
                      np.zeros(len(lanes), bool))
