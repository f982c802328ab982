"""The status snapshot (D9, issue 31): `unreachable` only while a read of the records has really been in flight > SLOW_S.

The editor's gauge turned red ("store unreachable") after every approval answer or window attach: `snapshot()`
scheduled a new read, and the not-yet-started read was taken for one in flight since the previous read began.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from flower import service
from flower.service import FlowerService

SLOW = 0.2
"""SLOW_S for these tests: the age of the last read is what is tested, so it is made short, not waited for."""


@pytest.fixture
async def svc(workspace: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(service, "SLOW_S", SLOW)
    made = FlowerService(workspace)
    try:
        yield made
    finally:
        await made.close()


async def test_a_status_asked_long_after_the_last_read_does_not_say_the_store_is_unreachable(svc: FlowerService) -> None:
    await svc.refresh()
    assert svc.snapshot().unreachable is None
    await asyncio.sleep(max(SLOW, service.STALE_S) * 2)  # time passing since the last read is the condition tested
    poked = svc.snapshot()  # starts the next read (the snapshot is stale): scheduled, not yet in flight
    assert poked.unreachable is None, poked.unreachable
    await svc.refresh()
    assert svc.snapshot().unreachable is None


async def test_a_read_really_in_flight_past_slow_s_says_the_store_is_unreachable(svc: FlowerService) -> None:
    entered, release = threading.Event(), threading.Event()
    read = svc._read_rest

    def hung(sized: bool = True):  # a store that does not answer: the read blocks in its worker thread
        entered.set()
        release.wait(10)
        return read(sized)

    svc._read_rest = hung  # type: ignore[method-assign]
    reading = asyncio.ensure_future(svc.refresh())
    try:
        assert await asyncio.to_thread(entered.wait, 5)
        assert svc.snapshot().unreachable is None  # in flight, but not for SLOW_S yet
        await asyncio.sleep(SLOW * 2)
        hanging = svc.snapshot().unreachable
        assert hanging is not None and "not answering" in hanging.text("en")
    finally:
        release.set()
        await asyncio.wait_for(reading, 10)
    assert svc.snapshot().unreachable is None
