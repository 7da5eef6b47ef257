"""Heads-up display: status panel, event banner, warnings, the seek timeline and the help overlay.

The timeline's geometry (:func:`timeline_rect`, :func:`timeline_index_at`) is shared with the input
handler so that clicking the bar seeks to the frame under the mouse.
"""

from __future__ import annotations

from dataclasses import dataclass

import pygame

from vectorworld.sim.metrics import StuckRemoval
from vectorworld.viewer import style
from vectorworld.viewer.events import EventIndex, EventKind, MetricsSoFar

TIMELINE_HEIGHT_PX = 14
TIMELINE_MARGIN_PX = 12

HELP_LINES = (
    ("space", "play / pause"),
    ("right / left  or  . / ,", "step forward / back (drive: arrows steer, . steps)"),
    ("page up / down", "seek -/+ 10 s;  home / end: first / last step"),
    ("click / drag timeline", "seek"),
    ("n / b", "next / previous event (collision, off-road, score infraction, tile)"),
    ("[ / ]", "playback speed down / up"),
    ("wheel  or  + / -", "zoom"),
    ("drag  or  shift + arrows", "pan (turns follow off)"),
    ("f", "follow ego on / off"),
    ("e / t / l / v / r / p / d", "lane-graph edges / tiles / labels / velocities / route / plan / drivable"),
    ("g", "traffic lights (stop lines coloured by state)"),
    ("a", "drive mode: autopilot (built-in planner) on / off"),
    ("s", "screenshot (PNG in the current directory)"),
    ("h  or  f1", "this help"),
    ("q  or  esc", "quit"),
)

LEGEND = (
    (style.EGO_FILL, "ego"), (style.AGENT_FILL[1], "vehicle"), (style.AGENT_FILL[2], "pedestrian"),
    (style.AGENT_FILL[3], "cyclist"), (style.EGO_PLAN, "ego plan"), (style.ROUTE, "route"),
    (style.FRONTIER, "tile frontier"), (style.LANE_EDGE_SUCCESSOR, "successor edge"),
    (style.LANE_EDGE_NEIGHBOR, "neighbour edge"), (style.COLLISION, "collision"), (style.OFFROAD, "off-road"),
    (style.INFRACTION, "score infraction"), (style.NPC_REMOVED, "npc removed (stuck)"),
    (style.LANE_COLORS[4], "connector lane"), (style.POLICY_OUTLINE[2], "log-replay outline"),
)


@dataclass(frozen=True)
class HudInfo:
    """Everything the status panel shows for one frame."""

    title: str
    step: int
    sim_time_s: float
    km: float
    ego_speed_mps: float
    metrics: MetricsSoFar
    tile_ms_step: float
    npc_policy_ms_step: float
    playback: str
    agents: int
    lanes: int
    events: frozenset[EventKind]
    collided_ids: tuple[int, ...]
    end_reason: str
    has_timings: bool = True
    score_events: tuple[str, ...] = ()
    """Planner-score infractions that started in this step (at_fault_collision, ttc, overspeed, ...)."""
    stuck_removals: tuple[StuckRemoval, ...] = ()
    """NPCs removed as stuck at the end of this step."""


class Fonts:
    """The two font sizes of the HUD (pygame's default font, available without any system fonts)."""

    def __init__(self) -> None:
        pygame.font.init()
        self.normal = pygame.font.Font(None, style.FONT_SIZE + 4)
        self.small = pygame.font.Font(None, style.SMALL_FONT_SIZE + 4)


def _panel(surface: pygame.Surface, rect: pygame.Rect) -> None:
    shade = pygame.Surface(rect.size, pygame.SRCALPHA)
    shade.fill((*style.HUD_PANEL, style.HUD_PANEL_ALPHA))
    surface.blit(shade, rect.topleft)


