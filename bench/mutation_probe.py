"""What the mutation benchmark asks of the installed torch (run in a subprocess: imports torch).

Reads a JSON list of in-scope pairs on stdin and writes on stdout:
- `import_time`: the functions under torch/ that ran while `import torch`, the backend and
  the OpInfo/ModuleInfo databases were imported (cProfile), named as the recorded map names
  them (`torch/<path>::<qualname>`). The recording does not see this code, and its effect
  (tables built, functions registered) reaches every pair.
- `aten_names`: per OpInfo / PythonRefInfo full name, its own ATen op names (`aten_name`,
  `aten_backward_name`, `decomp_aten_name`; a PythonRefInfo's are its OpInfo's).
- `backward`: the in-scope OpInfo pairs whose backward runs on the device (the OpInfo
  supports autograd and the dtype is among its backward dtypes).

Usage: python bench/mutation_probe.py [--backend-module torch_spyre_ref] < pairs.json
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import json
import os
import sys
from typing import Any


def _import_time(backend_module: str) -> tuple[list[str], Any, Any]:
    profiler = cProfile.Profile()
    profiler.enable()
    import torch

    importlib.import_module(backend_module)
    from torch.testing._internal.common_methods_invocations import op_db, python_ref_db
    from torch.testing._internal.common_modules import module_db  # noqa: F401

    profiler.disable()
    from spyre_ci.deps.scope import installed_torch_root
    from spyre_ci.deps.symbols import SymbolResolver

    resolver = SymbolResolver(installed_torch_root())
    names: set[str] = set()
    for entry in profiler.getstats():
        code = entry.code
        if not isinstance(code, str):
            name = resolver.resolve((code.co_filename, code.co_firstlineno, code.co_qualname))
            if name is not None:
                names.add(name)
    del torch
    return sorted(names), op_db, python_ref_db


def _full_name(op: Any) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def _own_aten(op: Any) -> list[str]:
    """A PythonRefInfo's are those of the OpInfo it is built on (its own `aten_name` is
    its `_refs.` name)."""
    names = {getattr(op, a, None) for a in ("aten_name", "aten_backward_name", "decomp_aten_name")}
    return sorted(n for n in names if isinstance(n, str) and n)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend-module", default="torch_spyre_ref")
    args = parser.parse_args(argv)
    pairs = [tuple(p) for p in json.load(sys.stdin)]
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # whatever torch or the backend prints goes to stderr
    import_time, op_db, python_ref_db = _import_time(args.backend_module)
    import torch

    device = torch._C._get_privateuse1_backend_name()
    ops: dict[str, Any] = {}
    aten_names: dict[str, list[str]] = {}
    for op in [*op_db, *python_ref_db]:
        full = _full_name(op)
        ops.setdefault(full, op)
        aten_names.setdefault(full, _own_aten(getattr(op, "torch_opinfo", None) or op))
    backward = []
    for database, name, dtype_name in pairs:
        op = ops.get(name) if database == "opinfo" else None
        dtype = getattr(torch, dtype_name, None)
        if (
            op is not None
            and op.supports_autograd
            and dtype in op.supported_backward_dtypes(device)
        ):
            backward.append([database, name, dtype_name])
    json.dump({"import_time": import_time, "aten_names": aten_names, "backward": backward}, out)
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
