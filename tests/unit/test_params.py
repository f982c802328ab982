"""Params a client sends are read strictly (protocol.md): a JSON boolean where a bool is declared, never a number.

The editor's `flower/status {"fresh": true}` (the Goals view after a task file changed) was refused in every e2e
scenario's log: `bool` is a subclass of `int`, so the strict integer hook took bool fields too.
"""

from __future__ import annotations

import json
import re

import attrs
import pytest

from flower.lsp import protocol as p

PARAMS = [attrs.resolve_types(cls) for cls in vars(p).values()
          if isinstance(cls, type) and attrs.has(cls) and cls.__name__.endswith("Params")]
BOOLS = [(cls, a.name) for cls in PARAMS for a in attrs.fields(cls) if a.type is bool]


def wire(cls: type, field: str, value: object) -> dict[str, object]:
    """A minimal wire payload of `cls` (its required fields as in its example) with `field` set to `value`."""
    example = json.loads(getattr(cls, "EXAMPLE", "{}"))
    return {**example, p._camel(field): value}


def test_there_are_bool_params_to_check() -> None:
    assert (p.StatusParams, "fresh") in BOOLS


@pytest.mark.parametrize(("cls", "field"), BOOLS, ids=[f"{c.__name__}.{f}" for c, f in BOOLS])
def test_a_bool_param_takes_true_and_false_and_refuses_a_number_or_a_string(cls: type, field: str) -> None:
    for value in (True, False):
        assert getattr(p.structure_params("m", wire(cls, field, value), cls), field) is value
    for value in (1, "true"):
        with pytest.raises(p.JsonRpcInvalidParams, match=re.escape(f"expected bool @ params.{p._camel(field)}")):
            p.structure_params("m", wire(cls, field, value), cls)


def test_an_integer_param_still_refuses_a_boolean() -> None:
    assert p.structure_params("m", wire(p.HistoryParams, "limit", 5), p.HistoryParams).limit == 5
    with pytest.raises(p.JsonRpcInvalidParams, match=re.escape("expected int | None @ params.limit")):
        p.structure_params("m", wire(p.HistoryParams, "limit", True), p.HistoryParams)
