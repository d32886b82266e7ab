"""Asset sources and archive safety, against a real HTTP server on 127.0.0.1 and local folders."""

from __future__ import annotations

import gzip
import io
import multiprocessing
import os
import tarfile
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from services.green.kinds.arvo.assets import (
    AssetError,
    AssetSource,
    AssetTimeout,
    CorruptAsset,
    HttpAssetSource,
    LocalAssetSource,
    UnknownTask,
    check_archive,
    make_asset_source,
    parse_arvo_id,
    safe_extract,
    verify_gzip_tar,
)

# --- archive helpers ------------------------------------------------------------------------


def make_tar(path: Path, entries: list[tuple], *, compress: bool = True) -> Path:
    """entries: (name, kind, payload) with kind in file/dir/sym/hard/chr/fifo; payload is the
    file content (bytes) or the link target."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tf:
        for name, kind, *rest in entries:
            payload = rest[0] if rest else b""
            info = tarfile.TarInfo(name)
            info.mtime = 1_700_000_000
            if kind == "file":
                info.size = len(payload)
                info.mode = 0o644
                tf.addfile(info, io.BytesIO(payload))
                continue
            if kind == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o755
            elif kind == "sym":
                info.type, info.linkname = tarfile.SYMTYPE, payload
            elif kind == "hard":
                info.type, info.linkname = tarfile.LNKTYPE, payload
            elif kind == "chr":
                info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 1, 3
            elif kind == "fifo":
                info.type = tarfile.FIFOTYPE
            tf.addfile(info)
    data = buf.getvalue()
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


PROJECT_ENTRIES = [
    ("src-vul", "dir"),
    ("src-vul/libfoo", "dir"),
    ("src-vul/libfoo/lib", "dir"),
    ("src-vul/libfoo/lib/x.c", "file", b"int main(void) { return 0; }\n"),
    ("src-vul/libfoo/include", "dir"),
    ("src-vul/libfoo/include/x.h", "file", b"#pragma once\n"),
    ("src-vul/libfoo/include/alias.h", "sym", "x.h"),
    ("src-vul/libfoo/lib/up.h", "sym", "../include/x.h"),
    ("src-vul/libfoo/README", "file", b"readme\n"),
    ("src-vul/libfoo/README.copy", "hard", "src-vul/libfoo/README"),
]


def write_task(root: Path, arvo_id: str, *, tar_entries=None) -> Path:
    d = root / arvo_id
    d.mkdir(parents=True, exist_ok=True)
    (d / "error.txt").write_text("==1==ERROR: AddressSanitizer: heap-buffer-overflow\n")
    (d / "patch.diff").write_text("--- a/lib/x.c\n+++ b/lib/x.c\n@@ -1 +1 @@\n-a\n+b\n")
    make_tar(d / "repo-vul.tar.gz", tar_entries or PROJECT_ENTRIES)
    return d


# --- a real HTTP server ---------------------------------------------------------------------


class ArvoServer:
    """Serves ``<root>/<id>/<file>`` under several behaviours chosen by the URL's first segment:
    /files (plain), /slow (sleeps before answering), /flaky (500s first), /redirect (302 to
    /files), /stall (sends half the body then hangs), /short (promises more bytes than it sends),
    /forbidden (403)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.fail_first: dict[str, int] = {}
        self.sleep_s = 0.0
        self.file_delay_s = 0.0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                with server.lock:
                    server.counts[self.path] += 1
                mode, _, rest = self.path.lstrip("/").partition("/")
                if mode == "redirect":
                    self.send_response(302)
                    self.send_header("Location", f"/files/{rest}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if mode == "forbidden":
                    return self._status(403)
                if mode == "slow":
                    time.sleep(server.sleep_s)
                if mode == "flaky":
                    with server.lock:
                        left = server.fail_first.get(rest, 0)
                        server.fail_first[rest] = left - 1
                    if left > 0:
                        return self._status(500)
                path = server.root / rest
                if not path.is_file():
                    return self._status(404)
                body = path.read_bytes()
                if server.file_delay_s:
                    time.sleep(server.file_delay_s)
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                if mode == "short":
                    self.send_header("Content-Length", str(len(body) + 100))
                    self.end_headers()
                    self.wfile.write(body)
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if mode == "stall":
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    time.sleep(server.sleep_s)
                    return
                self.wfile.write(body)

            def _status(self, code: int) -> None:
                msg = f"status {code}\n".encode()
                self.send_response(code)
                self.send_header("Content-Length", str(len(msg)))
                self.end_headers()
                self.wfile.write(msg)

        class QuietServer(ThreadingHTTPServer):
            def handle_error(self, request, client_address) -> None:
                pass  # clients that hang up on /stall and /short are expected

        self.httpd = QuietServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def url(self, mode: str = "files") -> str:
        return f"http://127.0.0.1:{self.port}/{mode}"

    def count(self, mode: str, arvo_id: str, name: str) -> int:
        with self.lock:
            return self.counts[f"/{mode}/{arvo_id}/{name}"]


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    root = tmp_path / "dataset"
    write_task(root, "10055")
    return root


@pytest.fixture
def server(dataset: Path):
    srv = ArvoServer(dataset)
    srv.thread.start()
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()


def http_source(server: ArvoServer, tmp_path: Path, mode: str = "files", **kw) -> HttpAssetSource:
    kw.setdefault("backoff_s", 0.01)
    kw.setdefault("timeout_s", 5.0)
    return HttpAssetSource(server.url(mode), tmp_path / "cache", **kw)


def no_partials(cache: Path) -> bool:
    return not [p for p in cache.rglob("*.part")]


# --- ids ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (10055, "10055"),
        ("10055", "10055"),
        ("arvo:10055", "10055"),
        (" ARVO:42 ", "42"),
        ("arvo: 7", "7"),
        ("007", "7"),
    ],
)
def test_parse_arvo_id_accepts(raw, expected):
    assert parse_arvo_id(raw) == expected


