"""Expected failures: each carries a message a person can act on, shown without a traceback."""


class FlowerError(Exception):
    """An expected failure with an actionable message."""


class MissingCredentials(FlowerError):
    """No way to authenticate against the model API."""
