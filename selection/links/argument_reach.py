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
from selection.links.resolve import (
    pair_instances,
    ran_pairs,
    recording_saw,
    root_instances,
    seen_running,
)
from selection.model import ChangeKind, SymbolChange, UnchangedFor
from selection.observed import ObservedMap, Pair
from selection.python.argument_classes import (
    BOOL,
    BYTES,
    CALLABLE,
    CLASSES,
    DEFAULT,
    FLOAT,
    INT,
    NONE,
    PARAMETER,
    TEXT,
    CallShape,
    Signature,
    passed,
)
from selection.python.summary import Use

# How each class of value reads in a step's text.
_CLASS_NAMES = {
    CALLABLE: "a callable",
    NONE: "None",
    TEXT: "a str",
    BYTES: "bytes",
    BOOL: "a bool",
    INT: "an int",
    FLOAT: "a float",
}


def describe_classes(classes: frozenset[str]) -> str:
    """`a callable or None`: classes of values, in words."""
    names = [_CLASS_NAMES[c] for c in CLASSES if c in classes]
    return " or ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " or " + names[-1]


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
    conditioned in turn (they pass their own parameter on); `passed_over`: per value in
    words, how many users (neither starts nor conditioned) pass it, for the report;
    `skipped`: the (user, used) edges of those users, which the walk from the changed
    function does not follow; `changed_step`: the change's own step, saying which values
    it leaves alone."""

    changed_step: Step
    starts: list[Link] = field(default_factory=list)
    conditioned: list[Target] = field(default_factory=list)
    passed_over: dict[str, int] = field(default_factory=dict)
    skipped: frozenset[tuple[Target, Target]] = frozenset()


def argument_reach(changed: Conditioned, index: LinkIndex) -> ArgumentReach | None:
    """The users of `changed` that may run its changed code (module docstring); None when
    the changed function itself must count as running it for every caller (a start's own
    users lead back to it: it calls, directly or not, what calls it with a value it
    changed anything for)."""
    forced: set[Target] = set()
    while True:
        conditions, starts = _conditions(changed, forced, index)
        if changed.target in starts:
            return None
        looping = _above(starts, index) & conditions.keys()
        if changed.target in looping:
            return None  # it calls, directly or not, what may call it with such a value
        if not looping:
            return _decided(changed, conditions, index)
        forced |= looping  # running a start runs them: they run the change for any caller


def _conditions(
    changed: Conditioned, forced: set[Target], index: LinkIndex
) -> tuple[dict[Target, Conditioned], set[Target]]:
    """Every function conditioned on what it is passed, each with the one condition all
    its calls of conditioned functions allow, and the users that may run the change. A
    user reached from several conditioned functions is unchanged only where each of those
    calls is: its condition narrows to the parameters they share, and is judged again."""
    conditions = {changed.target: changed}
    starts: set[Target] = set()
    queue = deque([changed.target])
    while queue:
        target = queue.popleft()
        node = conditions.get(target)
        if node is None:
            continue  # became a start since it was queued
        for edge in index.graph.users.get(target, ()):
            user = edge.user
            if user in starts:
                continue
            verdict = _judge(edge, node, index)
            if isinstance(verdict, str):
                continue
            merged = _both(conditions.get(user), verdict) if user not in forced else None
            if merged is None:
                starts.add(user)
                conditions.pop(user, None)
            elif merged != conditions.get(user):
                conditions[user] = merged
                queue.append(user)
    return conditions, starts


def _both(known: Conditioned | None, verdict: Conditioned | Step) -> Conditioned | None:
    """A user's condition once another of its calls is judged: the parameters both allow,
    each holding a class both leave alone; None when nothing is left (or the call may run
    the change)."""
    if not isinstance(verdict, Conditioned):
        return None
    if known is None:
        return verdict
    theirs = {u.param: u.classes for u in verdict.unchanged}
    unchanged = tuple(
        UnchangedFor(u.param, both, known.signature.default(u.param) in both)
        for u in known.unchanged
        if u.param in theirs and (both := u.classes & theirs[u.param])
    )
    return replace(known, unchanged=unchanged) if unchanged else None


def _above(starts: set[Target], index: LinkIndex) -> set[Target]:
    """Every node up the users of the starts."""
    seen = set(starts)
    queue = deque(starts)
    while queue:
        for edge in index.graph.users.get(queue.popleft(), ()):
            if edge.user not in seen:
                seen.add(edge.user)
                queue.append(edge.user)
    return seen


def _decided(
    changed: Conditioned, conditions: dict[Target, Conditioned], index: LinkIndex
) -> ArgumentReach:
    """The starts (with how they run the change), the edges passed over and their count,
    once every condition is final."""
    reach = ArgumentReach(changed.evidence[0], conditioned=list(conditions))
    started: set[Target] = set()
    skipped: set[tuple[Target, Target]] = set()
    passed: dict[Target, str] = {}
    for target, node in conditions.items():
        for edge in index.graph.users.get(target, ()):
            user = edge.user
            verdict = _judge(edge, node, index)
            if isinstance(verdict, str):
                skipped.add((user, target))
                passed.setdefault(user, verdict)
            elif user not in conditions and user not in started:
                step = verdict if isinstance(verdict, Step) else edge.step
                started.add(user)
                reach.starts.append(Link(user, (*node.evidence, step)))
    for user, what in passed.items():
        if user not in started and user not in conditions:
            reach.passed_over[what] = reach.passed_over.get(what, 0) + 1
    reach.skipped = frozenset(skipped)
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
        return kept[0]
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
    there is no call whose arguments were read (or the user is no Python code). Read once
    per edge (both passes of the walk ask)."""
    if edge.kind != "call" or edge.user.kind != "function":
        return None
    key = (edge.user, edge.used)
    return index.memo_per("argument_reach.call_sites", key, lambda: _read_sites(edge, index))


