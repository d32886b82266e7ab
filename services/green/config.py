"""Green's settings, read from the environment (prefix GREEN_): one class of a few groups.

Each group is a class of its own (who may reach green, the database, a task's run, Docker and the
task container, datasets and judging, the dashboard); :class:`GreenSettings` is all of them, and
its variables keep their flat names (``GREEN_PORT``, not ``GREEN_EDGE__PORT``). Every field is
documented here and in .env.example, under its group's heading. :class:`DeveloperChecks` holds
what only green's own test suite turns on: it is no user's setting.
"""

from __future__ import annotations

import secrets
import socket
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

CYBERGYM_ARVO_URL = "https://huggingface.co/datasets/sunblaze-ucb/cybergym/resolve/main/data/arvo"


class _Group(BaseModel):
    """A group of green's settings (its fields' docstrings are their documentation)."""

    model_config = ConfigDict(use_attribute_docstrings=True)


class EdgeSettings(_Group):
    """Who may reach green: where it listens, credentials, request bounds."""

    host: str = "127.0.0.1"
    """Interface to listen on."""
    port: int = 9009
    """Port to listen on."""
    public_url: str | None = None
    """URL purple uses to reach green. Default: the card URL, else http://<host>:<port>."""
    card_url: str | None = None
    """URL advertised in green's agent card (what outside clients use; --card-url). Default: the
    public URL, else http://<host>:<port>. Never 0.0.0.0."""
    api_token: str | None = None
    """The operator's credential: the operator plane (REST /tasks and /assessments, A2A task
    intake and A2A task reads) requires 'Authorization: Bearer <token>'. Unset: read from
    api_token_file, or generated there at the first start (and logged where)."""
    api_token_file: Path = Path("data/operator-token")
    """Where the operator token is kept when GREEN_API_TOKEN is unset (created with mode 0600)."""
    open_operator_plane: bool = False
    """INSECURE. Let anonymous callers use the operator plane (create, list, cancel tasks). They
    still never see the ground truth: only the token holder does. For closed networks only."""
    require_token: bool = True
    """Refuse execute/submit that do not carry the task's token (text form: a 'token: <t>' line)."""
    purple_allowlist: list[str] = []
    """purple_url values a request may name besides GREEN_PURPLE_URL (shell-style patterns,
    e.g. http://purple-*:9019). Green never calls any other URL."""
    max_queued_tasks: int = Field(2000, ge=1, le=1_000_000)
    """Tasks waiting or running at once; an intake beyond it is refused with 429."""
    max_assessment_tasks: int = Field(2000, ge=1, le=100_000)
    """Task ids in one assessment or A2A message (CyberGym has 1,368 ARVO tasks)."""
    intake_per_minute: int = Field(120, ge=1, le=100_000)
    """Intake requests (new tasks or assessments) one credential may make per minute (429 with
    Retry-After beyond it). Anonymous callers share one budget."""
    request_read_timeout_s: float = Field(30.0, gt=0, le=600)
    """A client must send a request's headers and body within this many seconds, else green
    closes the connection (slow-client defence)."""
    max_connections: int = Field(1024, ge=16, le=100_000)
    """Open connections green accepts; a connection beyond it is closed at once."""
    max_connections_per_credential: int = Field(32, ge=2, le=100_000)
    """Open connections one credential may hold (the operator token, a dashboard session, a
    task's token; a caller with none, by its address), and requests it may have in flight; a
    request on one more is refused at once with 429 and its connection closed. /healthz is not
    counted. Must be below max_connections, so one credential never holds every connection;
    unset, it is 32 or half of max_connections, whichever is smaller."""
    a2a_body_max_bytes: int = Field(8 * 1024**2, ge=64 * 1024, le=1024**3)
    """Largest JSON-RPC request body (POST /), counted while it is read (413 beyond it). It
    carries purple's commands (twice: text and data) and must exceed 2 x command_max_bytes."""
    body_bytes_per_caller: int = Field(16 * 1024**2, ge=64 * 1024, le=64 * 1024**3)
    """Request body bytes one caller may have in flight at once (its bodies being read, and
    those held while their request is served), counted before a body is read: by its declared
    Content-Length (a chunked body: its route's limit). Beyond it the request is refused with
    429 unread. The caller: the operator token or a dashboard session, else the address (a task
    token travels in the body, so it cannot be known before). At least GREEN_A2A_BODY_MAX_BYTES."""
    body_bytes_anonymous: int = Field(32 * 1024**2, ge=64 * 1024, le=64 * 1024**3)
    """The same bound for all callers without the operator token or a session together (by
    address they are many), so a crowd of addresses cannot make green buffer gigabytes; the
    operator's requests are not counted in it. At least GREEN_BODY_BYTES_PER_CALLER. An 8 MiB
    JSON-RPC body costs green about 40 MiB while it is parsed and served: the default keeps
    that near 200 MiB."""
    api_body_max_bytes: int = Field(1024**2, ge=4 * 1024, le=1024**3)
    """Largest request body of the REST API (413 beyond it, before authentication)."""
    ui_body_max_bytes: int = Field(64 * 1024, ge=4 * 1024, le=1024**3)
    """Largest request body of the dashboard (its forms; 413 beyond it)."""
    rpc_max_depth: int = Field(32, ge=8, le=90)
    """How deep a JSON-RPC request may nest (objects and lists); deeper is refused with -32600
    or -32602 before the A2A SDK parses it."""
    rpc_max_values: int = Field(200_000, ge=1_000, le=10_000_000)
    """JSON values (object members and list items) one JSON-RPC request may hold."""


