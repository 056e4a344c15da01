"""The active manifest run: device set-up, collection filtering, marks, xfail, JUnit data.

Registered by `test_manifests.plugin` only when `--manifest` is given; imports torch.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from test_manifests.decisions import Resolution, TestInstance
from test_manifests.matching import PathRoots
from test_manifests.model import Manifest, Mode
from test_manifests.resolve import resolve

ENV = {"PYTORCH_TESTING_DEVICE_ONLY_FOR": "privateuse1"}


class ManifestSession:
    """pytest plugin object for one manifest run."""

    def __init__(self, config: pytest.Config, manifest: Manifest, roots: PathRoots) -> None:
        self.config, self.manifest, self.roots = config, manifest, roots
        self._undo: list[Callable[[], None]] = []
        self._marks: set[str] = set()
        try:
            self._set_env()
            self._install_device()
        except BaseException:
            # Not registered yet, so pytest would never undo a half-done set-up: the
            # environment and the device bases would leak into the rest of the process.
            self.pytest_unconfigure(config)
            raise

    def _set_env(self) -> None:
        saved = {k: os.environ.get(k) for k in ENV}
        os.environ.update(ENV)

        def restore() -> None:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

        self._undo.append(restore)

    def _install_device(self) -> None:
        from test_manifests import device, instantiation

        base = device.manifest_test_base(self.manifest, self.roots)
        self._undo.append(device.install(base))
        self._undo.append(instantiation.force_device_for(self.manifest, self.roots))

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()

    @pytest.hookimpl(tryfirst=True)
    def pytest_pycollect_makeitem(self, collector: pytest.Collector, name: str, obj: Any) -> Any:
        from test_manifests import instantiation

        return instantiation.collect_uninstantiated(self, collector, name, obj)

    def _mark(self, name: str, **kwargs: Any) -> pytest.MarkDecorator:
        if name not in self._marks and name not in ("xfail", "skip"):
            self.config.addinivalue_line("markers", f"{name}: added by the test manifest")
            self._marks.add(name)
        return getattr(pytest.mark, name)(**kwargs) if kwargs else getattr(pytest.mark, name)

    def resolution_of(self, item: pytest.Item) -> Resolution:
        from test_manifests.device import RESOLUTION_ATTR

        recorded = getattr(getattr(item, "obj", None), RESOLUTION_ATTR, None)
        if isinstance(recorded, Resolution):
            return recorded
        cls = getattr(item, "cls", None)
        template = getattr(item, "originalname", None) or item.name.split("[", 1)[0]
        instance = TestInstance(
            file=str(Path(str(item.path)).resolve()),
            class_name=cls.__name__ if cls is not None else "",
            template=template,
        )
        return resolve(self.manifest, instance, self.roots)

    def _apply(self, item: pytest.Item, resolution: Resolution) -> None:
        for mark in (*resolution.marks, *resolution.labels):
            item.add_marker(self._mark(mark))
        why = resolution.reason or "expected to fail on spyre (manifest)"
        if resolution.issue:
            why = f"{why} ({resolution.issue})"
        if resolution.mode in (Mode.XFAIL, Mode.XFAIL_STRICT):
            item.add_marker(
                pytest.mark.xfail(reason=why, strict=resolution.mode is Mode.XFAIL_STRICT)
            )
        mode = resolution.decisions.get("mode")
        item.user_properties.append(("marks", ",".join((*resolution.marks, *resolution.labels))))
        item.user_properties.append(("manifest_mode", resolution.mode.value))
        if mode is not None:
            item.user_properties.append(("manifest_rule", f"{mode.rule} ({mode.file}:{mode.line})"))

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        labels = set(config.getoption("manifest_label") or [])
        kept, dropped = [], []
        for item in items:
            resolution = self.resolution_of(item)
            if not resolution.runs or (labels and not labels & set(resolution.labels)):
                dropped.append(item)
                continue
            self._apply(item, resolution)
            kept.append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = kept
        if not kept:
            raise pytest.UsageError(self._zero_tests_message(labels))

    def _zero_tests_message(self, labels: set[str]) -> str:
        lines = [f"manifest {self.manifest.source} selects zero tests"]
        if labels:
            lines[0] += f" with label(s) {', '.join(sorted(labels))}"
        for index, entry in enumerate(self.manifest.suite.files):
            pos = self.manifest.position(("files", index, "path"))
            lines.append(f"  {pos}: files[{index}].path {entry.path}")
        lines.append(
            "check the file paths, the names (Class::method, never a variant name) and the op/dtype lists"
        )
        return "\n".join(lines)
