"""The validity filter's contract: its tolerances (:class:`StitchConfig`), what it is given (the tile's ports,
:class:`FrontierPort`, and known lanes, :class:`KnownLanes`) and its verdict on a candidate
(:class:`CandidateCheck`). The rules live in :mod:`lane_rules` (one lane at a time) and :mod:`stitching` (ports,
joints, the verdict and the stitch)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


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
    straight_m: float = 1.0
    """A kept lane whose Bézier lies within this of its chord is stitched straight: its ends take its chord's
    heading (where no port sets it), so a lane whose joints agree with its chord comes out exactly straight.
    One-step samples draw roads with slight S-bends and arcs (31% of the lanes of generated worlds lie within
    0.1 m of their chord, 83% of the held-out tiles' lanes), and those bends were most of the lane Frechet
    distance (its curvature term 0.24 of 0.84). On 10 x 200 held-out tiles, seeds 1000-1009 / 1010-1019:
    lane Frechet 0.837 / 0.814 without the rule (0), 0.760 / 0.771 at 1 m, lanes per tile unchanged (9.0-9.1);
    a prototype measured 0.757 / 0.779 at 0.6 m and 0.822 at 1.5 m, where real curves go straight too."""
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
