"""Task assets: where ``error.txt``, ``repo-vul.tar.gz`` and ``patch.diff`` come from, and how
the source archive is checked and extracted safely. See :mod:`.base` for the contract."""

from services.green.kinds.arvo.assets.base import (
    AGENT_VISIBLE,
    GROUND_TRUTH,
    AssetError,
    AssetName,
    AssetSource,
    AssetTimeout,
    CorruptAsset,
    UnknownTask,
)
from services.green.kinds.arvo.assets.extract import (
    ArchiveInfo,
    check_archive,
    safe_extract,
    verify_gzip_tar,
)
from services.green.kinds.arvo.assets.ids import parse_arvo_id
from services.green.kinds.arvo.assets.sources import (
    DEFAULT_BASE_URL,
    HttpAssetSource,
    LocalAssetSource,
    make_asset_source,
    validate_asset,
)

__all__ = [
    "AGENT_VISIBLE",
    "DEFAULT_BASE_URL",
    "GROUND_TRUTH",
    "ArchiveInfo",
    "AssetError",
    "AssetName",
    "AssetSource",
    "AssetTimeout",
    "CorruptAsset",
    "HttpAssetSource",
    "LocalAssetSource",
    "UnknownTask",
    "check_archive",
    "make_asset_source",
    "parse_arvo_id",
    "safe_extract",
    "validate_asset",
    "verify_gzip_tar",
]
