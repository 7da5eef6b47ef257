"""Map layers: drivable area, tile borders and frontier, lane centrelines, lane-graph edges, route.

Each function draws one layer of a :class:`MapState` onto a pygame surface through a :class:`Camera`.
Lanes outside the view are culled by their bounding box; all points of a layer are projected in one
numpy call.
"""

from __future__ import annotations

import numpy as np
import pygame

from vectorworld.scene import Crosswalk
from vectorworld.signals import SignalView
from vectorworld.viewer import style
from vectorworld.viewer.camera import Camera
from vectorworld.viewer.map_state import LaneGeometry, LaneGeometryCache, MapState

CHEVRON_HALF_M = 0.9
"""Half size of a direction chevron (m)."""
ROUTE_WIDTH_M = 1.6
"""Width of the route band (m)."""
MIN_CHEVRON_SCALE = 2.5
"""Below this zoom (px/m) chevrons would be sub-pixel noise and are skipped."""


def visible_lanes(state: MapState, cache: LaneGeometryCache, camera: Camera) -> list[tuple[int, LaneGeometry]]:
    """(lane id, geometry) of lanes whose corridor bbox intersects the view."""
    view = camera.view_bbox(margin_m=2.0)
    out = []
    for lane_id, lane in state.lanes.items():
        geo = cache.get(lane)
        b = geo.bbox
        if b[2] >= view[0] and b[0] <= view[2] and b[3] >= view[1] and b[1] <= view[3]:
            out.append((lane_id, geo))
    return out


def draw_drivable(surface: pygame.Surface, camera: Camera, lanes: list[tuple[int, LaneGeometry]]) -> None:
    """Fill every visible lane corridor (lane width) in the drivable-area colour."""
    for poly in camera.project_many([geo.corridor for _, geo in lanes]):
        pygame.draw.polygon(surface, style.DRIVABLE, poly.tolist())


def draw_tiles(surface: pygame.Surface, camera: Camera, state: MapState, font: pygame.font.Font,
               frontier: np.ndarray) -> None:
    """Tile borders, each tile's generation order at its centre, and the frontier edges highlighted."""
    tiles = sorted(state.tiles.values(), key=lambda t: t.order)
    if tiles:
        corners = camera.project_many([t.corners() for t in tiles])
        centres = np.round(camera.to_screen(np.array([t.center_xy for t in tiles]))).astype(int)
        for tile, poly, centre in zip(tiles, corners, centres, strict=True):
            pygame.draw.polygon(surface, style.TILE_BORDER, poly.tolist(), 1)
            # No anti-aliasing: this layer is cached on a colour-keyed canvas, where blended edges would
            # pick up the key colour.
            label = font.render(f"#{tile.order}", False, style.TILE_LABEL)
            surface.blit(label, label.get_rect(center=(int(centre[0]), int(centre[1]))))
    if len(frontier):
        seg = np.round(camera.to_screen(frontier)).astype(int)
        for a, b in seg:
            pygame.draw.line(surface, style.FRONTIER, a.tolist(), b.tolist(), 3)


def draw_lanes(surface: pygame.Surface, camera: Camera, state: MapState,
               lanes: list[tuple[int, LaneGeometry]]) -> None:
    """Centrelines coloured by lane type, with direction chevrons when zoomed in enough."""
    if not lanes:
        return
    polylines = camera.project_many([state.lanes[i].points for i, _ in lanes])
    for (lane_id, _), pts in zip(lanes, polylines, strict=True):
        pygame.draw.lines(surface, style.lane_color(state.lanes[lane_id].lane_type), False, pts.tolist(),
                          style.LANE_LINE_PX)
    if camera.scale_px_per_m < MIN_CHEVRON_SCALE:
        return
    marks = np.concatenate([geo.chevrons for _, geo in lanes])
    yaw = np.concatenate([geo.chevron_yaw for _, geo in lanes])
    colors = [style.lane_color(state.lanes[i].lane_type) for i, geo in lanes for _ in range(len(geo.chevrons))]
    d = CHEVRON_HALF_M
    c, s = np.cos(yaw)[:, None], np.sin(yaw)[:, None]
    local = np.array([[-d, d], [d, 0.0], [-d, -d]])  # an open "V" pointing along the lane
    world = np.stack([c * local[:, 0] - s * local[:, 1], s * local[:, 0] + c * local[:, 1]], -1) + marks[:, None]
    screen = np.round(camera.to_screen(world)).astype(int)
    for color, tri in zip(colors, screen, strict=True):
        pygame.draw.lines(surface, color, False, tri.tolist(), 1)


