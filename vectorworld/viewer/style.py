"""Colours (RGB 0-255) and sizes of the debugger, in one place so tests can assert on them.

A dark background; lanes coloured by type; agents filled by type and outlined by controlling policy; the
ego in a colour nothing else uses; collisions and off-road in saturated red / orange.
"""

from __future__ import annotations

from vectorworld.scene import AgentType, LaneType
from vectorworld.signals import SignalState

Color = tuple[int, int, int]

BACKGROUND: Color = (24, 26, 30)
DRIVABLE: Color = (52, 56, 64)
TILE_BORDER: Color = (78, 84, 96)
TILE_LABEL: Color = (120, 128, 144)
FRONTIER: Color = (0, 200, 220)
LANE_EDGE_SUCCESSOR: Color = (250, 210, 60)
LANE_EDGE_NEIGHBOR: Color = (200, 90, 210)
ROUTE: Color = (46, 128, 78)
CROSSWALK: Color = (150, 154, 162)
CROSSWALK_OCCUPIED: Color = (235, 238, 242)
EGO_PLAN: Color = (255, 120, 220)
VELOCITY: Color = (235, 235, 235)
LABEL: Color = (230, 232, 236)
HUD_TEXT: Color = (230, 232, 236)
HUD_DIM: Color = (150, 156, 168)
HUD_PANEL: Color = (0, 0, 0)
HUD_PANEL_ALPHA = 170
WARNING: Color = (255, 196, 0)

LANE_COLORS: dict[int, Color] = {
    LaneType.UNDEFINED: (150, 150, 150),
    LaneType.FREEWAY: (110, 170, 255),
    LaneType.SURFACE_STREET: (185, 192, 205),
    LaneType.BIKE_LANE: (120, 220, 140),
    LaneType.CONNECTOR: (240, 170, 90),
}

AGENT_FILL: dict[int, Color] = {
    AgentType.UNSET: (140, 140, 140),
    AgentType.VEHICLE: (66, 135, 245),
    AgentType.PEDESTRIAN: (80, 210, 120),
    AgentType.CYCLIST: (185, 110, 245),
    AgentType.OTHER: (170, 170, 120),
}
EGO_FILL: Color = (255, 196, 32)

POLICY_OUTLINE: dict[int, Color] = {
    0: (255, 255, 255),  # ego planner
    1: (20, 40, 90),     # NPC policy
    2: (0, 230, 230),    # log replay
}
POLICY_NAMES = {0: "ego", 1: "NPC policy", 2: "log replay"}

COLLISION: Color = (255, 40, 40)
OFFROAD: Color = (255, 140, 0)
NPC_CONTACT: Color = (255, 90, 160)
INFRACTION: Color = (250, 220, 60)
NPC_REMOVED: Color = (170, 255, 40)
"""Where an NPC was removed as stuck: a crossed ring with its cause, for REMOVAL_MARKER_S after the step."""

SIGNAL_COLORS: dict[int, Color] = {
    SignalState.UNKNOWN: (120, 124, 132),
    SignalState.ARROW_STOP: (230, 40, 40),
    SignalState.ARROW_CAUTION: (255, 200, 0),
    SignalState.ARROW_GO: (60, 255, 140),
    SignalState.STOP: (230, 40, 40),
    SignalState.CAUTION: (255, 200, 0),
    SignalState.GO: (40, 200, 80),
    SignalState.FLASHING_STOP: (170, 30, 30),
    SignalState.FLASHING_CAUTION: (190, 150, 0),
}
"""Stop-line colours by light state (protected arrows a brighter green than permissive GO)."""
SIGNAL_LINE_PX = 3

TIMELINE_BG: Color = (40, 44, 52)
TIMELINE_FILL: Color = (90, 110, 140)
TIMELINE_TILE: Color = (0, 160, 180)

FONT_SIZE = 18
SMALL_FONT_SIZE = 14
LANE_LINE_PX = 1
HIGHLIGHT_PX = 4


def lane_color(lane_type: int) -> Color:
    return LANE_COLORS.get(int(lane_type), LANE_COLORS[LaneType.UNDEFINED])


def agent_fill(agent_type: int) -> Color:
    return AGENT_FILL.get(int(agent_type), AGENT_FILL[AgentType.UNSET])


def signal_color(state: int) -> Color:
    return SIGNAL_COLORS.get(int(state), SIGNAL_COLORS[SignalState.UNKNOWN])


def policy_outline(policy: int) -> Color:
    return POLICY_OUTLINE.get(int(policy), POLICY_OUTLINE[1])