@pytest.mark.parametrize(
    "raw", ["", "arvo:", "abc", "10055/../1", "-1", -1, True, "1.5", "arvo:12a", "١٢", None]
)
def test_parse_arvo_id_rejects(raw):
    with pytest.raises(ValueError):
        parse_arvo_id(raw)


# --- HTTP source ----------------------------------------------------------------------------


def test_http_fetch_all_files_and_cache(server, dataset, tmp_path):
    src = http_source(server, tmp_path)
    assert isinstance(src, AssetSource)
    for name in ("error.txt", "patch.diff", "repo-vul.tar.gz"):
        path = src.fetch("arvo:10055", name)
        assert path.read_bytes() == (dataset / "10055" / name).read_bytes()
        assert path == src.cached_path(10055, name)
        again = src.fetch(10055, name)
        assert again == path
        assert server.count("files", "10055", name) == 1  # second fetch came from the cache
    assert no_partials(tmp_path / "cache")
    src.close()


def test_http_404_is_unknown_task(server, tmp_path):
    src = http_source(server, tmp_path)
    with pytest.raises(UnknownTask, match="404"):
        src.fetch("99999", "error.txt")
    assert server.count("files", "99999", "error.txt") == 1  # a 404 is not retried
    assert not src.cached_path("99999", "error.txt").exists()
    assert no_partials(tmp_path / "cache")


def test_http_other_status_is_asset_error_with_status(server, tmp_path):
    src = http_source(server, tmp_path, mode="forbidden")
    with pytest.raises(AssetError, match="403") as info:
        src.fetch("10055", "error.txt")
    assert not isinstance(info.value, UnknownTask | AssetTimeout)
    assert server.count("forbidden", "10055", "error.txt") == 1


def test_http_timeout(server, tmp_path):
    server.sleep_s = 2.0
    src = http_source(server, tmp_path, mode="slow", timeout_s=0.3, retries=1)
    started = time.monotonic()
    with pytest.raises(AssetTimeout):
        src.fetch("10055", "error.txt")
    assert time.monotonic() - started < 1.9
    assert server.count("slow", "10055", "error.txt") == 2  # timeouts are retried
    assert no_partials(tmp_path / "cache")


def test_http_stalled_body_times_out(server, tmp_path):
    server.sleep_s = 2.0
    src = http_source(server, tmp_path, mode="stall", timeout_s=0.3, retries=0)
    with pytest.raises(AssetTimeout):
        src.fetch("10055", "repo-vul.tar.gz")
    assert not src.cached_path("10055", "repo-vul.tar.gz").exists()
    assert no_partials(tmp_path / "cache")


def test_http_retries_5xx_then_succeeds(server, dataset, tmp_path):
    server.fail_first["10055/patch.diff"] = 2
    src = http_source(server, tmp_path, mode="flaky", retries=3)
    path = src.fetch("10055", "patch.diff")
    assert path.read_bytes() == (dataset / "10055" / "patch.diff").read_bytes()
    assert server.count("flaky", "10055", "patch.diff") == 3


