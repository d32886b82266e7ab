"""The judge: ground truth from ``patch.diff``, enclosing functions, and the metrics.

Pure Python (no services). See ``docs/scoring.md`` for the definitions and worked examples.
"""

from services.green.kinds.arvo.scoring.functions import (
    FunctionIndex,
    FunctionSpan,
    name_from_declaration,
)
from services.green.kinds.arvo.scoring.groundtruth import (
    GroundTruth,
    GTFile,
    GTFunction,
    GTRegion,
    IgnoredFile,
    ground_truth_from_patch,
)
from services.green.kinds.arvo.scoring.metrics import (
    MAX_SPAN_LINES,
    METRIC_FIELDS,
    METRICS,
    TOP_K,
    LocationResult,
    Metrics,
    RegionResult,
    ScoreSummary,
    TaskScore,
    score,
)
from services.shared.scores import Aggregate, MetricMeans, aggregate

__all__ = [
    "MAX_SPAN_LINES",
    "METRICS",
    "METRIC_FIELDS",
    "TOP_K",
    "Aggregate",
    "FunctionIndex",
    "FunctionSpan",
    "GTFile",
    "GTFunction",
    "GTRegion",
    "GroundTruth",
    "IgnoredFile",
    "LocationResult",
    "MetricMeans",
    "Metrics",
    "RegionResult",
    "ScoreSummary",
    "TaskScore",
    "aggregate",
    "ground_truth_from_patch",
    "name_from_declaration",
    "score",
]
