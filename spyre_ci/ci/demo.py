"""A small upstream-shaped git repository and a backend manifest for it: the demo loop.

`make serve` (the relay's local target) and the end-to-end test need an upstream
repository that can be checked out and selected on without downloading
PyTorch. This builds one with GitPython: an upstream-style device-generic test
file (the installed torch's real `instantiate_device_type_tests` machinery), a
`main` branch, and two pull-request branches:

- `pr-good`: extends `test_mul`; the selection picks the `test_mul` instances,
  they pass on `spyre`;
- `pr-bad`: changes the reference semantics of `add` (what `test_add` checks the
  backend's `add` against); the backend's add no longer matches, `test_add` fails.

It also writes the webhook payloads (`pull_request` opened) for both PRs, with
the real SHAs, so that `spyre-ci relay send-test-event --payload FILE` drives the
whole loop. These are our own upstream-style files, not PyTorch's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import git

TEST_FILE = "test/test_demo_ops.py"

BASE_TEST = '''"""Upstream-style device-generic tests (demo)."""
import torch
from torch.testing._internal.common_device_type import dtypes, instantiate_device_type_tests
from torch.testing._internal.common_utils import TestCase, run_tests


def reference_add(a, b, alpha=1):
    """What torch.add(a, b, alpha=alpha) computes."""
    return a + alpha * b


def sample(dtype):
    return torch.arange(6, dtype=dtype).reshape(2, 3) / 4


class TestDemoOps(TestCase):
    @dtypes(torch.float16, torch.float32)
    def test_add(self, device, dtype):
        x, y = sample(dtype), sample(dtype).flip(0)
        actual = torch.add(x.to(device), y.to(device), alpha=2).cpu()
        self.assertEqual(actual, reference_add(x, y, alpha=2))

    @dtypes(torch.float16, torch.float32)
    def test_mul(self, device, dtype):
        x = sample(dtype)
        self.assertEqual((x.to(device) * 3).cpu(), x * 3)

    @dtypes(torch.float32)
    def test_sum(self, device, dtype):
        x = sample(dtype)
        self.assertEqual(x.to(device).sum().cpu(), x.sum())


instantiate_device_type_tests(TestDemoOps, globals())

if __name__ == "__main__":
    run_tests()
'''

GOOD_CHANGE = (
    "        self.assertEqual((x.to(device) * 3).cpu(), x * 3)\n",
    "        self.assertEqual((x.to(device) * 3).cpu(), x * 3)\n"
    "        self.assertEqual((x.to(device) * x.to(device)).cpu(), x * x)\n",
)
BAD_CHANGE = (
    "    return a + alpha * b\n",
    "    return alpha * (a + b)  # add: alpha now scales both operands\n",
)

MANIFEST = """# The backend's manifest for the demo upstream (spyre_ci/ci/demo.py).
test_suite_config:
  owner: spyre-ci-demo
  files:
    - path: ${TORCH_ROOT}/test/test_demo_ops.py
      unlisted_test_mode: mandatory_success
  global:
    supported_dtypes:
      - {name: float16}
      - {name: bfloat16}
      - {name: float32}
"""


@dataclass(frozen=True)
class DemoUpstream:
    path: Path
    repo_name: str
    main_sha: str
    good_sha: str
    bad_sha: str
    manifest: Path
    good_event: Path  # pull_request opened webhook for pr-good
    bad_event: Path

    @property
    def url(self) -> str:
        return f"file://{self.path}"


def _commit(repo: git.Repo, text: str, message: str) -> str:
    path = Path(str(repo.working_tree_dir)) / TEST_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    repo.index.add([TEST_FILE])
    actor = git.Actor("spyre-ci demo", "demo@spyre-ci.invalid")
    return repo.index.commit(message, author=actor, committer=actor).hexsha


def _branch(repo: git.Repo, name: str, base: str, change: tuple[str, str], message: str) -> str:
    head = repo.create_head(name, base)
    head.checkout()
    old, new = change
    assert old in BASE_TEST, f"demo change for {name} does not apply"
    sha = _commit(repo, BASE_TEST.replace(old, new), message)
    repo.heads.main.checkout()
    return sha


def pull_request_event(
    repo_name: str, number: int, head_sha: str, base_sha: str, title: str, branch: str
) -> dict[str, Any]:
    """A `pull_request` opened webhook body, in GitHub's shape, for the demo PR."""
    return {
        "action": "opened",
        "number": number,
        "pull_request": {
            "number": number,
            "state": "open",
            "merged": False,
            "title": title,
            "html_url": f"https://github.com/{repo_name}/pull/{number}",
            "head": {"sha": head_sha, "ref": branch, "repo": {"full_name": repo_name}},
            "base": {"sha": base_sha, "ref": "main", "repo": {"full_name": repo_name}},
            "labels": [],
            "user": {"login": "demo-contributor"},
        },
        "repository": {"full_name": repo_name},
        "sender": {"login": "demo-contributor"},
    }


def build_demo_upstream(directory: Path, repo_name: str = "pytorch/pytorch") -> DemoUpstream:
    """Create (or reuse) the demo upstream repository and its files under `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "upstream"
    if (path / ".git").is_dir():
        repo = git.Repo(path)
        main_sha = repo.heads.main.commit.hexsha
        good_sha, bad_sha = repo.heads["pr-good"].commit.hexsha, repo.heads["pr-bad"].commit.hexsha
    else:
        repo = git.Repo.init(path, initial_branch="main")
        main_sha = _commit(repo, BASE_TEST, "Add device-generic demo op tests")
        good_sha = _branch(repo, "pr-good", main_sha, GOOD_CHANGE, "test_mul: also x * x")
        bad_sha = _branch(repo, "pr-bad", main_sha, BAD_CHANGE, "add: alpha scales both operands")
    manifest = directory / "demo_manifest.yaml"
    manifest.write_text(MANIFEST)
    events = {}
    for name, number, sha, title in (
        ("pr-good", 101, good_sha, "test_mul: also x * x"),
        ("pr-bad", 102, bad_sha, "add: alpha scales both operands"),
    ):
        event_path = directory / f"{name}.pull_request.json"
        event = pull_request_event(repo_name, number, sha, main_sha, title, name)
        event_path.write_text(json.dumps(event, indent=2))
        events[name] = event_path
    return DemoUpstream(
        path, repo_name, main_sha, good_sha, bad_sha, manifest, events["pr-good"], events["pr-bad"]
    )