def test_http_gives_up_after_retries(server, tmp_path):
    server.fail_first["10055/patch.diff"] = 10
    src = http_source(server, tmp_path, mode="flaky", retries=2)
    with pytest.raises(AssetError, match="500"):
        src.fetch("10055", "patch.diff")
    assert server.count("flaky", "10055", "patch.diff") == 3


def test_http_follows_redirects(server, dataset, tmp_path):
    src = http_source(server, tmp_path, mode="redirect")
    path = src.fetch("10055", "repo-vul.tar.gz")
    assert path.read_bytes() == (dataset / "10055" / "repo-vul.tar.gz").read_bytes()
    assert server.count("redirect", "10055", "repo-vul.tar.gz") == 1
    assert server.count("files", "10055", "repo-vul.tar.gz") == 1


def test_http_truncated_body_never_cached(server, tmp_path):
    src = http_source(server, tmp_path, mode="short", retries=1)
    with pytest.raises(AssetError):
        src.fetch("10055", "repo-vul.tar.gz")
    assert server.count("short", "10055", "repo-vul.tar.gz") == 2
    assert not src.cached_path("10055", "repo-vul.tar.gz").exists()
    assert no_partials(tmp_path / "cache")


def test_concurrent_fetches_download_once(server, tmp_path):
    server.file_delay_s = 0.3  # keep the first download in flight while the others arrive
    src = http_source(server, tmp_path)
    barrier = threading.Barrier(8)
    results: list[Path] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            barrier.wait()
            for name in ("repo-vul.tar.gz", "error.txt"):
                results.append(src.fetch("arvo:10055", name))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    assert len(results) == 16
    assert len(set(results)) == 2
    assert server.count("files", "10055", "repo-vul.tar.gz") == 1
    assert server.count("files", "10055", "error.txt") == 1
    verify_gzip_tar(src.cached_path("10055", "repo-vul.tar.gz"))


def _process_fetch(base_url: str, cache: str, queue) -> None:  # runs in a forked child
    src = HttpAssetSource(base_url, cache, timeout_s=10, backoff_s=0.01)
    try:
        queue.put(str(src.fetch("10055", "repo-vul.tar.gz")))
    except BaseException as exc:  # pragma: no cover - reported to the parent
        queue.put(f"error: {exc!r}")


def test_processes_sharing_a_cache_download_once(server, tmp_path):
    server.file_delay_s = 0.5
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    procs = [
        ctx.Process(target=_process_fetch, args=(server.url(), str(tmp_path / "cache"), queue))
        for _ in range(4)
    ]
    for p in procs:
        p.start()
    got = [queue.get(timeout=30) for _ in procs]
    for p in procs:
        p.join(10)
    assert len(set(got)) == 1 and not got[0].startswith("error"), got
    assert server.count("files", "10055", "repo-vul.tar.gz") == 1


