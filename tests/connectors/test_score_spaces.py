"""The one table of score rules (connectors/common/score_spaces.py): the rule it gives a
store kind and setting is the one that store's connector normalises with, for every
setting, so a team's raw hits converted by the agent-side API score as the connector's."""

from __future__ import annotations

import pytest

from connectors.base import InvalidRequest
from connectors.common.score_spaces import AS_SENT, DISTANCE_RULES, ScoreSpace, space_for
from connectors.vector import chroma, lancedb_store, pgvector, qdrant

NORMALISE = {"chroma": chroma.normalise, "pgvector": pgvector.normalise, "lancedb": lancedb_store.normalise, "qdrant": qdrant.normalise}
CASES = [(kind, setting) for kind in NORMALISE for setting in DISTANCE_RULES[kind]]


@pytest.mark.parametrize("kind,setting", CASES)
@pytest.mark.parametrize("raw", [0.0, 0.37, 0.8, 1.3, 2.0])
def test_the_table_converts_as_the_connector_does(kind, setting, raw):
    assert space_for(kind, setting).convert(raw) == pytest.approx(NORMALISE[kind](setting, raw))


def test_similarity_stores_keep_the_score_and_unknown_names_are_refused():
    assert space_for("embedded") == ScoreSpace("embedded", AS_SENT)
    assert space_for("chroma") == ScoreSpace("chroma", "1 - d/2", "l2")  # Chroma's default space
    with pytest.raises(InvalidRequest, match="name its distance setting"):
        space_for("pgvector")
    with pytest.raises(InvalidRequest, match="unknown distance setting 'l1'"):
        space_for("qdrant", "l1")
    with pytest.raises(InvalidRequest, match="unknown store kind 'faiss'"):
        space_for("faiss")
