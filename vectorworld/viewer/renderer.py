"""Composes every layer of one step onto a pygame surface: the single drawing entry point.

Layer order (bottom to top): background + drivable area (cached canvas), route, tile borders + frontier,
lane centrelines, lane-graph edges (a second, transparent cached canvas), stop lines coloured by their
traffic light's state, trails, ego plan, agents + highlights + labels, markers where NPCs were removed as
stuck, HUD (status, event banner, warnings, timeline), help overlay. The map canvases are re-drawn only when
the map, the zoom or the layer toggles change, or the view drifts off them.
Both the interactive window and headless screenshots call :meth:`Renderer.draw`.
"""

from __future__ import annotations

import numpy as np
import pygame

from vectorworld import DT_S
from vectorworld.viewer import agent_layers, hud, map_layers, style
from vectorworld.viewer.camera import Camera
from vectorworld.viewer.frame_store import FrameStore
from vectorworld.viewer.map_canvas import MapCanvas
from vectorworld.viewer.map_state import MapState
from vectorworld.viewer.playback import Playback, ViewOptions


class Renderer:
    """Holds fonts and caches that outlive one frame (labels, map-derived edges per map version)."""

    def __init__(self) -> None:
        self.fonts = hud.Fonts()
        self.labels = agent_layers.LabelCache(self.fonts.small)
        self._derived_version: tuple[int, int, bool] | None = None
        self._successor = np.zeros((0, 2, 2))
        self._neighbor = np.zeros((0, 2, 2))
        self._frontier = np.zeros((0, 2, 2))
        self._base = MapCanvas(background=style.BACKGROUND)
        self._lines = MapCanvas(transparent=True)

    @property
    def map_redraws(self) -> int:
        """How many times the cached map canvases were re-drawn (for benchmarks)."""
        return self._base.redraws + self._lines.redraws

    def _derived(self, state: MapState, need_edges: bool) -> None:
        key = (id(state), state.version, need_edges)
        if self._derived_version == key:
            return
        self._frontier = state.frontier_edges()
        if need_edges:
            self._successor, self._neighbor = state.successor_edges(), state.neighbor_edges()
        self._derived_version = key

    def draw(self, surface: pygame.Surface, store: FrameStore, playback: Playback, camera: Camera,
             options: ViewOptions, title: str = "", messages: list[str] | None = None) -> None:
        """Draw frame ``playback.index`` of ``store`` as seen by ``camera``."""
        if not len(store):
            surface.fill(style.BACKGROUND)
            return
        index = store.clamp(playback.index)
        frame = store.frames[index]
        state = store.map_at(index)
        self._derived(state, options.lane_edges)
        self._base.blit(surface, camera, (id(store), state.version, options.drivable),
                        lambda surf, cam: self._draw_base(surf, cam, store, state, options))
        map_layers.draw_crosswalks(surface, camera, frame.crosswalks, frame.occupied_crosswalks)
        if options.route:
            map_layers.draw_route(surface, camera, store.route_at(index))
        self._lines.blit(surface, camera, (id(store), state.version, options.tiles, options.lanes,
                                                   options.lane_edges),
                         lambda surf, cam: self._draw_lines(surf, cam, store, state, options))
        if options.signals:
            map_layers.draw_signals(surface, camera, frame.signals)
        ego_id = int(frame.agents.id[frame.ego_slot])
        if options.trails:
            agent_layers.draw_trails(surface, camera, store.trails(index, options.trail_steps), ego_id)
        if options.plan:
            agent_layers.draw_ego_plan(surface, camera, frame.ego_plan)
        m = frame.step_metrics
        highlights = agent_layers.Highlights(
            collided_ids=frozenset(m.ego_collided_ids),
            npc_contact_ids=agent_layers.npc_contacts(frame) if m.npc_collision_events else frozenset(),
            ego_offroad=m.ego_offroad)
        agent_layers.draw_agents(surface, camera, frame, self.labels if options.labels else None,
                                 options.velocities, highlights)
        agent_layers.draw_removals(surface, camera, store.events.recent_removals(index), self.fonts.small)
        if options.hud:
            info = self.hud_info(store, index, playback, title, len(state.lanes))
            hud.draw_status(surface, self.fonts, info)
            hud.draw_event_banner(surface, self.fonts, info)  # over the status panel where a narrow window overlaps
            hud.draw_timeline(surface, store.events, index, len(store))
        if messages:
            hud.draw_messages(surface, self.fonts, messages)
        if options.help:
            hud.draw_help(surface, self.fonts)

    @staticmethod
    def _draw_base(surface: pygame.Surface, camera: Camera, store: FrameStore, state: MapState,
                   options: ViewOptions) -> None:
        if options.drivable:
            map_layers.draw_drivable(surface, camera, map_layers.visible_lanes(state, store.geometry, camera))

    def _draw_lines(self, surface: pygame.Surface, camera: Camera, store: FrameStore, state: MapState,
                    options: ViewOptions) -> None:
        if options.tiles:
            map_layers.draw_tiles(surface, camera, state, self.fonts.small, self._frontier)
        if options.lanes:
            map_layers.draw_lanes(surface, camera, state, map_layers.visible_lanes(state, store.geometry, camera))
        if options.lane_edges:
            map_layers.draw_lane_edges(surface, camera, self._successor, self._neighbor)

    @staticmethod
    def hud_info(store: FrameStore, index: int, playback: Playback, title: str, num_lanes: int) -> hud.HudInfo:
        frame = store.frames[index]
        a = frame.agents
        state = f"{'playing' if playback.playing else 'paused'} x{playback.speed:g}"
        if playback.follow_ego:
            state += "  follow"
        return hud.HudInfo(
            title=title or "VectorWorld debugger", step=frame.step, sim_time_s=frame.sim_time_us / 1e6,
            km=frame.km, ego_speed_mps=float(a.speed[frame.ego_slot]), metrics=store.events.metrics_so_far(index),
            tile_ms_step=frame.tile_ms, npc_policy_ms_step=frame.npc_policy_ms, playback=state,
            agents=int(a.valid.sum()), lanes=num_lanes, events=store.events.at(index),
            collided_ids=tuple(frame.step_metrics.ego_collided_ids), end_reason=frame.end_reason.value,
            has_timings=store.has_timings, score_events=store.events.score_events[index],
            stuck_removals=store.events.stuck_removals[index])


def follow_camera(camera: Camera, store: FrameStore, playback: Playback) -> Camera:
    """The camera centred on the ego when following, unchanged otherwise."""
    if playback.follow_ego and len(store):
        return camera.centered_on(store.ego_xy(playback.index))
    return camera


SIM_SECONDS_PER_PAGE = 10.0
FRAMES_PER_PAGE = int(round(SIM_SECONDS_PER_PAGE / DT_S))