class DatabaseSettings(_Group):
    """The database and the replicas that share it."""

    database_url: str = "sqlite:///data/green.db"
    """Any SQLAlchemy URL: SQLite by default; PostgreSQL (``postgresql://user@host/db``, with the
    ``postgres`` extra) for several green replicas on one queue. Migrated at start-up."""
    database_deadline_s: float = Field(5.0, gt=0, le=300)
    """How long one database statement may wait for a lock, a connection or the server before
    it fails (SQLite's busy timeout unless the URL has ``?timeout=<seconds>``; PostgreSQL's lock
    and statement timeouts). Green's event loop never waits for the database: its calls run in
    threads, and a caller gives up a second after this."""
    instance_name: str = ""
    """This replica's name: the owner of the tasks it runs (the task's 'instance') and of their
    containers (label arena.owner). Empty: <hostname>-<6 random hex>, new at every start (a
    replica's unfinished tasks then end through their expired leases). A fixed name: a restart
    fails its own unfinished tasks at once. A name a live replica holds is refused at start.
    Greens that share an engine need names of their own, whatever their database: at start a
    green removes every container labelled with its name."""
    lease_s: float = Field(30.0, ge=3, le=60)
    """A running task's lease: its replica renews it every third of this; a replica that stops
    renewing (it died) has its tasks ended as infra ('replica_lost') by another replica, and
    their containers removed, this long after its last renewal."""
    queue_poll_s: float = Field(1.0, gt=0, le=30)
    """How often a replica looks for queued tasks to claim (a task posted to it is claimed at
    once), cancel requests for its tasks, and expired leases of other replicas."""


