"""Training recipes of the shipped models (tile generator; NPC policy lives with its own package)."""
