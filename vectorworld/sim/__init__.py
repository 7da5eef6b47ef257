"""The closed-loop engine: the Session, spawning, metrics, observations, recordings and their wire encoding."""
