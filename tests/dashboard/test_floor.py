import math

import pytest

from connectors.base import Hit
from dashboard.floor import DEFAULT_FLOOR, NO_MEMORY_TEXT, apply_floor, default_floor, prompt_block


def hit(memory_id: str, score: float | None, rank: int = 1) -> Hit:
    return Hit(memory_id=memory_id, rank=rank, text=f"text of {memory_id}", score=score)


@pytest.mark.parametrize(
    "scores, floor, kept, dropped",
    [
        ([], 0.3, [], []),
        ([0.9, 0.5, 0.1], 0.3, ["m0", "m1"], ["m2"]),
        ([0.2, 0.1], 0.3, [], ["m0", "m1"]),  # everything dropped
        ([0.3, 0.29999], 0.3, ["m0"], ["m1"]),  # a tie at the floor is kept
        ([None, 0.5], 0.0, ["m1"], ["m0"]),  # no score: dropped even at floor 0
        ([math.nan, 0.5], 0.0, ["m1"], ["m0"]),
        ([0.5, 0.4], 0.0, ["m0", "m1"], []),
        ([0.5, 0.4], 1.0, [], ["m0", "m1"]),
        ([-0.2], 0.0, [], ["m0"]),  # a negative similarity never passes a floor of 0
    ],
)
def test_apply_floor(scores, floor, kept, dropped):
    hits = [hit(f"m{i}", s, i + 1) for i, s in enumerate(scores)]
    k, d = apply_floor(hits, floor)
    assert [h.memory_id for h in k] == kept
    assert [h.memory_id for h in d] == dropped


def test_apply_floor_keeps_the_store_order():
    hits = [hit("a", 0.2, 1), hit("b", 0.9, 2), hit("c", 0.5, 3)]
    kept, _ = apply_floor(hits, 0.3)
    assert [h.memory_id for h in kept] == ["b", "c"]


def test_nothing_kept_gives_the_no_memory_text_and_instruction():
    block = prompt_block([], [hit("a", 0.1)], "Relevant memories:\n- text of a")
    assert block.source == "no_memory"
    assert block.text == NO_MEMORY_TEXT
    assert "No stored memory is relevant to this message." in block.text
    assert "do not guess" in block.text.lower()


def test_nothing_dropped_uses_the_store_context_block():
    block = prompt_block([hit("a", 0.9)], [], "STORE CONTEXT")
    assert (block.source, block.text) == ("store_context", "STORE CONTEXT")


def test_something_dropped_builds_the_block_from_kept_only():
    # The store's context lists every returned memory, the dropped one included.
    context = "Relevant memories:\n- text of a\n- text of b"
    block = prompt_block([hit("a", 0.9)], [hit("b", 0.1)], context)
    assert block.source == "kept_memories"
    assert "text of a" in block.text
    assert "text of b" not in block.text


def test_no_context_and_nothing_dropped_lists_kept():
    block = prompt_block([hit("a", 0.9), hit("b", 0.8)], [], None)
    assert block.source == "kept_memories"
    assert block.text.splitlines()[1:] == ["- text of a", "- text of b"]


@pytest.mark.parametrize(
    "env, expected",
    [
        ({}, DEFAULT_FLOOR),
        ({"MEMORY_SCORE_FLOOR": "0.31"}, 0.31),
        ({"MEMORY_SCORE_FLOOR": " "}, DEFAULT_FLOOR),
        ({"MEMORY_SCORE_FLOOR": "abc"}, DEFAULT_FLOOR),
        ({"MEMORY_SCORE_FLOOR": "1.5"}, DEFAULT_FLOOR),
        ({"MEMORY_SCORE_FLOOR": "0"}, 0.0),
    ],
)
def test_default_floor_from_environment(env, expected):
    assert default_floor(env) == expected
