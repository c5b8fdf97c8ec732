"""A session made by `core_session` holds the handlers botocore registers on a new session, and
what one session registers stays its own."""

from __future__ import annotations

import botocore.handlers
import botocore.session

from icelake.aws.clients import core_session

EVENTS = [
    "before-parameter-build.s3.PutObject",
    "before-call.s3.CopyObject",
    "needs-retry.s3.GetObject",
    "after-call.glue.GetTable",
    "before-sign.sts.AssumeRole",
    "creating-client-class.s3",
    "choose-service-name",
]


def _handlers(session: botocore.session.Session, event: str) -> list[object]:
    return list(session.get_component("event_emitter")._emitter._handlers.prefix_search(event))


def test_a_core_session_holds_botocore_s_built_in_handlers() -> None:
    fresh, made = botocore.session.Session(), core_session()
    for event in EVENTS:
        assert _handlers(made, event) == _handlers(fresh, event), event
    assert sum(len(_handlers(made, event)) for event in EVENTS) >= 10  # the events have handlers


def test_what_a_session_registers_stays_its_own() -> None:
    def marker(**_: object) -> None:
        return None

    first = core_session()
    first.register("before-call.s3.GetObject", marker)
    assert marker in _handlers(first, "before-call.s3.GetObject")
    assert marker not in _handlers(core_session(), "before-call.s3.GetObject")
    assert marker not in _handlers(botocore.session.Session(), "before-call.s3.GetObject")


def test_a_handler_added_to_botocore_s_built_ins_reaches_the_next_core_session() -> None:
    # as moto's mock adds its stubber when it is first imported
    def added(**_: object) -> None:
        return None

    core_session()  # the built-ins as they were
    botocore.handlers.BUILTIN_HANDLERS.append(("before-send", added))
    try:
        assert added in _handlers(core_session(), "before-send.s3.GetObject")
    finally:
        botocore.handlers.BUILTIN_HANDLERS.remove(("before-send", added))
    assert added not in _handlers(core_session(), "before-send.s3.GetObject")
