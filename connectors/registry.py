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
