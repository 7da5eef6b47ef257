"""VectorWorld: a closed-loop driving simulator whose world is generated tile by tile ahead of the ego."""

__version__ = "0.1.0"

DT_S = 0.1
"""The fixed simulation step (s): 10 Hz, as WOMD, nuPlan and the Waymo sim-agents benchmark use."""
