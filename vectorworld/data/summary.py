"""``inspect``: a JSON-serialisable summary of one scenario (what ``vectorworld inspect`` prints)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from vectorworld.data.scenario import Scenario
from vectorworld.data.sources import SourceSpec, count_in_file, load_scenario, parse_source
from vectorworld.scene import AgentType


def summarize_scenario(scenario: Scenario) -> dict[str, Any]:
    """Counts, duration, map extent and lane-graph statistics of a scenario."""
    tr = scenario.tracks
    lanes = list(scenario.map.lanes.lanes.values())
    successor_edges = sum(len(lane.successors) for lane in lanes)
    gaps = [float(np.linalg.norm(lane.points[-1] - scenario.map.lanes[j].points[0]))
            for lane in lanes for j in lane.successors if j in scenario.map.lanes]
    per_step = scenario.signals.valid.sum(axis=1)
    extent = scenario.map.extent()
    ego = None
    if scenario.sdc_index >= 0:
        ego = {"track_index": scenario.sdc_index, "track_id": int(tr.ids[scenario.sdc_index]),
               "path_length_m": float(np.sum(np.linalg.norm(np.diff(
                   tr.xy[scenario.sdc_index][tr.valid[scenario.sdc_index]], axis=0), axis=-1)))}
    return {
        "scenario_id": scenario.scenario_id,
        "dataset": scenario.source.dataset,
        "file": scenario.source.path,
        "index": scenario.source.index,
        "name": scenario.source.name,
        "num_steps": scenario.num_steps,
        "current_index": scenario.current_index,
        "dt_s": float(np.median(np.diff(scenario.timestamps_s))) if scenario.num_steps > 1 else 0.0,
        "duration_s": scenario.duration_s,
        "num_tracks": tr.num_tracks,
        "tracks_by_type": {t.name.lower(): int(np.sum(tr.types == t)) for t in AgentType if np.any(tr.types == t)},
        "valid_at_current": int(tr.valid[:, scenario.current_index].sum()) if scenario.num_steps else 0,
        "tracks_to_predict": len(scenario.predict_indices),
        "predict_track_ids": [int(tr.ids[i]) for i in scenario.predict_indices],
        "ego": ego,
        "map": {
            "lanes": len(lanes),
            "lane_length_km": float(sum(lane.length_m for lane in lanes) / 1000.0),
            "successor_edges": successor_edges,
            "successor_gap_max_m": max(gaps, default=0.0),
            "road_lines": len(scenario.map.road_lines),
            "road_edges": len(scenario.map.road_edges),
            "crosswalks": len(scenario.map.crosswalks),
            "stop_signs": len(scenario.map.stop_signs),
            "speed_bumps": len(scenario.map.speed_bumps),
            "driveways": len(scenario.map.driveways),
            "extent": list(extent) if extent is not None else None,
        },
        "signals": {
            "lanes_per_step_min": int(per_step.min()) if len(per_step) else 0,
            "lanes_per_step_max": int(per_step.max()) if len(per_step) else 0,
            "controlled_lanes": len(set(scenario.signals.lane_ids[scenario.signals.valid].tolist())),
        },
    }


def inspect_scenario(source: str | SourceSpec, nuplan_maps_dir: str | Path | None = None) -> dict[str, Any]:
    """Summary of the scenario a source string names, plus how many scenarios its file holds."""
    spec = parse_source(source) if isinstance(source, str) else source
    scenario = load_scenario(spec, nuplan_maps_dir)
    summary = {"source": str(spec), "format": spec.kind, "format_name": spec.format_name,
               **summarize_scenario(scenario)}
    summary["scenarios_in_file"] = count_in_file(spec.kind, spec.path)
    if spec.kind == "nuplan":
        summary["map_file"] = scenario.metadata.get("map_file")
    if scenario.metadata.get("inferred"):
        summary["inferred"] = list(scenario.metadata["inferred"])
    return summary