def draw_status(surface: pygame.Surface, fonts: Fonts, info: HudInfo) -> None:
    """Top-left panel: step, time, km, speed, metrics so far, timings."""
    m = info.metrics
    lines = [
        (info.title, style.HUD_TEXT),
        (f"step {info.step}   t {info.sim_time_s:7.1f} s   {info.playback}", style.HUD_TEXT),
        (f"km {info.km:6.3f}   ego {info.ego_speed_mps:5.1f} m/s ({info.ego_speed_mps * 3.6:5.1f} km/h)",
         style.HUD_TEXT),
        (f"agents {info.agents}   lanes {info.lanes}   tiles {m.tiles}", style.HUD_DIM),
        (f"ego collisions {m.ego_collisions}   off-road steps {m.ego_offroad_steps}",
         style.COLLISION if m.ego_collisions else style.HUD_TEXT),
        (f"npc contacts {m.npc_collisions}   off-road {m.npc_offroad}   removed stuck {m.npc_removed}", style.HUD_DIM),
        (f"score infractions {m.infractions}" + (f"   last: {m.last_infraction}" if m.last_infraction else ""),
         style.INFRACTION if m.infractions else style.HUD_DIM),
    ]
    if info.has_timings:
        lines += [
            (f"tile ms  step {info.tile_ms_step:6.1f}   p50 {m.tile_ms_p50:6.1f}   max {m.tile_ms_max:6.1f}",
             style.HUD_DIM),
            (f"npc policy ms  step {info.npc_policy_ms_step:5.2f}   mean {m.npc_policy_ms_mean:5.2f}",
             style.HUD_DIM)]
    else:
        lines.append(("tile / npc policy ms: not recorded (rollout without timings)", style.HUD_DIM))
    if info.end_reason != "none":
        lines.append((f"episode ended: {info.end_reason}", style.WARNING))
    rendered = [fonts.normal.render(text, True, color) for text, color in lines]
    width = max(r.get_width() for r in rendered) + 16
    height = sum(r.get_height() + 2 for r in rendered) + 12
    _panel(surface, pygame.Rect(8, 8, width, height))
    y = 14
    for r in rendered:
        surface.blit(r, (16, y))
        y += r.get_height() + 2


def removal_text(removals: tuple[StuckRemoval, ...]) -> str:
    """The banner's words for a step's stuck removals: each NPC with its cause, or counts per cause when many."""
    if len(removals) <= 3:
        return ", ".join(f"npc {r.agent_id} removed: {r.cause.replace('_', ' ')}" for r in removals)
    counts: dict[str, int] = {}
    for r in removals:
        counts[r.cause] = counts.get(r.cause, 0) + 1
    causes = ", ".join(f"{n} {c.replace('_', ' ')}" for c, n in sorted(counts.items()))
    return f"{len(removals)} npcs removed: {causes}"


def banner_parts(info: HudInfo) -> list[tuple[str, style.Color]]:
    """The event banner's texts and colours for this step, left to right."""
    parts: list[tuple[str, style.Color]] = []
    if EventKind.COLLISION in info.events:
        parts.append((f"COLLISION with {', '.join(map(str, info.collided_ids))}", style.COLLISION))
    if EventKind.OFFROAD in info.events:
        parts.append(("EGO OFF-ROAD", style.OFFROAD))
    if EventKind.NPC_COLLISION in info.events:
        parts.append(("npc contact", style.NPC_CONTACT))
    if EventKind.INFRACTION in info.events:
        parts.append((" ".join(kind.replace("_", " ") for kind in info.score_events).upper(), style.INFRACTION))
    if EventKind.NPC_REMOVED in info.events:
        parts.append((removal_text(info.stuck_removals), style.NPC_REMOVED))
    if EventKind.TILE in info.events:
        parts.append(("tile generated", style.FRONTIER))
    return parts


def draw_event_banner(surface: pygame.Surface, fonts: Fonts, info: HudInfo) -> None:
    """A banner at the top centre naming the events of this step; a red/orange frame on ego events."""
    parts = banner_parts(info)
    w, h = surface.get_size()
    for kind, color in ((EventKind.COLLISION, style.COLLISION), (EventKind.OFFROAD, style.OFFROAD)):
        if kind in info.events:
            pygame.draw.rect(surface, color, pygame.Rect(0, 0, w, h), 6)
            break
    if not parts:
        return
    rendered = [fonts.normal.render(text, True, color) for text, color in parts]
    total = sum(r.get_width() for r in rendered) + 24 * (len(rendered) - 1)
    x = (w - total) // 2
    _panel(surface, pygame.Rect(x - 10, 10, total + 20, rendered[0].get_height() + 10))
    for r in rendered:
        surface.blit(r, (x, 15))
        x += r.get_width() + 24


