"""`memlens write-audit`: a short conversation replayed into real Mem0 stores (local
Qdrant, the packaged MiniLM) whose LLM is a scripted OpenAI-compatible server on a
loopback socket. Its extraction answers as Mem0's default prompts do: ``{"facts":
[]}`` for a general statement ("There are branches in trees."), one fact for a
personal one, and the same fact for "I like cheese pizza" and "I love cheese pizza"
(so Mem0 keeps one of the two). Given custom instructions that ask for every
statement, it extracts general statements too. Three configs side by side: the
default prompts, the permissive custom prompt, and ``infer: false``."""

from __future__ import annotations

import json
import os
import re

import pytest
import yaml
from chat_model_server import ChatModelServer, Reply

from connectors.embedding import model_loader as embedding
from dashboard.cli.main import main
from dashboard.evaluation.write_audit import read_conversations

PERMISSIVE = "Keep every statement the user makes, general facts included."
FACTS = {
    "I like cheese pizza": "Likes cheese pizza",
    "I love cheese pizza": "Likes cheese pizza",  # Mem0 counts the two as one fact
    "I live in Lisbon": "Lives in Lisbon",
    "There are branches in trees.": None,  # not personal: the default prompt extracts nothing
    "Water boils at 100 degrees.": None,
}
CONVERSATION = [
    {"message_id": "m1", "user_id": "sam", "content": "I like cheese pizza", "timestamp": "2026-05-01T10:00:00Z"},
    {"message_id": "m2", "user_id": "sam", "content": "There are branches in trees.", "timestamp": "2026-05-01T10:01:00Z"},
    {"message_id": "m3", "user_id": "sam", "content": "I love cheese pizza", "timestamp": "2026-05-01T10:02:00Z"},
    {"message_id": "m4", "user_id": "sam", "content": "I live in Lisbon", "timestamp": "2026-05-01T10:03:00Z"},
    {"message_id": "m5", "user_id": "sam", "content": "Water boils at 100 degrees.", "role": "user"},
]
JUDGED = [
    {"message_id": "q1", "user_id": "sam", "query": "Where does the user live?", "relevant": ["m4"]},
    {"message_id": "q2", "user_id": "sam", "query": "What grows on trees?", "relevant": ["m2"]},
    {"message_id": "q3", "user_id": "sam", "query": "Which pizza does the user love?", "relevant": ["m3"]},
    {"message_id": "q4", "user_id": "sam", "query": "What is the capital of Mars?", "relevant": []},
]


def extraction(body) -> Reply:
    prompt = body["messages"][-1]["content"]
    new = re.search(r"## New Messages\n(.*?)(\n## |\Z)", prompt, re.S).group(1)
    text = new.split(":", 1)[1].strip()
    fact = FACTS[text]
    if fact is None and PERMISSIVE in prompt:
        fact = text
    return Reply(content=json.dumps({"memory": [{"text": fact}]} if fact else {"facts": []}))


