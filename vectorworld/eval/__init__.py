"""Evaluation of the learned models: generator fidelity metrics (DESIGN §8)."""
