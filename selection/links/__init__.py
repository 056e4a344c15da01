"""Links: how a changed upstream item reaches the tests the backend runs.

One module per kind of first hop, all on one contract (`selection.links.base.LinkKind`):

    class SomeLinks:                     # a LinkKind
        name = "template"                # shown in cause chains
        def reach(self, change, index) -> Outcome: ...

`reach` is pure: from one changed item (a Python symbol, a database entry, a
native_functions.yaml / derivatives.yaml entry, a C++ function, a changed file) to an
`Outcome`: the `Link`s it reaches (each a `Target` with its `Step`s of evidence: file,
symbol, the registration or call that makes the link), or a no-effect reason, a canary, or
blind spots. A kind that does not handle that change returns an empty Outcome. Past the
first hop, the link graph (`selection.links.explore`, one module per kind of edge: calls,
entry arguments, callables, dispatch, python refs, registrations, derivatives) carries a
target to the entries and templates that reach it.

Targets are one vocabulary shared by every kind, resolved to test instances by the Map
stage (`selection.links.resolve`):

    aten      an ATen op ("add.Tensor", or "add" for the default overload / every overload)
    function  a Python function under torch/ ("torch/nn/functional.py", "gelu")
    entry     an OpInfo / ModuleInfo entry ("opinfo", "add", variant "")
    template  a test template (file, class, method)
    instances a set of instances given directly (e.g. an unparseable test file's)

An aten op or a function reaches the entries that dispatch to / call it: statically
(`basis="static"`, from the entries' fields and the static call graph) and, when a recorded
dependency map exists for the base version and device, from execution
(`basis="observed"`, `spyre-ci deps record`).
"""
