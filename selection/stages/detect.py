"""Stage 1: detect (see selection.detect for the rules)."""

from __future__ import annotations

from selection.detect import Detector
from selection.links.file_changes import is_not_code
from selection.model import ChangeKind, FileChange, StageReport
from selection.state import PipelineState
from selection.upstream import DTYPE_HELPERS


class DetectStage:
    name = "detect"

    def run(self, state: PipelineState) -> StageReport:
        request = state.request
        detector = Detector(request.base_trees, request.head_trees, request.cache)
        state.detector = detector
        changes = detector.detect(
            request.base, request.head, request.changed_paths, state.file_progress
        )
        for path in request.unanalysed:
            if is_not_code(path):  # documentation or CI: no effect, whatever the base holds
                changes.files.append(FileChange(path, ChangeKind.modified))
                continue
            why = _unanalysed_reason(path, request.base.label, request.base_is_release)
            file = FileChange(path, ChangeKind.modified, parse_error=why)
            changes.files.append(file)
            changes.unparseable.append(file)
        state.changes = changes
        # The base's parsed modules are not read again (the base's dtype helpers excepted):
        # let the largest (the database files, ~100 MB of AST each) go.
        request.base_trees.release(keep=(DTYPE_HELPERS,))
        for file in changes.unparseable:
            state.blind_spots.append(
                f"{file.path} could not be analysed: {file.parse_error} (dependents widened)"
            )
        counts = {
            "files": len(changes.files),
            "symbols": len(changes.symbols),
            "symbols_other_device_only": sum(s.other_device_only for s in changes.symbols),
            "database_entries": len(changes.entries),
            "database_entries_other_device_only": sum(e.other_device_only for e in changes.entries),
            "native_entries": len(changes.native),
            "cpp_definitions": len(changes.cpp),
            "templates": len(changes.templates),
            "unparseable_files": len(changes.unparseable),
        }
        return StageReport(self.name, counts)


def _unanalysed_reason(path: str, base: str, release: bool) -> str:
    """Why a changed path cannot be analysed: the base tree lacks it; for a release, because
    its wheel ships no such file (no C++ or build sources, no test/ unless fetched)."""
    if not release:
        return f"the diff changes it, but the base tree ({base}) has no such file"
    what = (
        "its test/ tree was not fetched, or could not be"
        if path.startswith("test/")
        else "a wheel ships torch's Python sources and YAML, no C++, build or other sources"
    )
    return (
        f"the diff changes it, but release {base} has no such file ({what}; a clone, "
        "--pytorch-repo, reads it)"
    )
