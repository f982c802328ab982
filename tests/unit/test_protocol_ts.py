"""The VS Code client's `src/protocol.ts` mirrors `flower.lsp.protocol` 1:1 (D4, D8).

Parsed as text (no TypeScript toolchain needed): every request and notification constant,
the payload type it is declared with, and every payload interface's fields, against the
method tables and attrs classes of the Python module.
"""

from __future__ import annotations

import re

import attrs

from conftest import ROOT
from flower.lsp import protocol as p
from flower.settings import OPTIONS

TS = ROOT / "vscode-client" / "src" / "protocol.ts"

CLIENT_ONLY = {"InitializationOptions"}
"""Interfaces with no payload class: the `initialize` options the server reads (protocol.md)."""


def _source() -> str:
    return TS.read_text(encoding="utf-8")


def _constants(kind: str) -> dict[str, str]:
    """Method name → the first type argument of each `new <kind><…>('method')` constant."""
    found = re.findall(rf"=\s*new {kind}<\s*(\w+)[^>]*>\(\s*'([^']+)'\s*\)", _source())
    return {method: payload for payload, method in found}


def _interfaces() -> dict[str, list[str]]:
    """Interface name → its field names in order (comments skipped)."""
    out: dict[str, list[str]] = {}
    for name, body in re.findall(r"^export interface (\w+) \{\n(.*?)^\}", _source(), re.MULTILINE | re.DOTALL):
        out[name] = re.findall(r"^ {4}(\w+)\??:", body, re.MULTILINE)
    return out


def _payload_classes() -> dict[str, type]:
    return {
        name: cls
        for name, cls in vars(p).items()
        if isinstance(cls, type) and attrs.has(cls) and cls.__module__ == p.__name__
    }


def test_every_request_and_notification_has_one_typed_constant() -> None:
    requests = _constants("RequestType")
    notifications = _constants("NotificationType")
    assert set(requests) == {*p.PARAMS, p.ASK, p.APPROVE}, set(requests) ^ {*p.PARAMS, p.ASK, p.APPROVE}
    assert set(notifications) == set(p.NOTIFICATIONS), set(notifications) ^ set(p.NOTIFICATIONS)
    for method, cls in p.PARAMS.items():
        assert requests[method] == cls.__name__, method
    assert requests[p.ASK] == p.AskParams.__name__
    assert requests[p.APPROVE] == p.ApproveParams.__name__
    for method, cls in p.NOTIFICATIONS.items():
        assert notifications[method] == cls.__name__, method


def test_every_payload_class_has_an_interface_with_the_same_wire_fields() -> None:
    interfaces = _interfaces()
    classes = _payload_classes()
    assert set(interfaces) - CLIENT_ONLY == set(classes), set(interfaces) - CLIENT_ONLY ^ set(classes)
    for name, cls in classes.items():
        assert interfaces[name] == [p._camel(a.name) for a in attrs.fields(cls)], name


def test_error_codes_match() -> None:
    source = _source()
    for name in ("UNKNOWN_FOLDER", "WORKSPACE_BUSY", "FLOWER_ERROR", "MISSING_CREDENTIALS"):
        assert re.search(rf"export const {name} = {getattr(p, name)};", source), name


def test_the_clients_initialization_options_are_the_settings_schemas_editor_options() -> None:
    assert _interfaces()["InitializationOptions"] == list(OPTIONS)
