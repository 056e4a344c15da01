"""The TORCH_TEST_DEVICES module of a manifest run: subprocesses apply the manifest too.

`spyre-ci test` applies the manifest in its own process (the pytest plugin). A test that
spawns a Python subprocess (upstream does, e.g. to check import side effects or to run a
test class in isolation) would otherwise get torch's default device bases. So `spyre-ci
test` also exports:
- TORCH_TEST_DEVICES = this file: common_device_type runs it (runpy, with its own globals,
  while it is itself being imported) and adds its TEST_CLASS to the device test bases;
- SPYRE_CI_MANIFESTS = the manifest paths (os.pathsep-separated), with the path roots in
  SPYRE_CI_PYTORCH_SRC / TORCH_SPYRE_ROOT;
- PYTORCH_TESTING_DEVICE_ONLY_FOR = privateuse1.
TEST_CLASS is then the manifest-applying SpyreTestBase, as in the parent process: variants
the manifest does not run are never generated, tolerances, no_grad and cpu_move apply.
What pytest adds in the parent (marks, xfail, classes upstream never instantiated for the
device) needs a pytest session and does not reach a plain subprocess.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_MANIFESTS = "SPYRE_CI_MANIFESTS"
TEST_DEVICES_PATH = str(Path(__file__).resolve())


def subprocess_env(
    manifests: list[Path], torch_root: str | None, device_root: str | None
) -> dict[str, str]:
    """The environment variables that make subprocesses apply `manifests`."""
    env = {
        "TORCH_TEST_DEVICES": TEST_DEVICES_PATH,
        ENV_MANIFESTS: os.pathsep.join(str(Path(p).resolve()) for p in manifests),
        "PYTORCH_TESTING_DEVICE_ONLY_FOR": "privateuse1",
    }
    if torch_root:
        env["SPYRE_CI_PYTORCH_SRC"] = torch_root
    if device_root:
        env["TORCH_SPYRE_ROOT"] = device_root
    return env


def test_class_from_env() -> type:
    """The manifest-applying test base for the manifests named in SPYRE_CI_MANIFESTS."""
    from test_manifests.device import manifest_test_base
    from test_manifests.matching import PathRoots, env_root
    from test_manifests.run import load_merged

    paths = [p for p in os.environ.get(ENV_MANIFESTS, "").split(os.pathsep) if p]
    if not paths:
        raise RuntimeError(f"TORCH_TEST_DEVICES={TEST_DEVICES_PATH} needs {ENV_MANIFESTS}")
    roots = PathRoots(env_root("${TORCH_ROOT}"), env_root("${TORCH_DEVICE_ROOT}"))
    return manifest_test_base(load_merged([Path(p) for p in paths]), roots)


if __name__ == "<run_path>":
    # Run by common_device_type: replace upstream's own PrivateUse1TestBase (added when the
    # backend was registered before common_device_type was imported), or every test would
    # be instantiated twice for the same device.
    TEST_CLASS = test_class_from_env()
    _bases = globals().get("device_type_test_bases")
    if isinstance(_bases, list):
        _bases[:] = [b for b in _bases if b.__name__ != "PrivateUse1TestBase"]
