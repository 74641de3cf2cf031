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

register(
    StoreSpec(
        name="mem0",
        title="Mem0 (open-source library)",
        factory="connectors.mem0:open_library",
        description="A mem0ai Memory opened from your Mem0 config file, searched with threshold 0 "
        "and explain=True; the page says which threshold Mem0 itself would apply.",
        fields=(
            ConfigField(
                "config",
                "Mem0 config file (YAML or JSON)",
                "path",
                env="MEMLENS_MEM0_CONFIG",
                default="",
                help="The dict you pass to Memory.from_config, saved as a file.",
            ),
            ConfigField(
                "app_threshold",
                "Threshold your app passes (empty: Mem0's default)",
                "text",
                env="MEMLENS_MEM0_THRESHOLD",
                default="",
            ),
        ),
    )
)

register(
    StoreSpec(
        name="mem0_platform",
        title="Mem0 Platform (hosted, REST)",
        factory="connectors.mem0:open_platform",
        description="The Mem0 Platform v3 search API; each hit's score_breakdown is shown.",
        fields=(
            ConfigField("api_key", "API key", "secret", env="MEM0_API_KEY"),
            ConfigField("base_url", "Base URL", "text", env="MEMLENS_MEM0_URL", default="https://api.mem0.ai"),
            ConfigField("timeout", "Timeout (seconds)", "float", default=10.0),
            ConfigField("rerank", "Rerank", "bool", default=False),
            ConfigField(
                "app_threshold",
                "Threshold your app passes (empty: the v3 default, 0.1)",
                "text",
                env="MEMLENS_MEM0_THRESHOLD",
                default="",
            ),
        ),
    )
)

register(
    StoreSpec(
        name="qdrant",
        title="Qdrant collection",
        factory="connectors.qdrant:open_store",
        local_model=True,
        description="A Qdrant collection (local folder or server URL) queried with the model it was "
        "built with; distances are turned into higher-is-better scores, the raw value kept.",
        fields=(
            ConfigField("path", "Local folder (or leave empty and give a URL)", "path", env="MEMLENS_QDRANT_PATH", default=""),
            ConfigField("url", "Server URL", "text", env="MEMLENS_QDRANT_URL", default=""),
            ConfigField("api_key", "API key (server only)", "secret", env="QDRANT_API_KEY"),
            ConfigField("collection", "Collection", "text", env="MEMLENS_QDRANT_COLLECTION", default="memories"),
            ConfigField("vector_name", "Named vector (if the collection has several)", "text", default=""),
            ConfigField("id_field", "Payload key of the memory id (empty: point id)", "text", env="MEMLENS_QDRANT_ID_FIELD", default=""),
            ConfigField("text_field", "Payload key of the text", "text", default="text"),
            ConfigField("created_at_field", "Payload key of created_at", "text", default="created_at"),
            ConfigField("user_field", "Payload key of the user id", "text", default="user_id"),
            ConfigField("model", "Embedding model (empty: packaged all-MiniLM-L6-v2)", "text", default=""),
        ),
    )
)

register(
    StoreSpec(
        name="chroma",
        title="Chroma collection",
        factory="connectors.chroma:open_store",
        local_model=True,
        description="A Chroma collection (persistent folder or server URL) queried with the model it "
        "was built with; l2 / cosine / ip distances become higher-is-better scores, the raw value kept.",
        fields=(
            ConfigField("path", "Persistent folder (or leave empty and give a URL)", "path", env="MEMLENS_CHROMA_PATH", default=""),
            ConfigField("url", "Server URL", "text", env="MEMLENS_CHROMA_URL", default=""),
            ConfigField("collection", "Collection", "text", env="MEMLENS_CHROMA_COLLECTION", default="memories"),
            ConfigField("id_field", "Metadata key of the memory id (empty: Chroma id)", "text", default=""),
            ConfigField("text_field", "Metadata key of the text (document: the document)", "text", default="document"),
            ConfigField("created_at_field", "Metadata key of created_at", "text", default="created_at"),
            ConfigField("user_field", "Metadata key of the user id", "text", default="user_id"),
            ConfigField("model", "Embedding model (empty: packaged all-MiniLM-L6-v2)", "text", default=""),
        ),
    )
)
