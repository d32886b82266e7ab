"""The SWE-bench task kind: fix an issue in a repository, judged by the instance's tests."""

from services.green.kinds.swebench.kind import SweBenchKind, SwePlan

__all__ = ["SweBenchKind", "SwePlan"]