class TaskSettings(_Group):
    """A task's run: its purple, its limits, its logs."""

    purple_url: str = "http://127.0.0.1:9019"
    """Default purple agent (A2A base URL) for tasks that name none."""
    max_concurrent_tasks: int = Field(4, ge=1)
    """Tasks running at once; the rest wait in 'queued'."""
    task_timeout_s: float = Field(1800.0, gt=0)
    """Deadline of a task from the moment it starts running."""
    idle_timeout_s: float = Field(300.0, gt=0)
    """A running task with no execute/submit for this long ends."""
    command_timeout_s: float = Field(120.0, gt=0)
    """Default (and maximum) timeout of one command."""
    max_steps: int = Field(100, ge=1)
    """Commands a task may run; after that only submit is accepted."""
    assessment_heartbeat_s: float = Field(60.0, gt=0)
    """A streamed assessment sends a progress update at least this often (AgentBeats' gateway
    drops streams silent for ~300 s)."""
    purple_poll_s: float = Field(5.0, gt=0)
    """How often green checks purple's A2A task while waiting for a submission."""
    purple_lost_after_s: float = Field(10.0, gt=0)
    """Purple failing every poll of a running task for this long (connection refused, say) is
    gone: the task ends. 'task not found' (purple restarted) ends it at once."""
    purple_start_retry_s: float = Field(30.0, ge=0)
    """An unreachable purple is retried with backoff this long before the task fails as
    never started (such tasks are run again by a resumed run)."""
    log_dir: Path = Path("logs")
    """Run folders log_<timestamp>/ with agents.log and arvo_<id>.log go here."""


class DockerSettings(_Group):
    """Docker engines and the task container (its limits, what the agent sees in it)."""

    sandbox_provider: str = "docker"
    """Which sandbox provider runs task containers (a name registered in services/sandbox:
    'docker', the Docker engines below)."""
    docker_hosts: list[str] = []
    """Docker engines that run task containers, as a JSON list of URLs: unix:///path.sock,
    tcp://host:2376 (TLS with docker_tls_dir) or ssh://user@host, each optionally ending in
    '#slots=N' (that engine's capacity). Empty: the engine DOCKER_HOST names, else the local
    socket. Tasks go to an engine that answers and has a free slot, preferring one that already
    holds the image (docs/engines.md)."""
    docker_engine_slots: int = Field(0, ge=0)
    """Task containers one engine runs at once, unless its URL says '#slots=N'; 0: no limit of
    its own (max_concurrent_tasks bounds the total)."""
    docker_tls_dir: Path | None = None
    """Directory with ca.pem, cert.pem and key.pem for tcp:// engines (mutual TLS, verified)."""
    docker_registry: str | None = None
    """Registry (host:port[/path]) that task images absent from an engine are pulled through:
    n132/arvo:1-vul is pulled as <registry>/n132/arvo:1-vul and tagged back. Unset: pulled by
    their own name. Each engine pulls on first use; progress shows in the task's events."""
    docker_check_s: float = Field(5.0, gt=0)
    """How often each engine is pinged. One that answers within a second admits new tasks (one
    starting at once per CPU of it but one, at least one; the rest wait in the queue); one that
    answers later, or not within this time, admits none; one that refuses the ping, or does not
    answer three times in a row, is down: its running tasks end as infra."""
    docker_timeout_s: float = Field(60.0, gt=0, le=3600)
    """How long green waits for one Docker API call. A call that outlasts it is the engine's
    failure to answer: a request answers 503 with a sentence, and an image removal of the image
    budget is tried again after the next task (a loaded engine may take minutes to delete)."""
    docker_slot_wait_s: float = Field(600.0, gt=0, le=86_400)
    """How long a task waits for a free slot when every engine that answers is full; then it ends
    as infra ("every engine was full")."""
    image_budget_gb: float | None = Field(None, gt=0)
    """Disk budget of task images (those matching image_template), in GB, per Docker engine. On
    an engine over it, green removes the least recently used task images that no queued or
    running task needs, after each task and each prefetch. Unset: no budget (never removed)."""
    container_memory: str = "4g"
    """Memory limit of a task container."""
    container_cpus: float = Field(1.0, gt=0)
    """CPU limit of a task container."""
    container_pids: int = Field(512, ge=16)
    """Process limit of a task container."""
    container_network: bool = False
    """Give task containers a network (off: network_mode=none)."""
    agent_uid: int = Field(1000, ge=1, lt=2**31 - 1)
    """The uid and gid the agent's commands run as in its container (no passwd entry needed; not
    0: root's processes there are green's, out of the agent's reach). Its home and the paths its
    task kind names become its own before its first command; the image must have setpriv."""
    output_limit_bytes: int = Field(64 * 1024, ge=1024)
    """Bytes of command output kept (head and tail)."""
    command_max_bytes: int = Field(1024 * 1024, ge=1024)
    """Largest command green accepts (UTF-8 bytes); a longer one is refused unrun."""
    container_disk_bytes: int = Field(2 * 1024**3, ge=0)
    """Disk a task may fill (bytes its commands add to the container's writable layer; no single
    file larger); over it the task ends as the agent's 'disk_limit'. 0: no cap."""
    disk_check_s: float = Field(1.0, gt=0)
    """How often a command's disk use is measured against container_disk_bytes. Where the cap is
    watched (overlay2 on ext4), also how often files deleted but still open are scanned for: from
    one interval into a command on (a shorter command is never scanned; its files die with it)."""
    cleanup_retry_s: float = Field(2.0, gt=0)
    """A container that could not be removed (engine unreachable) is retried this often."""
    mask_arvo_id: bool = True
    """Never show the ARVO numeric id to the agent (the task UUID names the task)."""
    strip_git: bool = True
    """Remove .git history from the project in the container (the fix may be reachable)."""
    hide_poc: bool = True
    """Remove /tmp/poc from the container."""


