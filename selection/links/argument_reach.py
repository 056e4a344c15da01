"""What reaches an edit that matters only for some values of a parameter. Pure.

An edit that leaves a function as it was for some classes of values of a parameter
(SymbolChange.unchanged_for, selection.python.specialize) reaches only the code that may
pass another there. The walk goes up the users of the changed function:

- a user whose every call of it passes, for one such parameter, a value of a class the edit
  leaves alone (`_check(cond, lambda: ...)` for 2.14's `_check_with`), or leaves it out
  where its default is one, is passed over: it runs as before;
- a user that passes its own parameter on as it came in (`_check(cond, message)` calling
  `_check_with(RuntimeError, cond, message)`) is conditioned in turn, on the same classes:
  its own users are judged the same way (a top-level function only: a method's calls fill
  its parameters shifted by the receiver);
- any other user -- a call passing a str, or a value of unknown class, a use that is no
  call we can read (the function passed on, decorated with, registered, called past a
  `*args`), an entry, an op -- may run the changed code: it is where the change starts, and
  reaches what reaches it, as a changed function would.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace

from selection.links.base import Link, Outcome, Step, Target
from selection.links.graph import ROOT_KINDS, Edge
from selection.links.index import LinkIndex
from selection.links.resolve import pair_instances, recording_saw, root_instances
from selection.model import ChangeKind, SymbolChange, UnchangedFor
from selection.observed import ObservedMap, Pair
from selection.python.argument_classes import (
    CLASSES,
    DEFAULT,
    PARAMETER,
    CallShape,
    Signature,
    passed,
)

# How each class of value reads in a step's text.
_CLASS_NAMES = {
    "f": "a lambda",
    "n": "None",
    "s": "a str",
    "y": "bytes",
    "b": "a bool",
    "i": "an int",
    "r": "a float",
}


def describe_classes(classes: frozenset[str], omitted: bool = False) -> str:
    """`a lambda or None`, `..., or left out`: values a change leaves alone, in words."""
    names = [_CLASS_NAMES[c] for c in CLASSES if c in classes]
    said = " or ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " or " + names[-1]
    return f"{said}, or left out" if omitted else said


@dataclass(frozen=True)
class Conditioned:
    """A function that behaves as before for the calls `unchanged` allows; `evidence`: how
    the change reaches it (its own step first)."""

    target: Target
    signature: Signature
    unchanged: tuple[UnchangedFor, ...]
    evidence: tuple[Step, ...]


@dataclass
class ArgumentReach:
    """`starts`: the users that may run the changed code, each with how (what the change
    reaches is what reaches them); `conditioned`: the changed function, then those
    conditioned in turn (they pass their own parameter on);
    `passed_over`: per value in words, how many users' calls pass it (for the report);
    `skipped`: the (user, used) edges of those users, which the walk from the changed
    function does not follow (into a function that is no start itself)."""

    starts: list[Link] = field(default_factory=list)
    conditioned: list[Target] = field(default_factory=list)
    passed_over: dict[str, int] = field(default_factory=dict)
    skipped: frozenset[tuple[Target, Target]] = frozenset()


def argument_reach(changed: Conditioned, index: LinkIndex) -> ArgumentReach:
    """The users of `changed` that may run its changed code (module docstring)."""
    reach = ArgumentReach(conditioned=[changed.target])
    queue = deque([changed])
    seen = {changed.target}
    started: set[Target] = set()
    skipped: set[tuple[Target, Target]] = set()
    while queue:
        node = queue.popleft()
        for edge in index.graph.users.get(node.target, ()):
            verdict = _judge(edge, node, index)
            if isinstance(verdict, Conditioned):
                if verdict.target not in seen:
                    seen.add(verdict.target)
                    reach.conditioned.append(verdict.target)
                    queue.append(verdict)
            elif isinstance(verdict, str):
                reach.passed_over[verdict] = reach.passed_over.get(verdict, 0) + 1
                skipped.add((edge.user, edge.used))
            elif edge.user not in started:
                started.add(edge.user)
                reach.starts.append(Link(edge.user, (*node.evidence, verdict)))
    # a function some call may make run the changed code runs it for every caller
    reach.skipped = frozenset(e for e in skipped if e[1] not in started)
    return reach


def _judge(edge: Edge, node: Conditioned, index: LinkIndex) -> Conditioned | Step | str:
    """A user conditioned in turn; the step by which it may run the changed code; or, for
    one passed over, what its calls pass."""
    user = edge.user
    sites = _call_sites(edge, index)
    if sites is None:
        return edge.step
    kept: list[str] = []
    passing: dict[str, frozenset[str]] | None = None
    for shape in sites:
        verdict = _site(shape, node)
        if verdict is None:
            return _may_run(edge.step, shape, node)
        if isinstance(verdict, str):
            kept.append(verdict)
            continue
        # the user is unchanged where its every such call is: a parameter all of them
        # pass on, holding a value of a class each leaves alone
        if passing is None:
            passing = verdict
        else:
            passing = {p: c & verdict[p] for p, c in passing.items() if p in verdict}
    if passing is None:
        return kept[0] if kept else "no call"
    signature = _signature(user, index)
    passing = {p: c for p, c in passing.items() if c}
    if not passing or signature is None or "." in user.name:
        return edge.step  # nothing left that tells, or a method: judged as running it
    unchanged = tuple(
        UnchangedFor(p, c, signature.default(p) in c) for p, c in sorted(passing.items())
    )
    names = ", ".join(f"`{p}`" for p in sorted(passing))
    step = Step(edge.step.path, edge.step.symbol, f"{edge.step.how}, passing on its own {names}")
    return Conditioned(user, signature, unchanged, (*node.evidence, step))


def _site(shape: CallShape, node: Conditioned) -> str | dict[str, frozenset[str]] | None:
    """For one call: the value it passes that the edit leaves alone (in words); else the
    calling function's own parameters it passes on, each with the classes that leave the
    edit alone there (any one of them so holds); None when it may run the changed code."""
    passing: dict[str, frozenset[str]] = {}
    for unchanged in node.unchanged:
        code = passed(shape, node.signature, unchanged.param)
        if code is None:
            continue
        if code.startswith(DEFAULT):
            if unchanged.omitted:
                return f"nothing as {unchanged.param} (its default)"
            continue
        if code in unchanged.classes:
            return f"{_CLASS_NAMES[code]} as {unchanged.param}"
        if code.startswith(PARAMETER):
            own = code.removeprefix(PARAMETER)
            passing[own] = passing.get(own, frozenset()) | unchanged.classes  # either holds
    return passing or None


def _may_run(step: Step, shape: CallShape, node: Conditioned) -> Step:
    """The step of a call that may run the changed code, saying what it passes."""
    said = []
    for unchanged in node.unchanged:
        code = passed(shape, node.signature, unchanged.param)
        what = "a value of unknown class" if code is None else _CLASS_NAMES.get(code, "")
        if code is not None and code.startswith(DEFAULT):
            what = "nothing (its default)"
        said.append(f"{what or 'a value of unknown class'} as {unchanged.param}")
    how = f"{step.how}, passing {' and '.join(said)}"
    return Step(step.path, step.symbol, how, called=step.called, nesting=step.nesting)


def _call_sites(edge: Edge, index: LinkIndex) -> list[CallShape] | None:
    """What each of the user's calls of the used function passes; None when some use of it
    there is no call whose arguments were read (or the user is no Python code)."""
    user, used = edge.user, edge.used
    if edge.kind != "call" or user.kind != "function":
        return None
    summary = index.explorer.summary(user.path)
    if summary is None:
        return None
    resolver = index.explorer.resolver
    sites: list[CallShape] = []
    for use in summary.uses.get(user.name, ()):
        if used not in resolver.resolve(summary, user.name, use.chain):
            continue
        if use.how != "call" or use.arguments is None:
            return None
        sites.append(use.arguments)
    return sites or None


def _signature(target: Target, index: LinkIndex) -> Signature | None:
    summary = index.explorer.summary(target.path)
    return summary.signatures.get(target.name) if summary is not None else None


def conditioned_reach(change: SymbolChange, index: LinkIndex) -> ArgumentReach | None:
    """The users of a modified function that may pass a value its edit changed anything
    for (SymbolChange.unchanged_for), once per change; None for any other change (or one
    the graph does not hold)."""
    target = Target.function(change.path, change.qualname)
    if not change.unchanged_for or change.kind != ChangeKind.modified:
        return None
    summary = index.explorer.summary(change.path)
    signature = summary.signatures.get(change.qualname) if summary is not None else None
    if signature is None or target not in index.graph:
        return None
    step = Step(change.path, change.qualname, f"{change.kind} ({_values(change.unchanged_for)})")
    changed = Conditioned(target, signature, change.unchanged_for, (step,))
    return index.memo_per("argument_reach", change, lambda: argument_reach(changed, index))


def _values(unchanged: tuple[UnchangedFor, ...]) -> str:
    """Which values an edit leaves alone, as the report says it."""
    return "; ".join(
        f"as before where {u.param} is " + describe_classes(u.classes, u.omitted) for u in unchanged
    )


def conditioned_outcome(reach: ArgumentReach, label: str, kind: str, index: LinkIndex) -> Outcome:
    """What an edit that matters only for some values reaches: no effect, when every call
    passes values it leaves alone; else, where the recording saw every user that may pass
    another run (functions), what those users reach, the recording deciding as for any
    changed function (a template or an entry among them: its own instances); else the
    changed function, reached past the calls passing values it leaves alone, statically
    (by call site: the recording sees what ran, not what it was passed)."""
    passed = ", ".join(f"{n} passing {what}" for what, n in sorted(reach.passed_over.items()))
    if not reach.starts:
        return Outcome(
            no_effect=f"{label}: it changed only for values no caller passes ({passed or 'no call'})"
        )
    first = reach.starts[0].evidence[0]  # the change's own step, saying which values
    how = f"{first.how}; users left out: {passed}" if passed else first.how
    observed = index.observed
    functions = [s for s in reach.starts if s.target.kind == "function"]
    roots = [s for s in reach.starts if s.target.kind in ROOT_KINDS]
    if (
        observed is not None
        and len(functions) + len(roots) == len(reach.starts)
        and all(recording_saw(observed, s) for s in functions)
    ):
        own = [_instances(s.target, s.evidence, index) for s in roots]
        unseen = _unexplained(reach, observed, index)
        if unseen:
            why = Step(first.path, first.symbol, f"{first.how}; {UNEXPLAINED}")
            own.append(_pairs_link(unseen, (why,), index))
        links = [link for link in own if link is not None]
        changed = Target.function(first.path, first.symbol)
        through = [replace(link, ran_with=changed) for link in functions]
        return Outcome(links=[*through, *links], kind=kind)
    changed = Target.function(first.path, first.symbol)
    link = Link(changed, (replace(first, how=how),), by_call_site=True, passed_over=reach.skipped)
    return Outcome(links=[link], kind=kind)


def _instances(root: Target, evidence: tuple[Step, ...], index: LinkIndex) -> Link | None:
    """A template or an entry that may run the changed code: its own instances."""
    ids = tuple(inst.node_id for inst in root_instances(root, index))
    if not ids:
        return None
    return Link(Target.instances(root.full_name, ids), evidence)


UNEXPLAINED = "recorded pairs ran it, but none of the callers the code shows (called another way)"


def _unexplained(reach: ArgumentReach, observed: ObservedMap, index: LinkIndex) -> set[Pair]:
    """The recorded pairs that ran the changed function, or one conditioned in turn,
    without running any function the code shows calling it: it was called some way the
    code does not show (a name looked up at run time), with values not known."""
    found: set[Pair] = set()
    for node in reach.conditioned:
        ran = _ran(observed, node)
        for edge in index.graph.users.get(node, ()):
            if not ran:
                break
            if edge.user.kind == "function":
                ran -= _ran(observed, edge.user)
        found |= ran
    return found


def _ran(observed: ObservedMap, target: Target) -> set[Pair]:
    path, name = target.path, target.name
    eager = observed.pairs_running_function(path, name)
    return eager | observed.pairs_running_function(path, name, compiled=True)


def _pairs_link(pairs: set[Pair], evidence: tuple[Step, ...], index: LinkIndex) -> Link | None:
    """The instances of recorded pairs, as one link."""
    ids = tuple(
        dict.fromkeys(
            i.node_id for pair in sorted(pairs) for i in pair_instances(pair, False, index)
        )
    )
    return Link(Target.instances("recorded runs", ids), evidence) if ids else None
