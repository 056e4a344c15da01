"""PythonRefInfo entries and a ref test template in the upstream-shaped repository."""

from __future__ import annotations

from tests.support.upstream_repo import INTERNAL, UpstreamRepo

DB = f"{INTERNAL}/common_methods_invocations.py"
PYTHON_REF_INFO = """

class PythonRefInfo(OpInfo):
    def __init__(self, name, *, torch_opinfo_name, op=None, **kwargs):
        super().__init__(name, op=op, **kwargs)
        self.torch_opinfo_name = torch_opinfo_name
"""
# what the templates go before in test/test_ops.py
BEFORE = "\n    @ops(op_db)\n    def test_skipped_by_manifest("


def add_python_refs(repo: UpstreamRepo, python_ref_db: str, templates: str) -> None:
    """Add the PythonRefInfo class, `python_ref_db = [...]` (its source, `python_ref_db`)
    to the database and `templates` (test methods, ending with `BEFORE`) to TestCommon."""
    core = f"{INTERNAL}/opinfo/core.py"
    repo.write(core, repo.read(core) + PYTHON_REF_INFO)
    repo.edit(DB, "UnaryUfuncInfo\n", "UnaryUfuncInfo, PythonRefInfo\n")
    repo.write(DB, repo.read(DB) + python_ref_db)
    repo.edit(
        "test/test_ops.py",
        "import op_db, unary_ufuncs",
        "import op_db, python_ref_db, unary_ufuncs",
    )
    repo.edit("test/test_ops.py", BEFORE, templates)
