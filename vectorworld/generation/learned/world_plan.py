"""A world-wide road layout for road-plan models: the plan hints of every tile read off one city plan.

A DiT trained with ``DiTConfig.border_hints`` is told where new roads enter or leave the front half of a
tile at its sides. Drawn tile by tile (:class:`~vectorworld.generation.learned.road_plan.RoadPlans`), the
plans of neighbouring tiles do not agree: a tile plans a cross street where its neighbour already drew a
road along it, and the world fills with roads in front of roads. Here every tile reads its plan off the
same seeded procedural :class:`~vectorworld.generation.procedural.city_plan.CityPlan`, anchored at the
first tile (as the procedural generator anchors its own): the cross streets of neighbouring tiles line up.
The model still draws every lane; the plan only names side-border poses, as in training
(:func:`~vectorworld.generation.learned.tile_context.tile_plan`). Opt-in
(``LearnedTileGenerator(plan_source="city")``): the learned roads drift off the plan and the junctions drawn
at its density jam rollouts (``docs/generator_runs/world_plan/``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vectorworld import geometry
from vectorworld.generation.base import TileFrame
from vectorworld.generation.learned.tile_context import clip_to_square, to_tile_frame
from vectorworld.generation.learned.tile_tensors import (
    BORDER_MARGIN_M,
    HALF_TILE_M,
    HINT_FEATURES,
    LANE_POINTS,
    side_border_rows,
)
from vectorworld.generation.procedural.city_plan import CityPlan
from vectorworld.generation.procedural.city_tiles import CityAnchor, CityRegion

DRAWN_CLEARANCE_M = 5.0
"""A planned border pose this close to a known lane is a road already drawn: no hint."""


@dataclass(frozen=True)
class WorldPlan:
    """The city plan of one world (``plan``) placed at ``anchor`` (its first road on the start tile's road)."""

    plan: CityPlan
    anchor: CityAnchor

    @classmethod
    def drawn(cls, frame: TileFrame, rng: np.random.Generator) -> WorldPlan:
        """A new plan (seeded from ``rng``) whose first road runs through ``frame``'s centre along its +x."""
        return cls(CityPlan(int(rng.integers(1 << 62))),
                   CityAnchor(np.asarray(frame.center_xy, np.float64).copy(), float(frame.yaw)))

    def anchored_on(self, lane: np.ndarray, frame: TileFrame) -> WorldPlan:
        """The same plan, its first road laid on ``lane`` (N, 2) (``frame``'s tile frame; the start road): the
        plan origin at the lane point nearest the tile centre, its +x along the lane there."""
        k = int(np.argmin(np.linalg.norm(lane, axis=-1)))
        a, b = lane[max(k - 1, 0)], lane[min(k + 1, len(lane) - 1)]
        yaw = float(frame.yaw) + float(np.arctan2(b[1] - a[1], b[0] - a[0]))
        origin = frame.to_global(lane[k][None])[0]
        return WorldPlan(self.plan, CityAnchor(np.asarray(origin, np.float64), yaw))

    def hints(self, frame: TileFrame, known_points: tuple[np.ndarray, ...] = ()) -> np.ndarray:
        """Plan rows (k, 6) of the tile at ``frame``: the plan lanes that enter or leave the front half at a
        side border (:func:`~vectorworld.generation.learned.tile_tensors.side_border_rows`), except where a
        known lane (tile frame, ``known_points``) already passes within :data:`DRAWN_CLEARANCE_M`."""
        polylines = list(CityRegion(self.plan, self.anchor, frame, margin_m=0.0).points.values())
        runs = []
        for local in _side_candidates(frame, polylines):
            run = clip_to_square(local)
            if run is not None:
                runs.append(geometry.resample_polyline(run, LANE_POINTS))
        if not runs:
            return np.zeros((0, HINT_FEATURES), np.float32)
        rows = side_border_rows(np.stack(runs))
        rows = rows[rows[:, :2].sum(-1) > 0.5]
        if known_points and len(rows):
            a = np.concatenate([points[:-1] for points in known_points])
            b = np.concatenate([points[1:] for points in known_points])
            near = geometry.point_segment_distance(rows[:, 2:4] * HALF_TILE_M, a, b).min(1) < DRAWN_CLEARANCE_M
            rows = rows[~near]
        return rows


def _side_candidates(frame: TileFrame, polylines: list[np.ndarray]) -> list[np.ndarray]:
    """The polylines (global) that may end on a side border of ``frame``'s front half, in its tile frame: their
    bounding box meets the front half and reaches a side border."""
    if not polylines:
        return []
    local, lo, hi = to_tile_frame(frame, polylines)
    near = ((hi[:, 0] >= 0.0) & (lo[:, 0] <= HALF_TILE_M) & (hi[:, 1] >= -HALF_TILE_M) & (lo[:, 1] <= HALF_TILE_M)
            & (np.maximum(-lo[:, 1], hi[:, 1]) >= HALF_TILE_M - BORDER_MARGIN_M))
    return [local[k] for k in np.flatnonzero(near)]
