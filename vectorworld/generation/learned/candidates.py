"""From decoded candidates to the chosen one: Bézier decode with port pinning, then the validity filter,
checked lazily in best-first order (the first valid candidate wins; the rest are never checked).

Shared by the learned generator (streaming requests) and the training run's held-out validity curve, so
both measure the same thing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from vectorworld.generation.learned.bezier import bezier_points, pin_to_ports
from vectorworld.generation.learned.filter_config import CandidateCheck, FrontierPort, KnownLanes, StitchConfig
from vectorworld.generation.learned.junction_completion import (
    CompletionConfig,
    extend_port_lanes,
    junction_connectors,
    port_continuations,
)
from vectorworld.generation.learned.junction_tees import TeeConfig, tee_junctions
from vectorworld.generation.learned.stitching import check_and_stitch
from vectorworld.generation.learned.tile_tensors import LANE_POINTS, lane_control_points


@dataclass(frozen=True)
class Choice:
    """The chosen candidate: its index, the frontier slots it keeps (``slots[check.keep]`` are the kept
    lanes' slots; -1 for a connector added by junction completion), their decoded, pinned Bézier control
    points (n, 4, 2) and polylines (n, 20, 2) m before the filter, the check, the kept lanes stitched (one
    polyline per ``check.keep``; none when invalid), and how many candidates were checked."""

    index: int
    slots: np.ndarray
    controls: np.ndarray
    lanes: np.ndarray
    check: CandidateCheck
    checked: int
    stitched: list[np.ndarray]

    @property
    def valid(self) -> bool:
        return self.check.valid


def decode_lanes(lane_feat: np.ndarray, hints: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lane features of one candidate (L, 8) -> pinned control points (L, 4, 2) and their polylines
    (L, 20, 2), tile frame, m."""
    control = pin_to_ports(lane_control_points(lane_feat), hints)
    return control, bezier_points(control, LANE_POINTS)


def candidate_order(lane_prob: np.ndarray, hints: np.ndarray, frontier: np.ndarray, threshold: float
                    ) -> np.ndarray:
    """Candidates (C,) best first, by a cheap proxy: hinted port slots that exist, then the mean confidence
    of the existence decisions over the frontier slots."""
    hinted = (hints[:, 0] + hints[:, 1] > 0.5) & frontier
    ports_kept = ((lane_prob > threshold) & hinted[None]).sum(1)
    confidence = np.abs(lane_prob - 0.5)[:, frontier].mean(1) if frontier.any() else np.zeros(len(lane_prob))
    return np.lexsort((np.arange(len(lane_prob)), -confidence, -ports_kept))


def completion_of(model: object) -> CompletionConfig | None:
    """The junction completion a model's samples get: on for a road-plan model (``DiTConfig.border_hints``),
    none for older checkpoints."""
    return CompletionConfig() if model.dit.config.border_hints else None


def choose_candidate(lane_feat: np.ndarray, lane_prob: np.ndarray, hints: np.ndarray, frontier: np.ndarray,
                     ports: list[FrontierPort], known: KnownLanes, config: StitchConfig,
                     threshold: float = 0.5, accept: Callable[[np.ndarray], bool] | None = None,
                     completion: CompletionConfig | None = None) -> Choice:
    """The first valid candidate in best-first order, or (none valid) the best-scoring one.

    lane_feat (C, L, 8), lane_prob (C, L): decoded candidates; hints (L, 6): port hints of the slots;
    frontier (L,) bool: the generated slots; ports / known: the tile's ports and known lanes; ``accept``:
    an extra condition on a valid candidate's kept lanes (n, 20, 2) (the first tile needs a road along +x);
    ``completion``: junction completion before the filter (see junction_completion; None: none).
    """
    best: Choice | None = None
    checked = 0
    for c in candidate_order(lane_prob, hints, frontier, threshold):
        checked += 1
        slots, controls, lanes = _drawn_lanes(lane_feat[c], lane_prob[c], hints, frontier, threshold)
        choice = _judge(int(c), slots, controls[slots], lanes[slots], ports, known, config, completion, checked)
        if not choice.valid and completion is not None and len(choice.check.bent):
            # a decoded lane stitched into a kink left a port open: complete the junction without it
            choice = _judge(int(c), slots, controls[slots], lanes[slots], ports, known, config, completion, checked,
                            choice.check.bent)
        if choice.valid and accept is not None and not accept(choice.lanes[choice.check.keep]):
            choice.check.dangling += 1  # not acceptable: ranks like an invalid candidate
        if choice.valid:
            return choice
        if best is None or choice.check.score() > best.check.score():
            best = choice
    assert best is not None
    return Choice(best.index, best.slots, best.controls, best.lanes, best.check, checked, best.stitched)


def continue_open_ports(choice: Choice, lane_feat: np.ndarray, lane_prob: np.ndarray, hints: np.ndarray,
                        frontier: np.ndarray, ports: list[FrontierPort], known: KnownLanes, config: StitchConfig,
                        threshold: float, completion: CompletionConfig) -> Choice:
    """An invalid choice (of the batch ``lane_feat`` / ``lane_prob``, as :func:`choose_candidate` takes them)
    judged again with straight lanes continuing the required ports it leaves open
    (junction_completion.port_continuations; slot -1, as connectors): the repaired choice when that passes
    the filter, else ``choice`` unchanged."""
    if choice.valid:
        return choice
    linked = {k for k, _ in choice.check.port_links}
    extra = port_continuations([p for k, p in enumerate(ports) if p.required and k not in linked], completion)
    if len(extra) == 0:
        return choice
    slots, controls, lanes = _drawn_lanes(lane_feat[choice.index], lane_prob[choice.index], hints, frontier,
                                          threshold)
    repaired = _judge(choice.index, np.concatenate([slots, np.full(len(extra), -1)]),
                      np.concatenate([controls[slots], extra]),
                      np.concatenate([lanes[slots], bezier_points(extra, LANE_POINTS)]), ports, known, config,
                      completion, choice.checked)
    return repaired if repaired.valid else choice


def _drawn_lanes(lane_feat: np.ndarray, lane_prob: np.ndarray, hints: np.ndarray, frontier: np.ndarray,
                 threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One candidate's drawn frontier slots (n,) (finite, above the existence threshold) and all its slots'
    pinned control points (L, 4, 2) and polylines (L, 20, 2) (:func:`decode_lanes`)."""
    controls, lanes = decode_lanes(lane_feat, hints)
    finite = np.isfinite(lanes).all((1, 2))
    return np.flatnonzero(frontier & finite & (lane_prob > threshold)), controls, lanes


def _judge(index: int, slots: np.ndarray, controls: np.ndarray, lanes: np.ndarray, ports: list[FrontierPort],
           known: KnownLanes, config: StitchConfig, completion: CompletionConfig | None, checked: int,
           bent: np.ndarray | None = None) -> Choice:
    """One candidate's decoded lanes (slots (n,), controls (n, 4, 2), polylines (n, 20, 2)), completed at its
    junctions (``completion``: connectors, port lanes run on to the border, T junctions), checked and stitched;
    ``bent``: decoded lanes left out (a second try)."""
    if completion is not None:
        live = np.setdiff1d(np.arange(len(lanes)), [] if bent is None else bent)
        connectors = junction_connectors(lanes[live], ports, config, completion)
        controls, lanes = np.array(controls, np.float64), np.array(lanes, np.float64)
        if len(connectors):
            controls = np.concatenate([controls, connectors])
            lanes = np.concatenate([lanes, bezier_points(connectors, LANE_POINTS)])
            slots = np.concatenate([slots, np.full(len(connectors), -1)])
            live = np.concatenate([live, np.arange(len(lanes) - len(connectors), len(lanes))])
        controls[live], lanes[live] = extend_port_lanes(controls[live], lanes[live], ports, config, completion)
        if completion.tees:   # T junctions where the candidate stays valid with them (else it goes without)
            mask = np.zeros(len(lanes), bool)
            mask[live] = True
            teed = tee_junctions(controls, lanes, slots, mask, ports, config, completion, TeeConfig())
            if teed[0] is not controls:
                check, stitched = check_and_stitch(teed[0], teed[1], ports, known, config, bent)
                if check.valid:
                    return Choice(index, teed[2], teed[0], teed[1], check, checked, stitched)
    check, stitched = check_and_stitch(controls, lanes, ports, known, config, bent)
    return Choice(index, slots, controls, lanes, check, checked, stitched)
