"""Agent layers: oriented boxes (fill by type, outline by controlling policy), id labels, velocity arrows,
history trails, the ego's commanded trajectory, collision / off-road highlights, and markers where NPCs were
removed as stuck.

Positions come from a :class:`~vectorworld.sim.observation.Frame` (global frame, m); every layer projects
its points with one numpy call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pygame

from vectorworld import geometry
from vectorworld.sim.metrics import StuckRemoval
from vectorworld.sim.observation import Frame
from vectorworld.viewer import style
from vectorworld.viewer.camera import Camera

VELOCITY_HORIZON_S = 1.0
"""A velocity arrow is as long as the distance covered in this time."""
MIN_BOX_PX = 8
"""Agents smaller than this on screen (px) are drawn as dots of this diameter."""
MIN_LABEL_SCALE = 2.0
"""Below this zoom (px/m) id labels are skipped (they would cover the boxes)."""


@dataclass(frozen=True)
class Highlights:
    """What to highlight at this step: agents the ego hit, NPCs in contact, whether the ego is off-road."""

    collided_ids: frozenset[int] = frozenset()
    npc_contact_ids: frozenset[int] = frozenset()
    ego_offroad: bool = False


class LabelCache:
    """Rendered id labels, one surface per agent id (rendering text is the slow part of a frame)."""

    def __init__(self, font: pygame.font.Font) -> None:
        self.font = font
        self._surfaces: dict[int, pygame.Surface] = {}

    def get(self, agent_id: int) -> pygame.Surface:
        surf = self._surfaces.get(agent_id)
        if surf is None:
            if len(self._surfaces) > 4096:
                self._surfaces.clear()
            surf = self.font.render(str(agent_id), True, style.LABEL)
            self._surfaces[agent_id] = surf
        return surf


def npc_contacts(frame: Frame) -> frozenset[int]:
    """Ids of non-ego agents whose boxes overlap another non-ego agent's box in this frame."""
    a = frame.agents
    mask = a.valid.copy()
    mask[frame.ego_slot] = False
    overlap = geometry.pairwise_box_overlap(a.xy, a.yaw, a.length, a.width, mask)
    hit = overlap.any(1) & mask
    return frozenset(int(i) for i in a.id[hit])


def draw_trails(surface: pygame.Surface, camera: Camera, trails: dict[int, np.ndarray], ego_id: int) -> None:
    """Past positions of each agent as a thin polyline (the ego's in its own colour)."""
    if not trails:
        return
    ids = list(trails)
    screens = camera.project_many([trails[i] for i in ids])
    for agent_id, pts in zip(ids, screens, strict=True):
        color = style.EGO_FILL if agent_id == ego_id else style.HUD_DIM
        pygame.draw.lines(surface, color, False, pts.tolist(), 2 if agent_id == ego_id else 1)


def draw_ego_plan(surface: pygame.Surface, camera: Camera, plan: np.ndarray) -> None:
    """The ego's commanded trajectory (T, 3) as a line with a dot per 0.5 s."""
    if len(plan) < 1:
        return
    pts = np.round(camera.to_screen(np.asarray(plan)[:, :2])).astype(int)
    if len(pts) >= 2:
        pygame.draw.lines(surface, style.EGO_PLAN, False, pts.tolist(), 2)
    for p in pts[4::5]:
        pygame.draw.circle(surface, style.EGO_PLAN, p.tolist(), 3)