def draw_messages(surface: pygame.Surface, fonts: Fonts, messages: list[str]) -> None:
    """Warnings (truncated recording, disconnected, ...) stacked at the top right."""
    w = surface.get_width()
    y = 12
    for text in messages:
        r = fonts.normal.render(text, True, style.WARNING)
        _panel(surface, pygame.Rect(w - r.get_width() - 24, y - 4, r.get_width() + 16, r.get_height() + 8))
        surface.blit(r, (w - r.get_width() - 16, y))
        y += r.get_height() + 12


def timeline_rect(size_px: tuple[int, int]) -> pygame.Rect:
    w, h = size_px
    return pygame.Rect(TIMELINE_MARGIN_PX, h - TIMELINE_MARGIN_PX - TIMELINE_HEIGHT_PX,
                       w - 2 * TIMELINE_MARGIN_PX, TIMELINE_HEIGHT_PX)


def timeline_index_at(size_px: tuple[int, int], x_px: float, num_frames: int) -> int:
    """The frame index under screen column ``x_px`` of the timeline (clamped)."""
    rect = timeline_rect(size_px)
    frac = (x_px - rect.left) / max(rect.width, 1)
    return max(0, min(num_frames - 1, int(round(frac * (num_frames - 1)))))


def draw_timeline(surface: pygame.Surface, events: EventIndex, index: int, num_frames: int) -> None:
    """The seek bar: progress, ticks for tiles (cyan), NPCs removed as stuck (lime), score infractions
    (yellow), off-road (orange) and collisions (red)."""
    rect = timeline_rect(surface.get_size())
    pygame.draw.rect(surface, style.TIMELINE_BG, rect)
    span = max(num_frames - 1, 1)
    done = int(rect.width * index / span)
    pygame.draw.rect(surface, style.TIMELINE_FILL, pygame.Rect(rect.left, rect.top, done, rect.height))
    for kind, color, top in ((EventKind.TILE, style.TIMELINE_TILE, rect.bottom - 4),
                             (EventKind.NPC_REMOVED, style.NPC_REMOVED, rect.bottom - rect.height // 3),
                             (EventKind.INFRACTION, style.INFRACTION, rect.top + rect.height // 2),
                             (EventKind.OFFROAD, style.OFFROAD, rect.top),
                             (EventKind.COLLISION, style.COLLISION, rect.top)):
        for i in events.indices(kind):
            x = rect.left + int(rect.width * i / span)
            pygame.draw.line(surface, color, (x, top), (x, rect.bottom - 1), 2 if kind != EventKind.TILE else 1)
    x = rect.left + done
    pygame.draw.rect(surface, style.HUD_TEXT, pygame.Rect(x - 2, rect.top - 3, 4, rect.height + 6))


def draw_help(surface: pygame.Surface, fonts: Fonts) -> None:
    """The key bindings and the colour legend, centred."""
    keys = [fonts.normal.render(k, True, style.WARNING) for k, _ in HELP_LINES]
    docs = [fonts.normal.render(d, True, style.HUD_TEXT) for _, d in HELP_LINES]
    legend = [fonts.small.render(name, True, style.HUD_TEXT) for _, name in LEGEND]
    key_w = max(k.get_width() for k in keys) + 20
    width = key_w + max(d.get_width() for d in docs) + 40
    line_h = keys[0].get_height() + 4
    legend_rows = (len(LEGEND) + 3) // 4
    height = line_h * len(keys) + 28 + legend_rows * (legend[0].get_height() + 6) + 20
    w, h = surface.get_size()
    rect = pygame.Rect((w - width) // 2, max(10, (h - height) // 2), width, height)
    _panel(surface, rect)
    _panel(surface, rect)
    y = rect.top + 12
    for k, d in zip(keys, docs, strict=True):
        surface.blit(k, (rect.left + 16, y))
        surface.blit(d, (rect.left + 16 + key_w, y))
        y += line_h
    y += 12
    col_w = (width - 32) // 4
    for i, ((color, _), text) in enumerate(zip(LEGEND, legend, strict=True)):
        x = rect.left + 16 + (i % 4) * col_w
        yy = y + (i // 4) * (text.get_height() + 6)
        pygame.draw.rect(surface, color, pygame.Rect(x, yy + 2, 12, 10))
        surface.blit(text, (x + 18, yy))