class DatasetSettings(_Group):
    """Where tasks come from, and how the kinds judge them."""

    asset_source: str = CYBERGYM_ARVO_URL
    """Where task files come from: an http(s) base URL or a local directory (<id>/<file> layout)."""
    asset_cache_dir: Path = Path("data/cache")
    """Download cache, shared by tasks of the same ARVO id."""
    asset_timeout_s: float = 120.0
    """Seconds a download may stall (connect or read) before it is retried or abandoned."""
    image_template: str = "n132/arvo:{id}-vul"
    """Docker image of a task; {id} is the ARVO id."""
    swebench_instances: str | None = None
    """SWE-bench instances green serves as 'swebench:<id>' tasks: a .json/.jsonl file, or a
    dataset name (verified, lite) loaded with the optional 'datasets' package. Unset: off."""
    swebench_image_template: str | None = None
    """Image of a SWE-bench task ({id}: docker-compatible instance id). Unset: the instance's
    image_name, else swebench/sweb.eval.x86_64.{id}:latest (the official images)."""
    swebench_activate: str = "auto"
    """Command that activates the repository's Python before each command: auto (the official
    images' conda env when present), none, or a command."""
    swebench_eval_timeout_s: float = Field(1800.0, gt=0)
    """Timeout of the judge's test run of one SWE-bench submission."""
    fix_image_template: str = "n132/arvo:{id}-fix"
    """Image of an ARVO task's fixed build, for the reproduce and fix kinds (arvo-poc, arvo-fix).
    A task whose image cannot be had (or an empty template) gets the fallback: the task image
    with patch.diff applied and 'arvo compile' run once, cached per image digest."""
    poc_max_bytes: int = Field(1024**2, ge=1, le=64 * 1024**2)
    """Largest input an arvo-poc task accepts (/workspace/shared/poc)."""
    judge_run_timeout_s: float = Field(60.0, gt=0)
    """arvo-poc and arvo-fix: one input on one build (a hang past it is the input's failure)."""
    judge_build_timeout_s: float = Field(1800.0, gt=0)
    """arvo-fix: applying a patch and 'arvo compile' (a build past it is the patch's failure)."""
    judge_fuzz_runs: int = Field(2000, ge=0)
    """arvo-fix: inputs a fuzzing run of the patched build tries from the corpus and the PoC
    (seed 1; 0: no fuzzing)."""
    judge_fuzz_timeout_s: float = Field(300.0, gt=0)
    """arvo-fix: the whole fuzzing run."""
    fix_floor: bool = True
    """arvo-fix: score a floor patch (the top in-project frame's line of error.txt deleted) once
    per task and fixed build, for the reports (one more build and judgement per task)."""
    verify_concurrency: int = Field(1, ge=1, le=64)
    """Task verifications (arena tasks verify) green runs at once; each uses one container."""
    verify_step_timeout_s: float = Field(900.0, gt=0)
    """Timeout of one verification step (reproduce; apply the fix, arvo compile, rerun)."""


