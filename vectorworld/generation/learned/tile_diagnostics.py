"""What one call of the learned generator reports about itself (DESIGN §8's raw figures and timings)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class TileDiagnostics:
    """What happened in the last ``generate`` call (for the fidelity metrics of DESIGN §8).

    raw_gaps_m / stitched_gaps_m: endpoint gaps (m) over the winner's successor links (model-predicted edges
    among new lanes, and port links; the raw ones of drawn lanes only, not of connectors or continuations)
    after decoding (Bézier, port pinning) and after stitching;
    raw_edge_gaps_m: the raw gaps of the model-predicted edges alone (a hinted lane is pinned onto its port, so
    the port links' raw gaps are 0 by construction wherever stitching keeps the lane there); checked:
    candidates the filter looked at (lazily, best first, up to the first valid); used_fallback: the
    procedural generator answered; continued_ports: every candidate left a port open and the best one passed
    with straight continuations of it (``continue_ports``); stage_ms: where the call's wall time went (ms per
    stage: ``context`` -- the known lanes, ports and road plan --, ``sample`` -- the network, every round --,
    ``filter`` -- junction completion, the validity filter and stitching, every round, and the port
    continuations --, ``edges``, ``assemble`` -- lanes, links and spawns --, and ``fallback``), timing only.
    """

    raw_gaps_m: np.ndarray = field(default_factory=lambda: np.zeros(0))
    stitched_gaps_m: np.ndarray = field(default_factory=lambda: np.zeros(0))
    raw_edge_gaps_m: np.ndarray = field(default_factory=lambda: np.zeros(0))
    checked: int = 0
    candidates: int = 0
    used_fallback: bool = False
    continued_ports: bool = False
    decoded_agents: int = 0
    kept_agents: int = 0
    stage_ms: dict[str, float] = field(default_factory=dict)
