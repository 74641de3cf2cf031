"""Every store memlens can open, registered in this one place.

Factories are "module:callable" strings so that listing the stores imports no
connector module (and no ML stack): a page can paint before any store is opened.
"""

from connectors.base import ConfigField, StoreSpec, register

register(
    StoreSpec(
        name="embedded",
        title="Embedded (SQLite + MiniLM)",
        factory="connectors.embedded:open_store",
        local_model=True,
        description="A local SQLite file of memories with all-MiniLM-L6-v2 embeddings. "
        "Leave the file empty for the bundled demo data.",
        fields=(
            ConfigField("db_path", "SQLite file (empty: demo data)", "path", env="MEMLENS_EMBEDDED_DB", default=""),
            ConfigField(
                "weights",
                "Weights",
                "text",
                default="semantic=0.6,recency=0.15,importance=0.15,usage=0.1",
                help="component=weight pairs; normalised to sum to 1",
            ),
            ConfigField("half_life_hours", "Recency half-life (hours)", "float", default=72.0),
        ),
    )
)

register(
    StoreSpec(
        name="memorysync",
        title="MemorySync (hosted, REST)",
        factory="connectors.memorysync:open_store",
        description="A hosted MemorySync project, read from its raw responses so each score's "
        "scoring_breakdown is shown. Every query bumps usage counts in production.",
        fields=(
            ConfigField("base_url", "Base URL", "text", env="MEMORYSYNC_BASE_URL", default=""),
            ConfigField("api_key", "API key", "secret", env="MEMORYSYNC_API_KEY"),
            ConfigField(
                "end_user_id",
                "Default end user id",
                "text",
                env="MEMORYSYNC_END_USER_ID",
                default="",
                help="Sent as X-End-User-ID when no end user is chosen; API keys require one.",
            ),
            ConfigField("project_id", "Project id (optional)", "text", env="MEMORYSYNC_PROJECT_ID", default=""),
            ConfigField("timeout", "Timeout (seconds)", "float", env="MEMORYSYNC_TIMEOUT", default=10.0),
            ConfigField(
                "max_retries", "Retries on 429 / 5xx", "int", env="MEMORYSYNC_MAX_RETRIES", default=2
            ),
        ),
    )
)

register(
    StoreSpec(
        name="http_json",
        title="HTTP JSON service (TOML-described)",
        factory="connectors.http_json:open_store",
        description="An in-house memory service described by a small TOML file "
        "(URL, body template, dotted paths to the results); see the README.",
        fields=(
            ConfigField("config_path", "Service TOML file", "path", env="MEMLENS_HTTP_JSON_CONFIG", default=""),
            ConfigField("api_key", "API key (if the file has [auth])", "secret", env="MEMLENS_HTTP_JSON_API_KEY"),
        ),
    )
)
