"""Green's judge: ground truth at preparation, submission checks at ``submit``, scores at the end.

Everything here runs on green's side from the cached assets; the patch never enters the
container and nothing of the ground truth is sent to the agent.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.green.kinds.arvo.assets import check_archive
from services.green.kinds.arvo.scoring.groundtruth import GroundTruth, ground_truth_from_patch
from services.green.kinds.arvo.scoring.metrics import TaskScore, path_candidates, score
from services.shared.loc import LocJson, parse_loc_json


@dataclass(frozen=True)
class PreparedTask:
    """What green knows about a task's source and answer before the agent starts."""

    project: str | None
    archive_top: str
    """Project root inside repo-vul.tar.gz (``src-vul/<project>`` in the CyberGym layout)."""
    ground_truth: GroundTruth
    project_files: frozenset[str]
    """Repo-relative paths of the regular files of the project (to check submitted paths)."""
    workspace_bytes: int = 0
    """Uncompressed bytes of repo-vul.tar.gz's regular files (copied into the container)."""

    def ground_truth_dict(self) -> dict[str, Any]:
        return self.ground_truth.to_dict()

    def check_submission(self, raw: bytes) -> tuple[dict[str, Any] | None, list[str]]:
        """Validate loc.json: schema, and every file must exist in the project."""
        loc, errors = parse_loc_json(raw)
        if loc is None:
            return None, errors
        for i, location in enumerate(loc.locations):
            if not any(
                c in self.project_files for c in path_candidates(location.file, self.project)
            ):
                errors.append(
                    f"locations.{i}.file: {location.file!r} is not a file of the project "
                    "(give a path relative to the project root, e.g. 'src/x.c')"
                )
        return (loc.model_dump(), []) if not errors else (None, errors)

    def validated(self, submission: dict[str, Any]) -> LocJson:
        return LocJson.model_validate(submission)


class Judge:
    def prepare(self, patch_path: Path, archive_path: Path) -> PreparedTask:
        """Check the archive, read the patched files' vulnerable versions, build the ground truth.

        One pass over the archive (a real repo-vul.tar.gz is 100+ MB) does the checks, lists the
        project's files and reads the patched ones.
        """
        patch = patch_path.read_bytes()
        patched = [f.path for f in ground_truth_from_patch(patch).files]  # parsing only: cheap
        # Links that point outside the archive are skipped, not fatal: green never extracts the
        # archive, and inside the container (the boundary) such a link is harmless.
        info = check_archive(archive_path, escaping_symlinks="skip", read=patched)
        return PreparedTask(
            project=info.project,
            archive_top=info.top_dir,
            ground_truth=ground_truth_from_patch(patch, sources=info.sources),
            project_files=info.files,
            workspace_bytes=info.size,
        )

    def score(self, loc: LocJson | None, prepared: PreparedTask) -> TaskScore:
        return score(loc, prepared.ground_truth, prepared.project)
