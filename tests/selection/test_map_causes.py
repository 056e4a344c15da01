"""Each test reached through a link shows that link's cause: the Mapper builds a link's cause
once and shares it among the instances the link reaches, so the cache must tell links apart
even when a link made on demand (a recorded pair's) is gone before the next one is made."""

from __future__ import annotations

from selection.links.base import Link, Step, Target
from selection.mapping import Mapper
from selection.model import Cause, ChangeSet, Revision
from selection.model import TestInstance as Instance


def _instance(op: str) -> Instance:
    return Instance(
        "test/test_ops.py", "TestCommon", "TestCommonSPYRE", "test_x",
        f"test_x_{op}_spyre_float32", op=op, dtype="float32",
    )  # fmt: skip


STEPS = (Step("", "", "executed when it ran on spyre (recorded)"),)


def test_a_link_made_after_another_was_freed_shows_its_own_entry() -> None:
    revision = Revision(label="base", sha="0" * 40)
    mapper = Mapper(ChangeSet(revision, revision), index=None, kinds=[], reused=frozenset())  # type: ignore[arg-type]
    detect = Cause("detect", "symbol", "torch/x.py: f modified")
    causes: dict[int, tuple[Link, Cause]] = {}
    ops = [f"op{n}" for n in range(20)]
    made = [(_instance(op), Target.entry("opinfo", op)) for op in ops]
    for instance, target in made:
        # a link made on demand and freed after the call, as a recorded pair's link is:
        # CPython gives the next link the same address, hence the same id()
        mapper._hit_once(instance, detect, Link(target, STEPS, "observed"), "helper", causes)
    shown = {
        candidate.instance.op: candidate.causes[1].summary
        for candidate in mapper.result.candidates.values()
    }
    assert shown == {op: f"OpInfo {op!r}: executed when it ran on spyre (recorded)" for op in ops}
