"""Expected failures: each carries a catalog sentence a person can act on, shown in their language without a traceback (D4)."""

from __future__ import annotations

from .texts import Said


class FlowerError(Exception):
    """An expected failure: a catalog key and its fields; `str()` is the English (for logs), `text(locale)` what a person reads."""

    def __init__(self, key: str, **fields: object) -> None:
        self.said = Said(key, fields)
        super().__init__(str(self.said))

    @property
    def key(self) -> str:
        """The catalog key of the message (also what a front-end can branch on)."""
        return self.said.key

    def text(self, locale: str | None) -> str:
        """The message in `locale`."""
        return self.said.text(locale)


class MissingCredentials(FlowerError):
    """No way to authenticate against the model API."""

    def __init__(self) -> None:
        super().__init__("missing_credentials")