def draw_lane_edges(surface: pygame.Surface, camera: Camera, successor: np.ndarray, neighbor: np.ndarray) -> None:
    """Lane-graph edges: successor links (yellow, end -> start dot) and neighbour links (magenta)."""
    for segs, color in ((successor, style.LANE_EDGE_SUCCESSOR), (neighbor, style.LANE_EDGE_NEIGHBOR)):
        if not len(segs):
            continue
        screen = np.round(camera.to_screen(segs)).astype(int)
        for a, b in screen:
            pygame.draw.line(surface, color, a.tolist(), b.tolist(), 1)
            pygame.draw.circle(surface, color, b.tolist(), 2)


def stop_lines(signals: SignalView) -> np.ndarray:
    """(L, 2, 2) m, global frame: each light's stop line, across its lane at the stop point."""
    across = np.stack([-np.sin(signals.stop_yaw), np.cos(signals.stop_yaw)], -1) * (signals.width_m / 2.0)[:, None]
    return np.stack([signals.stop_xy - across, signals.stop_xy + across], 1)


def draw_signals(surface: pygame.Surface, camera: Camera, signals: SignalView) -> None:
    """Every traffic light as its stop line, coloured by the state it shows (:data:`style.SIGNAL_COLORS`)."""
    if not len(signals):
        return
    screen = np.round(camera.to_screen(stop_lines(signals))).astype(int)
    width = max(style.SIGNAL_LINE_PX, int(round(0.6 * camera.scale_px_per_m)))
    for (a, b), state in zip(screen, signals.states.tolist(), strict=True):
        pygame.draw.line(surface, style.signal_color(state), a.tolist(), b.tolist(), width)


def zebra_bars(walk: Crosswalk, spacing_m: float = 1.0) -> np.ndarray:
    """(B, 4, 2) m, global frame: the painted bars of a crosswalk, 0.5 m wide, every ``spacing_m`` across it."""
    start, end = walk.walk[0], walk.walk[-1]
    length = float(np.linalg.norm(end - start))
    along = walk.direction
    side = np.array([-along[1], along[0]]) * walk.half_width_m
    centres = start + np.arange(0.5, length, spacing_m)[:, None] * along
    half_bar = along * 0.25
    return np.stack([centres - half_bar - side, centres + half_bar - side, centres + half_bar + side,
                     centres - half_bar + side], 1)


def draw_crosswalks(surface: pygame.Surface, camera: Camera, crosswalks: tuple[Crosswalk, ...],
                    occupied: frozenset[int]) -> None:
    """Crosswalks as zebra bars; one a pedestrian is crossing is drawn brighter."""
    for walk in crosswalks:
        color = style.CROSSWALK_OCCUPIED if walk.id in occupied else style.CROSSWALK
        for bar in np.round(camera.to_screen(zebra_bars(walk))).astype(int):
            pygame.draw.polygon(surface, color, bar.tolist())


def draw_route(surface: pygame.Surface, camera: Camera, route: np.ndarray) -> None:
    """The ego's route as a wide dark-green band under the lane centrelines."""
    if len(route) < 2:
        return
    pts = np.round(camera.to_screen(route)).astype(int)
    width = max(3, int(round(ROUTE_WIDTH_M * camera.scale_px_per_m)))
    pygame.draw.lines(surface, style.ROUTE, False, pts.tolist(), width)
