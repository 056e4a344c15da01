"""Release mode with the releases' own test/ trees, fetched from a git remote by tag.

The remote is a local upstream-shaped repository (tags v9.1.0, v9.2.0); the releases' wheels
are built from the same tags into the cache, so `--from 9.1 --to 9.2` runs offline. An
unreachable or silent remote falls back to the assumed enumeration, with the reason.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import git
import pytest

from selection.pipeline import SelectOptions, prepare, run_pipeline
from selection.sources.mirror import Mirror
from selection.sources.release_tests import SCRATCH, ReleaseTestSource
from selection.state import PipelineState
from tests.support.release_wheels import write_wheel
from tests.support.upstream_repo import UpstreamRepo, build_upstream

VERSIONS = ["9.1.0", "9.2.0"]
NEW_TEMPLATE = """
    @ops(op_db)
    def test_added_in_9_2(self, device, dtype, op):
        pass

"""


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> UpstreamRepo:
    upstream = build_upstream(tmp_path_factory.mktemp("remote") / "pytorch")
    upstream.edit("test/test_ops.py", "    @onlyCUDA\n", NEW_TEMPLATE + "    @onlyCUDA\n")
    upstream.commit("a new template")
    upstream.repo.create_tag("v9.2.0")
    return upstream


@pytest.fixture
def cache(tmp_path: Path, remote: UpstreamRepo) -> Path:
    for version in VERSIONS:
        write_wheel(tmp_path / "cache", remote.repo, f"v{version}", version)
    return tmp_path / "cache"


def _select(cache: Path, manifest: Path, source: ReleaseTestSource) -> PipelineState:
    options = SelectOptions(
        from_="9.1",
        to="9.2",
        manifests=[manifest],
        cache=cache,
        available_versions=lambda: list(VERSIONS),
        tests=source,
    )
    request, notes = prepare(options)
    state = run_pipeline(request)
    state.notes.extend(notes)
    return state


def test_fetched_test_trees_give_exact_ids_and_diffed_templates(
    cache: Path, remote: UpstreamRepo, manifest: Path
) -> None:
    state = _select(cache, manifest, ReleaseTestSource(remote.path.as_uri(), 60))
    universe = state.universe
    assert not any("no test/ tree" in spot for spot in state.blind_spots)
    assert universe is not None and universe.exact_ids
    assert set(state.candidates) <= universe.exact_ids
    # test/ is on both sides, so the template added in 9.2 is a detected change (and the
    # manifest names it nowhere, so scope drops it), while unchanged templates are not.
    added = [t for t in state.changes.templates if t.qualname.endswith("test_added_in_9_2")]  # type: ignore[union-attr]
    assert added and added[0].kind == "added"
    assert not any("test_out" in t.qualname for t in state.changes.templates)  # type: ignore[union-attr]
    assert any("tag v9.2.0" in n for n in state.notes)
    assert not list((cache / SCRATCH).iterdir())  # scratch checkouts are removed


def test_a_cached_test_tree_is_used_without_the_remote(
    cache: Path, remote: UpstreamRepo, manifest: Path
) -> None:
    first = _select(cache, manifest, ReleaseTestSource(remote.path.as_uri(), 60))
    again = _select(cache, manifest, ReleaseTestSource("file:///nonexistent/pytorch", 5))
    assert not any("not fetched" in n for n in again.notes)
    assert set(again.candidates) == set(first.candidates)
    assert again.request.head.sha == first.request.head.sha


def test_an_unreachable_remote_falls_back_and_says_why(cache: Path, manifest: Path) -> None:
    state = _select(cache, manifest, ReleaseTestSource("file:///nonexistent/pytorch", 30))
    [note] = [n for n in state.notes if "not fetched" in n]
    assert "v9.1.0" in note and "/nonexistent/pytorch" in note and "\n" not in note
    assert "--no-fetch-tests" in note  # how to stop trying, on a machine with no network
    assert any("no test/ tree" in spot for spot in state.blind_spots)
    assert state.universe is not None and state.universe.exact_ids == set()
    assert Mirror(cache).release_with_tests("9.1.0") is None  # nothing half-made is kept


def test_a_tag_missing_on_one_release_uses_test_trees_for_none(
    cache: Path, remote: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    partial = git.Repo.clone_from(remote.path, tmp_path / "partial")
    partial.git.tag("-d", "v9.2.0")
    state = _select(cache, manifest, ReleaseTestSource(Path(partial.working_dir).as_uri(), 30))
    assert any("not fetched" in n and "v9.2.0" in n for n in state.notes)
    assert any("no test/ tree" in spot for spot in state.blind_spots)


@pytest.fixture
def silent_server() -> Iterator[str]:
    """An HTTP 'remote' on loopback that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/pytorch"
    stop.set()
    thread.join(timeout=5)
    for conn in held:
        conn.close()
    server.close()


def test_a_silent_remote_is_bounded_by_the_timeout(
    cache: Path, manifest: Path, silent_server: str
) -> None:
    started = time.monotonic()
    state = _select(cache, manifest, ReleaseTestSource(silent_server, 2))
    assert time.monotonic() - started < 30
    [note] = [n for n in state.notes if "not fetched" in n]
    assert "timed out" in note
    assert not list((cache / SCRATCH).iterdir())


def test_the_fetch_can_be_turned_off(cache: Path, manifest: Path) -> None:
    state = _select(cache, manifest, ReleaseTestSource(None))
    assert any("turned off" in n for n in state.notes)
    assert any("no test/ tree" in spot for spot in state.blind_spots)