@pytest.fixture
def world(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLENS_DATA_DIR", str(tmp_path / "data"))
    os.environ.setdefault("MEM0_DIR", str(tmp_path / "mem0-dir"))  # read when mem0 is first imported
    server = ChatModelServer(extraction).start()
    team_store = tmp_path / "team-qdrant"

    def config(name: str, **extra) -> str:
        path = tmp_path / name
        path.write_text(yaml.safe_dump({
            "vector_store": {"provider": "qdrant", "config": {"collection_name": "team", "path": str(team_store)}},
            "embedder": {"provider": "huggingface", "config": {"model": embedding.packaged_model_path()}},
            "llm": {"provider": "openai", "config": {"model": "scripted", "openai_base_url": server.url + "/v1",
                                                     "api_key": "sk-test-not-printed-7f3a"}},
            **extra,
        }))
        return str(path)

    conversations = tmp_path / "chats.jsonl"
    conversations.write_text("".join(json.dumps(m) + "\n" for m in CONVERSATION))
    judged = tmp_path / "judged.jsonl"
    judged.write_text("".join(json.dumps(q) + "\n" for q in JUDGED))
    yield {"server": server, "config": config, "conversations": conversations, "judged": judged,
           "team_store": team_store}
    server.stop()


def test_default_prompts_vs_a_permissive_prompt_vs_infer_false_side_by_side(world, capsys):
    default = world["config"]("default.yaml")
    permissive = world["config"]("permissive.yaml", custom_instructions=PERMISSIVE)
    raw = world["config"]("raw.yaml", infer=False)
    code = main(["write-audit", str(world["conversations"]), "--store", "mem0", "--config", default,
                 "--compare", permissive, "--compare", raw, "--judged", str(world["judged"]), "--format", "json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads(captured.out)
    by_name = {c["name"]: c for c in report["configs"]}
    assert list(by_name) == ["default.yaml", "permissive.yaml", "raw.yaml"]
    d, p, r = by_name["default.yaml"], by_name["permissive.yaml"], by_name["raw.yaml"]
    assert (d["infer"], p["infer"], r["infer"]) == (True, True, False)
    # Default prompts: the general statements give {"facts": []} and nothing is stored;
    # "I love cheese pizza" is the fact already kept, so it adds nothing either.
    assert d["produced_nothing"] == ["m2", "m3", "m5"]
    assert d["counts"] == {"messages": 5, "produced_nothing": 3, "ADD": 2, "UPDATE": 0, "DELETE": 0, "NONE": 0,
                           "memories": 2}
    assert p["produced_nothing"] == ["m3"] and p["counts"]["ADD"] == 4
    assert r["produced_nothing"] == [] and r["counts"]["ADD"] == 5 and r["counts"]["memories"] == 5
    # The events per message name the memory made, and no text unless asked.
    events = {m["message_id"]: m["events"] for m in d["messages"]}
    assert [e["event"] for e in events["m1"]] == ["ADD"] and events["m2"] == []
    assert set(events["m1"][0]) == {"event", "memory_id"}
    # Storage recall over the evidence messages m4, m2, m3: m3 left no memory of its
    # own in the inferring configs, but "Likes cheese pizza" (from m1) is its neighbour.
    assert d["storage_recall"] == {"share": pytest.approx(2 / 3), "evidence": 3, "by_provenance": 1,
                                   "by_neighbour": 1, "missing_ids": []}
    assert p["storage_recall"]["share"] == 1.0 and p["storage_recall"]["by_provenance"] == 2
    assert r["storage_recall"] == {"share": 1.0, "evidence": 3, "by_provenance": 3, "by_neighbour": 0, "missing_ids": []}
    # The LLM was asked once per message by each inferring config, never with infer: false;
    # the permissive config's requests carried its instructions.
    prompts = [body.body["messages"][-1]["content"] for body in world["server"].received]
    assert len(prompts) == 10 and sum(PERMISSIVE in prompt for prompt in prompts) == 5
    # The team's store named in the configs was never opened or written.
    assert not world["team_store"].exists()
    assert "sk-test-not-printed-7f3a" not in captured.out + captured.err


def test_the_table_shows_the_configs_side_by_side_and_text_only_when_asked(world, capsys):
    default = world["config"]("default.yaml")
    raw = world["config"]("raw.yaml", infer=False)
    assert main(["write-audit", str(world["conversations"]), "--store", "mem0", "--config", default,
                 "--compare", raw]) == 0
    table = capsys.readouterr().out
    lines = table.splitlines()
    assert lines[0].split() == ["default.yaml", "raw.yaml"]
    assert "produced_nothing 3 0" in " ".join(" ".join(line.split()) for line in lines)
    assert any(line.split() == ["m2", "-", "ADD"] for line in lines)
    assert "default.yaml: 3 message(s) produced nothing: m2 m3 m5" in lines
    assert "cheese" not in table  # ids, events and counts only
    assert main(["write-audit", str(world["conversations"]), "--store", "mem0", "--config", default,
                 "--include-text"]) == 0
    with_text = capsys.readouterr().out
    assert re.search(r"^    default\.yaml ADD \S+: Likes cheese pizza$", with_text, re.M)
    assert re.search(r"^    default\.yaml ADD \S+: Lives in Lisbon$", with_text, re.M)


def test_bad_lines_are_named_and_an_unusable_file_exits_2(tmp_path, capsys):
    path = tmp_path / "chats.jsonl"
    path.write_text(
        json.dumps({"message_id": "m1", "user_id": "sam", "content": "hi"}) + "\n"
        + json.dumps({"message_id": "m2", "content": "no user"}) + "\n"
        + json.dumps({"message_id": "m3", "user_id": "sam", "content": "x", "timestamp": "last tuesday"}) + "\n"
        + json.dumps({"message_id": "m1", "user_id": "sam", "content": "again"}) + "\n"
        + "{not json\n"
    )
    messages, issues = read_conversations(path)
    assert [m.message_id for m in messages] == ["m1"]
    assert [(i.line, i.field) for i in issues] == [(2, "user_id"), (3, "timestamp"), (4, "message_id"), (5, "(line)")]
    assert main(["write-audit", str(tmp_path), "--store", "mem0", "--config", "x.yaml"]) == 2
    assert "not a regular file" in capsys.readouterr().err


# ------------------------------------------------------------------ hostile model and config (issue 52)

LEAKED_KEY = "sk-fake-EMBED-KEY-777"


def _echoing_401(body) -> Reply:
    # an OpenAI-compatible server that quotes the key it was sent, as OpenAI's own 401 does
    return Reply(status=401, body={"error": {"message": f"Incorrect API key provided: {LEAKED_KEY}", "type": "invalid_request_error"}})


@pytest.mark.parametrize("key_from", ["config", "OPENAI_API_KEY"])
def test_a_401_that_echoes_the_model_key_is_one_line_without_the_key(key_from, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MEMLENS_DATA_DIR", str(tmp_path / "data"))
    os.environ.setdefault("MEM0_DIR", str(tmp_path / "mem0-dir"))
    llm = {"model": "scripted"}
    if key_from == "config":
        llm["api_key"] = LEAKED_KEY
    else:
        monkeypatch.setenv("OPENAI_API_KEY", LEAKED_KEY)
    with ChatModelServer(_echoing_401) as server:
        llm["openai_base_url"] = server.url + "/v1"
        config = tmp_path / "mem0.yaml"
        config.write_text(yaml.safe_dump({
            "vector_store": {"provider": "qdrant", "config": {"collection_name": "team", "path": str(tmp_path / "team")}},
            "embedder": {"provider": "huggingface", "config": {"model": embedding.packaged_model_path()}},
            "llm": {"provider": "openai", "config": llm},
        }))
        conversations = tmp_path / "chats.jsonl"
        conversations.write_text(json.dumps(CONVERSATION[0]) + "\n")
        code = main(["write-audit", str(conversations), "--store", "mem0", "--config", str(config)])
        sent = [{k.lower(): v for k, v in r.headers.items()}.get("authorization", "") for r in server.received]
    captured = capsys.readouterr()
    assert code == 2, captured.err
    assert sent == [f"Bearer {LEAKED_KEY}"]  # one request: the bounded client makes no retries
    assert "401" in captured.err and "Incorrect API key provided: ***" in captured.err, captured.err
    assert LEAKED_KEY not in captured.out + captured.err and LEAKED_KEY[::-1] not in captured.err
    assert "Traceback" not in captured.err


RECURSIVE = "vector_store: &a\n  provider: qdrant\n  config: {path: /tmp/x}\n  again: *a\nloop: &b [*b]\n"
LAUGHS = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n" for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
)


@pytest.mark.parametrize("case", ["recursive alias", "billion laughs"])
def test_a_config_with_yaml_aliases_is_refused_in_one_line(case, tmp_path, capsys):
    config = tmp_path / "mem0.yaml"
    config.write_text(RECURSIVE if case == "recursive alias" else LAUGHS)
    conversations = tmp_path / "chats.jsonl"
    conversations.write_text(json.dumps(CONVERSATION[0]) + "\n")
    code = main(["write-audit", str(conversations), "--store", "mem0", "--config", str(config)])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{config}, line " in err and "a YAML alias (*" in err and len(err.splitlines()) == 1, err


def test_the_app_mem0_store_reads_its_config_through_the_same_loader(tmp_path):
    from connectors.base import InvalidRequest
    from connectors.mem0.library import load_config

    config = tmp_path / "mem0.yml"
    config.write_text(LAUGHS)
    with pytest.raises(InvalidRequest, match=r"line 2: a YAML alias \(\*a\)"):
        load_config(config)
