"""The closed-loop engine: dynamics, commands, metrics, the Session, recordings."""