def _read_sites(edge: Edge, index: LinkIndex) -> list[CallShape] | None:
    uses = _uses_naming(edge.user, edge.used, index)
    if uses is None or any(u.how != "call" or u.arguments is None for u in uses):
        return None
    return [u.arguments for u in uses if u.arguments is not None] or None


def _uses_naming(user: Target, used: Target, index: LinkIndex) -> list[Use] | None:
    """The uses in `user`'s code that resolve to `used`; None when its module is not read."""
    summary = index.explorer.summary(user.path)
    if summary is None:
        return None
    resolver = index.explorer.resolver
    return [
        use
        for use in summary.uses.get(user.name, ())
        if used in resolver.resolve(summary, user.name, use.chain)
    ]


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
    signature = _signature(target, index)
    if signature is None or target not in index.graph or _uses_itself(target, index):
        return None
    values = _values(change.unchanged_for, signature)
    step = Step(change.path, change.qualname, f"{change.kind} ({values})")
    changed = Conditioned(target, signature, change.unchanged_for, (step,))
    return index.memo_per("argument_reach", change, lambda: argument_reach(changed, index))


def _uses_itself(target: Target, index: LinkIndex) -> bool:
    """Its code calls it again (`torch._check_with(...)` inside `_check_with`), with values
    of its own: the link graph keeps no edge from a function to itself, so it is read here."""
    uses = _uses_naming(target, target, index)
    return uses is None or bool(uses)


def _values(unchanged: tuple[UnchangedFor, ...], signature: Signature) -> str:
    """Which values an edit leaves alone, as the report says it: "as before where message
    is a callable or None"; for a parameter with a default, whether leaving it out does."""
    said = []
    for u in unchanged:
        classes = describe_classes(u.classes)
        if signature.default(u.param) is None:
            said.append(f"as before where {u.param} is {classes}")
        elif u.omitted:
            said.append(f"as before where {u.param} is passed {classes}, or left out")
        else:
            said.append(f"as before where {u.param} is passed {classes}, not where left out")
    return "; ".join(said)