def test_corrupt_download_is_not_cached_and_next_fetch_retries(server, dataset, tmp_path):
    good = (dataset / "10055" / "repo-vul.tar.gz").read_bytes()
    (dataset / "10055" / "repo-vul.tar.gz").write_bytes(good[: len(good) // 2])  # truncated gz
    src = http_source(server, tmp_path)
    with pytest.raises(CorruptAsset):
        src.fetch("10055", "repo-vul.tar.gz")
    assert not src.cached_path("10055", "repo-vul.tar.gz").exists()
    assert no_partials(tmp_path / "cache")
    (dataset / "10055" / "repo-vul.tar.gz").write_bytes(b"this is not gzip at all")
    with pytest.raises(CorruptAsset, match="not a gzip"):
        src.fetch("10055", "repo-vul.tar.gz")
    (dataset / "10055" / "repo-vul.tar.gz").write_bytes(good)
    path = src.fetch("10055", "repo-vul.tar.gz")
    assert path.read_bytes() == good
    assert server.count("files", "10055", "repo-vul.tar.gz") == 3


def test_damaged_cache_entry_is_repaired(server, tmp_path):
    src = http_source(server, tmp_path)
    path = src.fetch("10055", "repo-vul.tar.gz")
    path.write_bytes(b"garbage")
    assert src.fetch("10055", "repo-vul.tar.gz") == path
    verify_gzip_tar(path)
    assert server.count("files", "10055", "repo-vul.tar.gz") == 2
    src.invalidate("10055", "repo-vul.tar.gz")
    assert not path.exists()


def test_cache_is_namespaced_per_source(server, tmp_path):
    a = http_source(server, tmp_path, mode="files")
    b = http_source(server, tmp_path, mode="redirect")
    assert a.cached_path("1", "error.txt") != b.cached_path("1", "error.txt")
    assert a.cached_path("1", "error.txt").parent.parent.parent == tmp_path / "cache"


@pytest.mark.parametrize("name", ["../x", "a/b", "", ".hidden", "x/../../y"])
def test_bad_asset_names_refused(server, tmp_path, name):
    src = http_source(server, tmp_path)
    with pytest.raises(ValueError):
        src.fetch("10055", name)


def test_bad_id_refused(server, tmp_path):
    src = http_source(server, tmp_path)
    with pytest.raises(ValueError):
        src.fetch("../10055", "error.txt")
    assert sum(server.counts.values()) == 0


# --- local source ---------------------------------------------------------------------------


def test_local_source_returns_files_in_place(dataset):
    src = LocalAssetSource(dataset)
    assert isinstance(src, AssetSource)
    for name in ("error.txt", "patch.diff", "repo-vul.tar.gz"):
        assert src.fetch("arvo:10055", name) == dataset / "10055" / name


def test_local_source_unknown_task_and_missing_file(dataset):
    src = LocalAssetSource(dataset)
    with pytest.raises(UnknownTask, match="no task arvo:1 ") as info:
        src.fetch("1", "error.txt")
    assert "GREEN_ASSET_SOURCE" in str(info.value)  # the setting the user controls
    (dataset / "10055" / "patch.diff").unlink()
    with pytest.raises(UnknownTask, match=r"patch\.diff is missing"):
        src.fetch("10055", "patch.diff")


def test_a_described_folder_says_how_to_build_a_missing_task(dataset):
    """The fixture builder's arena-source.json turns 'no task under /assets' (a path inside
    green's container) into the task's name and the command that builds it."""
    (dataset / "arena-source.json").write_text(
        '{"name": "the bundled fixture tasks", "tasks": ["10055", "900001"],'
        ' "build": "uv run python -m fixtures.build --only {id}"}'
    )
    src = LocalAssetSource(dataset)
    with pytest.raises(UnknownTask) as info:
        src.fetch("arvo:900001", "error.txt")
    why = str(info.value)
    assert "is one of the bundled fixture tasks but is not built" in why
    assert "uv run python -m fixtures.build --only 900001" in why
    assert str(dataset) not in why
    # "no task ... in <the folder's name>": the name may be plural ("tasks has no task" read wrong)
    # an unknown id: the tasks it could run now, apart from those it would have to build first
    with pytest.raises(
        UnknownTask,
        match=r"^no task arvo:31337 in the bundled fixture tasks \(built: 10055; it can build "
        r"900001 with: uv run python -m fixtures\.build --only <id>\)$",
    ):
        src.fetch("31337", "error.txt")


def test_local_source_corrupt_archive_is_reported_not_deleted(dataset):
    tar = dataset / "10055" / "repo-vul.tar.gz"
    tar.write_bytes(gzip.compress(b"not a tar archive" * 100))
    src = LocalAssetSource(dataset)
    with pytest.raises(CorruptAsset):
        src.fetch("10055", "repo-vul.tar.gz")
    assert tar.exists()
    make_tar(tar, PROJECT_ENTRIES)
    os.utime(tar, ns=(time.time_ns(), time.time_ns() + 1_000_000))
    assert src.fetch("10055", "repo-vul.tar.gz") == tar


def test_make_asset_source(tmp_path, dataset):
    http = make_asset_source("https://example.org/data/arvo/", tmp_path / "c", timeout_s=3)
    assert isinstance(http, HttpAssetSource)
    assert http.url_for("arvo:5", "error.txt") == "https://example.org/data/arvo/5/error.txt"
    assert http.timeout_s == 3
    local = make_asset_source(str(dataset), tmp_path / "c")
    assert isinstance(local, LocalAssetSource)
    assert isinstance(make_asset_source(f"file://{dataset}", tmp_path), LocalAssetSource)
    with pytest.raises(ValueError):
        make_asset_source(str(tmp_path / "missing"), tmp_path)
    default = HttpAssetSource(cache_dir=tmp_path)
    assert default.url_for(10055, "patch.diff") == (
        "https://huggingface.co/datasets/sunblaze-ucb/cybergym/resolve/main/data/arvo/10055/patch.diff"
    )


# --- archives -------------------------------------------------------------------------------


def test_check_and_extract_cybergym_layout(tmp_path):
    tar = make_tar(tmp_path / "repo.tar.gz", PROJECT_ENTRIES)
    info = check_archive(tar)
    assert (info.top_dir, info.project) == ("src-vul/libfoo", "libfoo")
    assert info.n_files == 3 and info.n_symlinks == 2 and info.n_hardlinks == 1
    assert info.size == len(b"int main(void) { return 0; }\n") + len(b"#pragma once\n") + 7
    root = safe_extract(tar, tmp_path / "out")
    assert root == (tmp_path / "out" / "src-vul" / "libfoo").resolve()
    assert (root / "lib" / "x.c").read_text().startswith("int main")
    assert (root / "lib" / "up.h").read_text() == "#pragma once\n"
    assert (root / "README.copy").read_text() == "readme\n"


@pytest.mark.parametrize(
    ("entries", "top", "project", "hint"),
    [
        ([("libfoo/a.c", "file", b"x"), ("libfoo/b/c.h", "file", b"y")], "libfoo", "libfoo", None),
        ([("./libfoo/", "dir"), ("./libfoo/a.c", "file", b"x")], "libfoo", "libfoo", None),
        ([("a.c", "file", b"x"), ("lib/b.c", "file", b"y")], "", None, None),
        ([("a.c", "file", b"x")], "", None, None),
        (
            [("src-vul/p/a.c", "file", b"x"), ("src-vul/dep/b.c", "file", b"y")],
            "src-vul",
            None,
            None,
        ),
        (
            [("src-vul/p/a.c", "file", b"x"), ("src-vul/dep/b.c", "file", b"y")],
            "src-vul/p",
            "p",
            "p",
        ),
    ],
)
def test_top_dir_detection(tmp_path, entries, top, project, hint):
    tar = make_tar(tmp_path / "t.tar.gz", entries)
    info = check_archive(tar, project_hint=hint)
    assert (info.top_dir, info.project) == (top, project)
    root = safe_extract(tar, tmp_path / "out", project_hint=hint)
    assert root == ((tmp_path / "out" / top) if top else tmp_path / "out").resolve()


MALICIOUS = {
    "traversal": ([("../evil.c", "file", b"x")], "'..' path traversal"),
    "nested traversal": ([("src-vul/p/../../../evil", "file", b"x")], "'..' path traversal"),
    "absolute": ([("/tmp/evil.c", "file", b"x")], "absolute path"),
    "symlink absolute": ([("p/etc", "sym", "/etc")], "absolute path"),
    "symlink escape": ([("p/a/up", "sym", "../../..")], "outside the destination"),
    "write through symlink": (
        [("p/lnk", "sym", "../.."), ("p/lnk/evil", "file", b"x")],
        "outside the destination",
    ),
    "link to ancestor trick": (
        [("d/p", "sym", ".."), ("q", "sym", "d/p/../x")],
        "outside the destination",
    ),
    "hardlink escape": ([("p/a", "hard", "../../etc/passwd")], "leaves the destination"),
    "hardlink absolute": ([("p/a", "hard", "/etc/passwd")], "absolute path"),
    "hardlink to nothing": ([("p/a", "hard", "p/missing")], "not an earlier regular file"),
    "char device": ([("p/null", "chr")], "device file"),
    "fifo": ([("p/pipe", "fifo")], "FIFO"),
    "file replaced by link": (
        [("p/a.c", "file", b"x"), ("p/a.c", "sym", "/etc/passwd")],
        "redefines",
    ),
}


@pytest.mark.parametrize("case", sorted(MALICIOUS))
def test_malicious_archives_are_rejected(tmp_path, case):
    entries, message = MALICIOUS[case]
    tar = make_tar(tmp_path / "evil.tar.gz", entries)
    with pytest.raises(CorruptAsset, match=message):
        check_archive(tar)
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    dest = sandbox / "out"
    with pytest.raises(CorruptAsset):
        safe_extract(tar, dest)
    # nothing was written anywhere: neither inside nor next to the destination
    assert not dest.exists() or not any(dest.rglob("*"))
    assert [p.name for p in sandbox.iterdir()] in ([], ["out"])
    assert not (tmp_path / "evil.c").exists()


def test_skip_policy_drops_escaping_symlinks_only(tmp_path):
    entries = [
        ("src-vul/p/config.guess", "sym", "/usr/share/misc/config.guess"),
        ("src-vul/p/a.c", "file", b"x"),
        ("src-vul/p/inc.h", "sym", "a.c"),
    ]
    tar = make_tar(tmp_path / "t.tar.gz", entries)
    with pytest.raises(CorruptAsset, match=r"config\.guess"):
        check_archive(tar)
    info = check_archive(tar, escaping_symlinks="skip")
    assert info.skipped_links == ("src-vul/p/config.guess",)
    root = safe_extract(tar, tmp_path / "out", escaping_symlinks="skip")
    assert not (root / "config.guess").is_symlink()
    assert (root / "inc.h").is_symlink() and (root / "a.c").read_bytes() == b"x"
    # a member written through a skipped link is still refused
    bad = make_tar(tmp_path / "b.tar.gz", [("p/l", "sym", "/tmp"), ("p/l/x", "file", b"x")])
    with pytest.raises(CorruptAsset, match="escaping"):
        check_archive(bad, escaping_symlinks="skip")


def test_tar_bomb_limits(tmp_path):
    tar = make_tar(tmp_path / "t.tar.gz", [("p/a", "file", b"x" * 5000), ("p/b", "file", b"y")])
    with pytest.raises(CorruptAsset, match="tar bomb"):
        check_archive(tar, max_bytes=4096)
    with pytest.raises(CorruptAsset, match="more than 1 members"):
        check_archive(tar, max_members=1)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "not a gzip"),
        (b"plain text", "not a gzip"),
        (gzip.compress(b"\x00" * 1024, mtime=0), "empty archive"),
        (gzip.compress(b"hello world, not a tar" * 50, mtime=0), "readable gzip tar"),
    ],
)  # mtime=0: the same test ids in every process (pytest -n compares the workers' collections)
def test_verify_gzip_tar_rejects(tmp_path, content, message):
    path = tmp_path / "x.tar.gz"
    path.write_bytes(content)
    with pytest.raises(CorruptAsset, match=message):
        verify_gzip_tar(path)


