"""pytest plugin (entry point `pytest11`): runs upstream tests under a manifest.

Inactive unless `--manifest` is given. When active it
- loads the manifest(s) (errors name file, line and field; nothing runs),
- makes the manifest-applying SpyreTestBase the only privateuse1 test base and restricts
  device-generic tests to it (PYTORCH_TESTING_DEVICE_ONLY_FOR=privateuse1),
- instantiates for the device the classes upstream never instantiated for it,
- deselects what the manifest does not run, adds marks/xfail, writes the marks into
  JUnit XML (`user_properties`), filters by label, and fails a run that selects zero tests.
Torch is imported only when the plugin is active.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from test_manifests.loader import ManifestError
from test_manifests.matching import PathRoots, env_root
from test_manifests.run import load_merged

PLUGIN_NAME = "spyre-manifest"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("spyre-manifest", "upstream test reuse through a YAML manifest")
    group.addoption(
        "--manifest",
        action="append",
        default=[],
        metavar="PATH",
        help="apply this test_suite_config manifest (repeatable; merged)",
    )
    group.addoption(
        "--pytorch-src",
        default=None,
        metavar="DIR",
        help="PyTorch source tree: the value of ${TORCH_ROOT} "
        "(default: $SPYRE_CI_PYTORCH_SRC or $PYTORCH_ROOT)",
    )
    group.addoption(
        "--device-src",
        default=None,
        metavar="DIR",
        help="the backend's source tree: the value of ${TORCH_DEVICE_ROOT} "
        "(default: $TORCH_SPYRE_ROOT)",
    )
    group.addoption(
        "--manifest-label",
        action="append",
        default=[],
        metavar="LABEL",
        help="run only tests carrying this label (repeatable)",
    )
    group.addoption(
        "--manifest-select",
        default=None,
        metavar="FILE",
        help="run only the node ids listed in FILE (relative to the PyTorch root); "
        "ids the tree does not generate are reported, the others run",
    )


def path_roots(config: pytest.Config) -> PathRoots:
    torch_root = config.getoption("pytorch_src") or env_root("${TORCH_ROOT}")
    device_root = config.getoption("device_src") or env_root("${TORCH_DEVICE_ROOT}")
    return PathRoots(
        torch_root=str(Path(torch_root).resolve()) if torch_root else None,
        device_root=str(Path(device_root).resolve()) if device_root else None,
    )


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    paths = config.getoption("manifest", default=[])
    if not paths:
        return
    try:
        roots = path_roots(config)
        manifest = load_merged([Path(p) for p in paths], roots)
    except ManifestError as exc:
        raise pytest.UsageError(f"invalid manifest:\n{exc}") from exc
    from test_manifests.session import ManifestSession

    config.pluginmanager.register(ManifestSession(config, manifest, roots), PLUGIN_NAME)
    select = config.getoption("manifest_select", default=None)
    if select:
        from test_manifests.selected import PLUGIN_NAME as SELECT_NAME
        from test_manifests.selected import SelectedIds, read_ids

        root = Path(roots.torch_root or config.rootpath).resolve()
        # registered after the session: its tryfirst hook runs before the manifest's filter
        config.pluginmanager.register(
            SelectedIds(Path(select), read_ids(Path(select)), root), SELECT_NAME
        )


def active_session(config: pytest.Config) -> Any:
    return config.pluginmanager.get_plugin(PLUGIN_NAME)