def conditioned_outcome(reach: ArgumentReach, label: str, kind: str, index: LinkIndex) -> Outcome:
    """What an edit that matters only for some values reaches.

    - Every user may be passed over, and the recording shows no run of it the code does not
      explain: no effect, with the calls passed over.
    - The recording saw the changed function run, and each user that may pass another value
      (functions; a template or an entry among them reaches its own instances): what those
      users reach, a pair counting only if it ran the user and the changed function.
    - Else the changed function, reached past the calls passing values it leaves alone,
      statically (by call site: the recording sees what ran, not what it was passed).

    Recorded pairs that ran a conditioned function but no function the code shows calling
    it are reached whichever way (`_unexplained`)."""
    first = reach.changed_step
    changed = Target.function(first.path, first.symbol)
    observed = index.observed
    unseen, eager = _unexplained(reach, observed, index) if observed else (set(), set())
    why = Step(first.path, first.symbol, f"{first.how}; {UNEXPLAINED}")
    extra = [link for link in [_pairs_link(unseen, eager, (why,), index)] if link is not None]
    passed = ", ".join(f"{n} passing {what}" for what, n in sorted(reach.passed_over.items()))
    if not reach.starts and not extra:
        return Outcome(
            no_effect=f"{label}: it changed only for values no caller passes ({passed or 'no call'})"
        )
    # the change's own step says which values, and which users were left out
    own_step = replace(first, how=f"{first.how}; users left out: {passed}") if passed else first
    starts = [replace(s, evidence=(own_step, *s.evidence[1:])) for s in reach.starts]
    functions = [s for s in starts if s.target.kind == "function"]
    roots = [s for s in starts if s.target.kind in ROOT_KINDS]
    if (
        observed is not None
        and seen_running(observed, changed)
        and len(functions) + len(roots) == len(starts)
        and all(recording_saw(observed, s) for s in functions)
    ):
        own = [link for s in roots if (link := _instances(s.target, s.evidence, index))]
        through = [replace(link, ran_with=changed) for link in functions]
        return Outcome(links=[*through, *own, *extra], kind=kind)
    link = Link(changed, (own_step,), by_call_site=True, passed_over=reach.skipped)
    return Outcome(links=[link, *extra] if starts else extra, kind=kind)


def values_note(unchanged: tuple[UnchangedFor, ...]) -> str:
    """What a change's detect cause adds: which values it leaves alone."""
    said = [
        f"{u.param} is {describe_classes(u.classes)}" + (", or left out" if u.omitted else "")
        for u in unchanged
    ]
    return "(as before where " + "; where ".join(said) + ")"


def _instances(root: Target, evidence: tuple[Step, ...], index: LinkIndex) -> Link | None:
    """A template or an entry that may run the changed code: its own instances."""
    ids = tuple(inst.node_id for inst in root_instances(root, index))
    if not ids:
        return None
    return Link(Target.instances(root.full_name, ids), evidence)


UNEXPLAINED = "recorded pairs ran it, but none of the callers the code shows (called another way)"


def _unexplained(
    reach: ArgumentReach, observed: ObservedMap, index: LinkIndex
) -> tuple[set[Pair], set[Pair]]:
    """The recorded pairs that ran the changed function, or one conditioned in turn,
    without running anything the code shows calling it (a function, an op it is
    registered for, an entry naming it): it was called some way the code does not show (a
    name looked up at run time), with values not known; and those of them that ran it in
    an eager path. What the recording's warm-up ran stands for every pair and explains
    none of them."""
    found: set[Pair] = set()
    eager: set[Pair] = set()
    for node in reach.conditioned:
        ran = ran_pairs(observed, node)
        for edge in index.graph.users.get(node, ()):
            if not ran:
                break
            ran -= _explained(edge.user, node, ran, observed)
        found |= ran
        eager |= ran & observed.pairs_running_function(node.path, node.name)
    return found, eager


def _explained(user: Target, node: Target, ran: set[Pair], observed: ObservedMap) -> set[Pair]:
    """The pairs of `ran` a user running the conditioned function explains."""
    if user.kind == "function":
        # its runs (a function nested in it included: a factory's `_fn` runs per pair), not
        # the warm-up's, which stand for every pair
        return observed.pairs_running_apart_from_warmup(user.path, user.name)
    if user.kind == "aten":
        # a kernel registered for the op runs where the op is traced: it explains the
        # compiled runs of the function in pairs that ran the op
        traced = observed.pairs_running_function(node.path, node.name, compiled=True)
        return ran_pairs(observed, user) & traced
    if user.kind == "entry":
        return {pair for pair in ran if pair[:2] == (user.scope, user.full_name)}
    return set()


def _pairs_link(
    pairs: set[Pair], eager: set[Pair], evidence: tuple[Step, ...], index: LinkIndex
) -> Link | None:
    """The instances of recorded pairs, as one link: those that trace their op only, for a
    pair that ran the code only in a compiled path."""
    ids = tuple(
        dict.fromkeys(
            i.node_id
            for pair in sorted(pairs)
            for i in pair_instances(pair, pair not in eager, index)
        )
    )
    return Link(Target.instances("recorded runs", ids), evidence) if ids else None