def test_verify_gzip_tar_detects_crc_and_truncation(tmp_path):
    good = make_tar(tmp_path / "g.tar.gz", PROJECT_ENTRIES).read_bytes()
    assert verify_gzip_tar(tmp_path / "g.tar.gz") == len(PROJECT_ENTRIES)
    bad_crc = bytearray(good)
    bad_crc[-8] ^= 0xFF  # the CRC32 in the gzip trailer
    (tmp_path / "crc.tar.gz").write_bytes(bytes(bad_crc))
    with pytest.raises(CorruptAsset):
        verify_gzip_tar(tmp_path / "crc.tar.gz")
    (tmp_path / "cut.tar.gz").write_bytes(good[:-20])
    with pytest.raises(CorruptAsset):
        verify_gzip_tar(tmp_path / "cut.tar.gz")


def test_check_archive_lists_files_and_reads_members_in_the_same_pass(tmp_path):
    tar = make_tar(tmp_path / "t.tar.gz", PROJECT_ENTRIES)
    info = check_archive(tar, read=["lib/x.c", "/include/x.h", "missing.c", "include/alias.h"])
    assert info.sources == {
        "lib/x.c": b"int main(void) { return 0; }\n",
        "include/x.h": b"#pragma once\n",
    }  # links and missing files are left out
    assert info.files == {"README", "include/x.h", "lib/x.c"}  # regular files only
    assert check_archive(tar).sources == {}
    # the root is only known at the end: a same-named file under another root is not taken
    entries = [
        ("src-vul/p/lib/x.c", "file", b"p's"),
        ("src-vul/dep/lib/x.c", "file", b"dep's"),
        ("src-vul/lib/x.c", "file", b"src-vul's"),
    ]
    other = make_tar(tmp_path / "o.tar.gz", entries)
    info = check_archive(other, project_hint="p", read=["lib/x.c"])
    assert (info.top_dir, info.sources) == ("src-vul/p", {"lib/x.c": b"p's"})
    assert info.files == {"lib/x.c"}
    info = check_archive(other, read=["lib/x.c", "p/lib/x.c"])
    assert info.top_dir == "src-vul"
    assert info.sources == {"lib/x.c": b"src-vul's", "p/lib/x.c": b"p's"}
    flat = make_tar(tmp_path / "f.tar.gz", [("a.c", "file", b"a"), ("lib/b.c", "file", b"b")])
    info = check_archive(flat, read=["lib/b.c"])
    assert (info.files, info.sources) == ({"a.c", "lib/b.c"}, {"lib/b.c": b"b"})
