"""Typed exceptions of the library. Only the CLI maps them to exit codes, only the server to gRPC codes."""


class VectorWorldError(Exception):
    """Base class of every error the library raises on purpose."""


class ConfigError(VectorWorldError, ValueError):
    """A configuration value is invalid; the message names the field (``field``, where one is to blame).

    Library code names config *fields* (``target_km``); the CLI maps them to its flags, the server to the
    wire field path."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class DataFormatError(VectorWorldError):
    """An input file is missing, corrupt or not in the expected format; the message names the file."""


class CheckpointError(VectorWorldError):
    """A model checkpoint is missing, corrupt or does not match the model."""


class EpisodeFinishedError(VectorWorldError):
    """A step was requested on an episode that has already terminated or been truncated."""


class StepMismatchError(VectorWorldError):
    """A step request named a step index other than the one the session expects."""


class CommandError(VectorWorldError, ValueError):
    """An ego command has a missing, non-finite or out-of-range field; the message names the field."""


class RecordingError(VectorWorldError):
    """A recording file is missing, truncated or of an unsupported version."""