def draw_agents(surface: pygame.Surface, camera: Camera, frame: Frame, labels: LabelCache | None,
                velocities: bool, highlights: Highlights) -> None:
    """Every valid agent as an oriented box; the ego last, so it is always on top."""
    a = frame.agents
    slots = np.nonzero(a.valid)[0]
    if len(slots) == 0:
        return
    ego = frame.ego_slot
    slots = np.concatenate([slots[slots != ego], slots[slots == ego]])
    corners = geometry.box_corners(a.xy[slots], a.yaw[slots], a.length[slots], a.width[slots])
    boxes = np.round(camera.to_screen(corners)).astype(int)
    centres = np.round(camera.to_screen(a.xy[slots])).astype(int)
    policy = frame.policy_of if len(frame.policy_of) == a.capacity else np.ones(a.capacity, np.int8)
    outline_px = 2 if camera.scale_px_per_m >= 3.0 else 1
    tiny = np.maximum(a.length[slots], a.width[slots]) * camera.scale_px_per_m < MIN_BOX_PX
    for k, slot in enumerate(slots):
        fill = style.EGO_FILL if slot == ego else style.agent_fill(a.agent_type[slot])
        outline = style.policy_outline(policy[slot])
        if tiny[k]:  # pedestrians when zoomed out: a dot that stays visible
            pygame.draw.circle(surface, fill, centres[k].tolist(), MIN_BOX_PX // 2)
            pygame.draw.circle(surface, outline, centres[k].tolist(), MIN_BOX_PX // 2, 1)
            continue
        box = boxes[k].tolist()
        pygame.draw.polygon(surface, fill, box)
        pygame.draw.polygon(surface, outline, box, outline_px)
        # Heading: a bar across the front of the box.
        pygame.draw.line(surface, style.LABEL, box[0], box[3], outline_px)
    if velocities:
        _draw_velocities(surface, camera, a.xy[slots], a.yaw[slots], a.length[slots], a.velocity[slots])
    _draw_highlights(surface, a.id[slots], slots == ego, boxes, centres, camera, highlights)
    if labels is not None and camera.scale_px_per_m >= MIN_LABEL_SCALE:
        half = (np.maximum(a.length[slots], a.width[slots]) / 2.0 * camera.scale_px_per_m).astype(int)
        for k, slot in enumerate(slots):
            label = labels.get(int(a.id[slot]))
            surface.blit(label, (int(centres[k, 0] + half[k] // 2 + 2), int(centres[k, 1] - half[k] // 2 - 14)))


def _draw_velocities(surface: pygame.Surface, camera: Camera, xy: np.ndarray, yaw: np.ndarray,
                     length: np.ndarray, velocity: np.ndarray) -> None:
    """Arrows from the front of each moving box, as long as the distance covered in VELOCITY_HORIZON_S."""
    speed = np.linalg.norm(velocity, axis=-1)
    moving = speed > 0.3
    if not moving.any():
        return
    front = xy + np.stack([np.cos(yaw), np.sin(yaw)], -1) * (length / 2.0)[:, None]
    starts = np.round(camera.to_screen(front)).astype(int)
    tips_world = front + velocity * VELOCITY_HORIZON_S
    tips = np.round(camera.to_screen(tips_world)).astype(int)
    direction = velocity / np.maximum(speed, 1e-9)[:, None]
    head_m = np.minimum(1.0, 0.3 * speed * VELOCITY_HORIZON_S)
    left = tips_world - direction * head_m[:, None] + direction[:, ::-1] * np.array([-1, 1]) * head_m[:, None] * 0.6
    right = tips_world - direction * head_m[:, None] - direction[:, ::-1] * np.array([-1, 1]) * head_m[:, None] * 0.6
    lefts, rights = (np.round(camera.to_screen(p)).astype(int) for p in (left, right))
    for k in np.nonzero(moving)[0]:
        pygame.draw.line(surface, style.VELOCITY, starts[k].tolist(), tips[k].tolist(), 1)
        pygame.draw.polygon(surface, style.VELOCITY, [tips[k].tolist(), lefts[k].tolist(), rights[k].tolist()])


def _draw_highlights(surface: pygame.Surface, ids: np.ndarray, is_ego: np.ndarray, boxes: np.ndarray,
                     centres: np.ndarray, camera: Camera, h: Highlights) -> None:
    """Thick outlines and rings: red for ego collisions, pink for NPC contacts, orange for ego off-road."""
    ring_px = max(12, int(4.0 * camera.scale_px_per_m))
    for k, agent_id in enumerate(ids.tolist()):
        box = boxes[k].tolist()
        if is_ego[k] and h.ego_offroad:
            pygame.draw.polygon(surface, style.OFFROAD, box, style.HIGHLIGHT_PX)
            pygame.draw.circle(surface, style.OFFROAD, centres[k].tolist(), ring_px + 6, 3)
        if agent_id in h.collided_ids or (is_ego[k] and h.collided_ids):
            pygame.draw.polygon(surface, style.COLLISION, box, style.HIGHLIGHT_PX)
            pygame.draw.circle(surface, style.COLLISION, centres[k].tolist(), ring_px, 3)
        elif agent_id in h.npc_contact_ids:
            pygame.draw.polygon(surface, style.NPC_CONTACT, box, style.HIGHLIGHT_PX)


def draw_removals(surface: pygame.Surface, camera: Camera, removals: list[tuple[int, StuckRemoval]],
                  font: pygame.font.Font) -> None:
    """A crossed ring where each NPC stood when the session removed it as stuck, labelled with the cause;
    ``removals``: (frames since the removal, removal), as :meth:`EventIndex.recent_removals` gives them."""
    if not removals:
        return
    radius = max(10, int(2.5 * camera.scale_px_per_m))
    arm = int(radius * 0.6)
    centres = np.round(camera.to_screen(np.array([(r.x_m, r.y_m) for _, r in removals]))).astype(int)
    for (age, removal), (x, y) in zip(removals, centres.tolist(), strict=True):
        width = 3 if age == 0 else 2
        pygame.draw.circle(surface, style.NPC_REMOVED, (x, y), radius, width)
        pygame.draw.line(surface, style.NPC_REMOVED, (x - arm, y - arm), (x + arm, y + arm), width)
        pygame.draw.line(surface, style.NPC_REMOVED, (x - arm, y + arm), (x + arm, y - arm), width)
        label = font.render(f"{removal.agent_id} removed: {removal.cause.replace('_', ' ')}", True, style.NPC_REMOVED)
        shade = pygame.Surface((label.get_width() + 6, label.get_height() + 2), pygame.SRCALPHA)
        shade.fill((*style.HUD_PANEL, style.HUD_PANEL_ALPHA))  # legible over lanes and arrows
        left, top = x + radius + 4, y - label.get_height() // 2
        surface.blit(shade, (left - 3, top - 1))
        surface.blit(label, (left, top))