class DashboardSettings(_Group):
    """The dashboard."""

    trajectory_max_bytes: int = Field(8 * 1024**2, ge=64 * 1024, le=1024**3)
    """Largest trajectory the dashboard reads from a purple (its trajectory page says when a
    trajectory was larger and is not shown)."""
    trajectory_timeout_s: float = Field(15.0, gt=0, le=300)
    """Total time the dashboard waits for a purple's trajectory (connect to last byte)."""


GROUPS: tuple[type[_Group], ...] = (
    EdgeSettings,
    DatabaseSettings,
    TaskSettings,
    DockerSettings,
    DatasetSettings,
    DashboardSettings,
)
"""Green's groups of settings, in the order .env.example lists them."""


class GreenSettings(BaseSettings, *GROUPS):
    """Every setting of green's (the groups above), read from ``GREEN_*`` and ``.env``."""

    model_config = SettingsConfigDict(
        env_prefix="GREEN_", env_file=".env", extra="ignore", use_attribute_docstrings=True
    )

    @field_validator("public_url", "card_url")
    @classmethod
    def _no_trailing_slash(cls, v: str | None) -> str | None:
        return v.rstrip("/") if v else v

    @model_validator(mode="after")
    def _coherent_bounds(self) -> GreenSettings:
        if "max_connections_per_credential" not in self.model_fields_set:
            self.max_connections_per_credential = min(32, self.max_connections // 2)
        elif self.max_connections_per_credential >= self.max_connections:
            raise ValueError(
                "GREEN_MAX_CONNECTIONS_PER_CREDENTIAL must be below GREEN_MAX_CONNECTIONS, so one "
                "credential cannot hold every connection"
            )
        largest = max(self.a2a_body_max_bytes, self.api_body_max_bytes, self.ui_body_max_bytes)
        if not largest <= self.body_bytes_per_caller <= self.body_bytes_anonymous:
            raise ValueError(
                "need every GREEN_*_BODY_MAX_BYTES <= GREEN_BODY_BYTES_PER_CALLER <= "
                "GREEN_BODY_BYTES_ANONYMOUS (a body green accepts must fit in each)"
            )
        if self.a2a_body_max_bytes <= 2 * self.command_max_bytes:
            raise ValueError(
                "GREEN_A2A_BODY_MAX_BYTES must exceed 2 x GREEN_COMMAND_MAX_BYTES (a command "
                "travels twice in its message: as text and as data)"
            )
        return self

    @model_validator(mode="after")
    def _unique_instance_name(self) -> GreenSettings:
        if not self.instance_name.strip():
            self.instance_name = f"{socket.gethostname()}-{secrets.token_hex(3)}"
        return self

    def _listen_url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}"

    def reachable_url(self) -> str:
        """What purple is told to use to reach green."""
        return self.public_url or self.card_url or self._listen_url()

    def advertised_url(self) -> str:
        """What green's agent card says."""
        return self.card_url or self.public_url or self._listen_url()


class DeveloperChecks(BaseSettings):
    """Checks for green's developers, off for every user: the test suite turns them on."""

    model_config = SettingsConfigDict(
        env_prefix="GREEN_", env_file=".env", extra="ignore", use_attribute_docstrings=True
    )

    database_check_off_loop: bool = False
    """A check for green's developers (the test suite turns it on): a database statement run on
    the event loop's thread fails, so a call that would stall every request is found at once."""
