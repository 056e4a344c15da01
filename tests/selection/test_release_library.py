"""Reading a release's libtorch_cpu.so (selection.sources.native_binary, selection.sources.elf)
on small synthetic libraries (tests/support/tiny_elf.py): a malformed one is a one-line note,
never a traceback; the selection imports and runs without numpy (not a core dependency)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from selection.cpp.binary_calls import LibraryCalls
from selection.links.native_calls import NOTE_PREFIX, NativeCalls
from selection.sources import native_binary
from selection.sources.analysis_cache import AnalysisCache
from selection.sources.elf import ElfError, read_call_graph
from selection.sources.native_binary import release_native_calls
from selection.sources.tree import DirTree
from tests.support.release_wheels import write_library_wheel
from tests.support.tiny_elf import patched, section_header, tiny_elf

RELU6 = b"_ZN2at6native5relu6ERKNS_6TensorE"
HARDTANH_CALL = b"_ZN2at4_ops8hardtanh4callERKNS_6TensorERKN3c106ScalarES7_"
NATIVE_YAML = "torchgen/packaged/ATen/native/native_functions.yaml"
NATIVE = """
- func: relu6(Tensor self) -> Tensor
  python_module: nn

- func: hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor
  dispatch:
    CPU: hardtanh
"""
ROOT = Path(__file__).resolve().parents[2]
SYMTAB, SYMBOL_1 = 6, 24  # .symtab's section index; its first real symbol's offset in it


def _library() -> bytes:
    """at::native::relu6 (relu6's composite kernel) calls at::_ops::hardtanh::call."""
    return tiny_elf({RELU6: [HARDTANH_CALL]}, [HARDTANH_CALL])


def _head(root: Path) -> DirTree:
    (root / NATIVE_YAML).parent.mkdir(parents=True)
    (root / NATIVE_YAML).write_text(NATIVE)
    return DirTree(root)


def _symtab_offset(data: bytes) -> int:
    return int.from_bytes(data[section_header(data, SYMTAB) + 24 :][:8], "little")


MALFORMED: dict[str, Callable[[bytes], bytes]] = {
    "section names past the table": lambda d: patched(d, 0x3E, "<H", 99),
    "0-byte section headers": lambda d: patched(d, 0x3A, "<H", 0),
    "no section headers": lambda d: patched(d, 0x3C, "<H", 0),
    "a section name past .shstrtab": lambda d: patched(d, section_header(d, 1), "<I", 9999),
    "a symbol name past .strtab": lambda d: patched(d, _symtab_offset(d) + SYMBOL_1, "<I", 9999),
    ".symtab of a partial entry": lambda d: patched(d, section_header(d, SYMTAB) + 32, "<Q", 47),
    ".symtab linked to no section": lambda d: patched(d, section_header(d, SYMTAB) + 40, "<I", 99),
    "no functions": lambda d: patched(d, _symtab_offset(d) + SYMBOL_1 + 4, "<B", 0x11),
    "a PLT stub of no symbol": lambda d: patched(
        d, int.from_bytes(d[section_header(d, 3) + 24 :][:8], "little") + 8, "<Q", 99 << 32
    ),
    ".text past the end": lambda d: patched(d, section_header(d, 1) + 32, "<Q", 1 << 40),
}


def test_the_synthetic_library_reads(tmp_path: Path) -> None:
    path = tmp_path / "libtorch_cpu.so"
    path.write_bytes(_library())
    graph = read_call_graph(path)
    [relu6] = graph.defined(("at", "native", "relu6"))
    assert [graph.names[c] for c in graph.callees(relu6)] == [HARDTANH_CALL]


@pytest.mark.parametrize("damage", sorted(MALFORMED))
def test_a_malformed_library_is_refused_in_one_line(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "libtorch_cpu.so"
    path.write_bytes(MALFORMED[damage](_library()))
    with pytest.raises(ElfError) as refused:
        read_call_graph(path)
    assert str(refused.value).startswith(f"{path}: ") and "\n" not in str(refused.value)


def test_a_damaged_wheel_member_is_a_note(tmp_path: Path) -> None:
    """A deflate stream that does not inflate (zlib.error) names the wheel and goes on."""
    wheel = write_library_wheel(tmp_path / "cache", "9.1.0", _library(), deflated=True)
    with zipfile.ZipFile(wheel) as archive:
        info = archive.getinfo("torch/lib/libtorch_cpu.so")
    data = bytearray(wheel.read_bytes())
    name_length, extra_length = (
        int.from_bytes(data[info.header_offset + at :][:2], "little") for at in (26, 28)
    )
    data[info.header_offset + 30 + name_length + extra_length] = 0xFF  # a reserved block type
    wheel.write_bytes(bytes(data))
    calls, note = release_native_calls("9.1.0", tmp_path / "cache", _head(tmp_path / "head"), None)
    assert calls is None
    assert note.startswith(f"{NOTE_PREFIX} not read from {wheel.name}: ") and "\n" not in note


def _refuse_to_read(*_: object) -> LibraryCalls:
    raise AssertionError("the library was read again")


def _run(tmp_path: Path, head: DirTree) -> tuple[NativeCalls | None, str]:
    """One run's read, with the analysis cache every run opens (closed: written)."""
    analysis = AnalysisCache(tmp_path / "cache" / "analysis.sqlite")
    try:
        return release_native_calls("9.1.0", tmp_path / "cache", head, analysis)
    finally:
        analysis.close()


def test_a_warm_run_reads_no_library_even_after_a_yaml_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the library's functions call is kept per wheel and joined with the head's yaml
    on every run: a --diff editing native_functions.yaml does not re-read 430 MB."""
    write_library_wheel(tmp_path / "cache", "9.1.0", _library())
    cold, note = _run(tmp_path, _head(tmp_path / "head"))
    assert cold is not None and [c for c, _ in cold.kernels["relu6"]] == ["hardtanh"], note
    monkeypatch.setattr(native_binary, "read_library", _refuse_to_read)
    edited = _head(tmp_path / "edited")
    (tmp_path / "edited" / NATIVE_YAML).write_text(NATIVE.replace("CPU: hardtanh", "CPU: ht"))
    warm, warm_note = _run(tmp_path, edited)
    assert warm is not None and warm.kernels == cold.kernels
    assert warm_note == note


def test_an_unreadable_library_is_remembered_and_its_header_read_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An aarch64 wheel's library: refused on its first 64 bytes, before extracting; the next
    run gives the same note without opening the wheel's library again."""
    aarch64 = patched(_library(), 0x12, "<H", 0xB7)
    write_library_wheel(tmp_path / "cache", "9.1.0", aarch64)
    extracted: list[Path] = []
    monkeypatch.setattr(native_binary.shutil, "copyfileobj", lambda *a: extracted.append(a[1]))
    calls, note = _run(tmp_path, _head(tmp_path / "head"))
    assert calls is None and note.endswith("libtorch_cpu.so: not an x86-64 binary")
    assert not extracted
    monkeypatch.setattr(native_binary, "read_library", _refuse_to_read)
    assert _run(tmp_path, DirTree(tmp_path / "head")) == (None, note)


def _without_numpy(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`code` run in a fresh interpreter where `import numpy` fails."""
    prelude = "import sys\nsys.modules['numpy'] = None\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(cwd)},
    )


def test_select_imports_and_runs_without_numpy(tmp_path: Path) -> None:
    """numpy is in the `backend` extra only: `pip install spyre-ci` then `spyre-ci select`
    (the downstream workflow) must get past the imports, to its first check of the input."""
    run = _without_numpy(
        f"""
        import selection.pipeline
        sys.argv = ["spyre-ci", "select", "--disable-stage", "nosuch",
                    "--out", {str(tmp_path / "out")!r}, "--cache-dir", {str(tmp_path)!r}]
        from spyre_ci.cli import main
        main()
        """,
        tmp_path,
    )
    assert run.returncode == 2, run.stderr
    assert "unknown stage 'nosuch'" in run.stderr and "Traceback" not in run.stderr


def test_without_numpy_a_release_library_is_a_note(tmp_path: Path) -> None:
    write_library_wheel(tmp_path / "cache", "9.1.0", _library())
    _head(tmp_path / "head")
    run = _without_numpy(
        f"""
        from pathlib import Path
        from selection.sources.native_binary import release_native_calls
        from selection.sources.tree import DirTree
        root = Path({str(tmp_path)!r})
        calls, note = release_native_calls("9.1.0", root / "cache", DirTree(root / "head"), None)
        print(calls, note)
        """,
        tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(f"None {NOTE_PREFIX} not read from torch-9.1.0")
    assert "needs numpy" in run.stdout
