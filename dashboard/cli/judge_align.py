"""`memlens judge align LABELS --judge J.toml [--prompt-variant FILE ...]`: measure a
judge's prompt variants on people's labels, on a held-out part, and record the chosen
one's agreement for the judge.

    memlens judge align people.jsonl --judge umbrela.toml --prompt-variant strict.txt --send-text
    memlens judge align week --judge umbrela.toml --db store.sqlite --few-shot 4 --send-text

LABELS is a file of people's labels (label JSONL or CSV export, TREC qrels) or a
labelling session's name. Each pair needs its query and memory text: the file's
``query_text`` / ``memory_text`` (an export with text), the session's kept query
text, or ``--log`` (a retrieval log with a ``query`` column, matched by message id)
for the query and the store (``--db``, or ``--store`` and ``--config``) for the
memory, read by id. The pairs are split by turn into a tuning and a held-out part
(``--held-out``, ``--seed``); every variant (the judge's own prompt first) grades
every pair, with ``--few-shot N`` also with N examples from the tuning part
(people's corrections of the judge first). Printed per variant: the tuning kappa,
and on the held-out part kappa with its 95% interval, precision and recall per
label, and how often the judge says relevant against people. ``--rows FILE`` writes
each pair (ids only) with its part and each variant's grade and aligned mark.

The variant with the highest tuning kappa is chosen; its held-out figures are
written into the judge's record in the label database (not with ``--no-record``),
which the Label page shows beside the judge's suggestions.

Exit status: 0 when measured, 2 on unusable input (no model or no --send-text, a
prompt without {query} and {passage}, no labelled pair with text, an empty part).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from dashboard.cli.arguments import positive_int, share
from dashboard.cli.errors import CommandError, warning
from dashboard.cli.errors import note as cli_note
from dashboard.cli.store_options import add_store_options, open_store


def build_parser() -> argparse.ArgumentParser:
    from dashboard.labels.people_files import FORMATS

    parser = argparse.ArgumentParser(prog="memlens judge align", description="align a judge's prompt to people's labels")
    parser.add_argument("people", metavar="LABELS", help="a file of people's labels (JSONL, CSV, TREC qrels) or a session's name")
    parser.add_argument("--judge", required=True, metavar="CONFIG", help="the llm judge's config (TOML or JSON)")
    parser.add_argument("--prompt-variant", action="append", default=[], metavar="FILE", help="a prompt to measure beside the judge's own (repeatable); holds {query} and {passage}")
    parser.add_argument("--few-shot", type=positive_int, default=None, metavar="N", help="also run each variant with N examples from the tuning part")
    parser.add_argument("--held-out", type=share, default=0.5, metavar="SHARE", help="the share of turns held out from the choice (default 0.5)")
    parser.add_argument("--seed", type=int, default=0, help="the split's and the examples' seed (default 0)")
    parser.add_argument("--format", choices=FORMATS, default=None, help="the label file's format (default: from its name and first line)")
    parser.add_argument("--log", metavar="FILE", help="a retrieval log with a query column: the query text by message id")
    add_store_options(parser, db_help="the embedded store's SQLite file (memory text by id)")
    parser.add_argument("--rows", metavar="FILE", help="write each pair's part, grades and aligned marks here (JSONL, ids only)")
    parser.add_argument("--send-text", action="store_true", help="allow the query and memory text (and examples) to go to the configured model")
    parser.add_argument("--no-record", action="store_true", help="print the report only; leave the judge's record as it is")
    parser.add_argument("--labels", default=None, help="a SQLite file or PostgreSQL URL (default: $MEMLENS_LABELS_URL, else the data directory)")
    parser.set_defaults(command_label="judge align")
    return parser


def main(argv: list[str]) -> int:
    return run(build_parser().parse_args(argv))


def run(args: argparse.Namespace) -> int:
    from connectors.common.paths import data_dir
    from dashboard.database import AppDatabase, app_database_target
    from dashboard.judging.client import ChatClient, config_from_environ
    from dashboard.judging.judges import JudgeError, load_judge_config, read_prompt

    config = load_judge_config(args.judge)
    if config.kind != "llm":
        raise JudgeError(f"{args.judge}: only an llm judge has a prompt to align (a cross-encoder's cut-off: memlens agreement)")
    variants = _variants(config, args.prompt_variant, read_prompt)
    model = config_from_environ(dict(os.environ))
    if model is None:
        raise JudgeError("an llm judge needs a model: set MEMLENS_LLM_BASE_URL and MEMLENS_LLM_MODEL")
    if not args.send_text:
        raise JudgeError(f"aligning sends labelled query and memory text to {model.host} ({model.model}); pass --send-text to allow it")
    db = AppDatabase(args.labels or app_database_target(dict(os.environ), data_dir()))
    client = None
    try:
        pairs, note = _pairs(args, db)
        if note:
            cli_note(note)
        client = ChatClient(model, send_text=True)
        return _align(args, db, client, config, variants, pairs)
    finally:
        db.close()
        if client is not None:
            client.close()


def _variants(config: Any, files: list[str], read_prompt: Any) -> list[Any]:
    from dashboard.judging.align import Variant

    own = Variant(Path(config.prompt_file).stem if config.prompt_file else "judge's prompt", config.prompt, config.prompt_file)
    found = [own]
    for file in files:
        found.append(Variant(Path(file).stem, read_prompt(file), str(Path(file).resolve())))
    names = [v.name for v in found]
    if len(set(names)) < len(names):
        raise CommandError("two prompt variants share a file name; name them apart")
    return found


def _pairs(args: argparse.Namespace, db: Any) -> tuple[list[Any], str]:
    """The labelled pairs with their texts and parts, and a note on what was left out."""
    from dashboard.judging.align import AlignPair, part_of, people_verdicts
    from dashboard.labels.people_files import read_people_labels

    queries: dict[str, str] = {}
    session = db.sessions.get(args.people)
    if session is not None:
        people = db.sessions.labels(session.name)
        queries = {i.message_id: i.query_text for i in db.sessions.items(session.name) if i.query_text}
    elif Path(args.people).exists():
        found = read_people_labels(args.people, fmt=args.format, keep_text=True)
        for issue in found.issues[:20]:
            warning(str(issue))
        people = found.labels
    else:
        raise CommandError(f"{args.people!r} is neither a file nor a session")
    texts = {(lab.message_id, lab.memory_id): lab.memory_text for lab in people if lab.memory_text}
    queries.update({lab.message_id: lab.query_text for lab in people if lab.query_text})
    if args.log:
        from dashboard.logs.retrieval_log import read_log

        rows = read_log(args.log, include_query=True).rows
        if "query" in rows.columns:
            for message_id, query in zip(rows["message_id"], rows["query"], strict=True):
                if isinstance(query, str) and query:
                    queries.setdefault(str(message_id), query)
    verdicts, split = people_verdicts(people)
    store = open_store(args)[0] if any(key not in texts for key in verdicts) and (args.db or args.config) else None
    pairs, no_text = [], 0
    try:
        for (message_id, memory_id), relevant in verdicts.items():
            text = texts.get((message_id, memory_id))
            if text is None and store is not None:
                memory = store.get(memory_id)
                text = memory.text if memory is not None else None
            query = queries.get(message_id)
            if not text or not query:
                no_text += 1
                continue
            pairs.append(AlignPair(message_id, memory_id, query, text, relevant, part_of(message_id, args.seed, args.held_out)))
    finally:
        if store is not None:
            store.close()
    if not pairs:
        raise CommandError(
            f"{args.people}: no labelled pair has both query and memory text: give an export with text, "
            "a session that kept its query text, --log for queries and --db (or --store) for memories"
        )
    note = ", ".join(part for part in (
        f"{split} pair(s) people split on left out" if split else "",
        f"{no_text} pair(s) without query or memory text left out" if no_text else "",
    ) if part)
    return pairs, note


def _align(args: argparse.Namespace, db: Any, client: Any, config: Any, variants: list[Any], pairs: list[Any]) -> int:
    from dashboard.database.judge_labels import judge_source
    from dashboard.judging.align import TUNING, choose, few_shot, run_variant
    from dashboard.judging.judge_agreement import to_record
    from dashboard.judging.judges import LlmJudge

    source = judge_source(config.name, client.config.model)
    tuning = sum(1 for p in pairs if p.part == TUNING)
    held = len(pairs) - tuning
    if not tuning or not held:
        raise CommandError(f"the split left the {'tuning' if not tuning else 'held-out'} part empty "
                           f"({len(pairs)} pair(s)); label more turns or change --held-out")
    if args.few_shot:
        verdicts = {(j.message_id, j.memory_id): j.relevant for j in db.judge_labels.find(source=source)}
        corrections = {(p.message_id, p.memory_id) for p in pairs if (p.message_id, p.memory_id) in verdicts
                       and verdicts[(p.message_id, p.memory_id)] != p.relevant}
        examples = few_shot(pairs, args.few_shot, corrections, args.seed)
        variants = [*variants, *(v.with_few_shot(examples) for v in variants)]
    print(f"sending query and memory text to {client.config.host} ({client.config.model})", file=sys.stderr)
    print(f"{source}: aligning on {len(pairs)} pair(s) people labelled: {tuning} tuning, {held} held-out "
          f"(split by turn, seed {args.seed})")
    judges: dict[str, LlmJudge] = {}

    def grade(prompt: str, pair: Any) -> Any:
        judge = judges.setdefault(prompt, LlmJudge(client, config.name, prompt))
        return judge.grade(pair.query, pair.text)

    results = []
    for variant in variants:
        result = run_variant(variant, grade, pairs, limit=client.config.concurrency, source=source, seed=args.seed)
        results.append(result)
        _print_variant(result)
    chosen = choose(results)
    print(f"chosen: {chosen.variant.name} (the highest tuning kappa; the held-out figures above are its estimate)")
    if chosen.variant.prompt_file and chosen.variant.prompt_file != config.prompt_file:
        print(f'to use it: prompt_file = "{chosen.variant.prompt_file}" in {args.judge}')
    if chosen.variant.examples:
        print("its examples are not in a prompt file: write the prompt with them to use it (--rows lists the pairs)")
    if args.rows:
        _write_rows(Path(args.rows), results)
        print(f"rows: {args.rows}")
    if not args.no_record:
        db.judge_labels.save_record(source, to_record(
            chosen.held_out, variant=chosen.variant.name, prompt_file=chosen.variant.prompt_file,
            examples=len(chosen.variant.examples), tuning_pairs=tuning, held_out_pairs=held, seed=args.seed,
            measured_by="memlens judge align",
        ))
        print(f"recorded for {source}: held-out kappa of {chosen.variant.name}")
    return 0


def _print_variant(result: Any) -> None:
    held = result.held_out

    def kappa(value: float | None) -> str:
        return "undefined" if value is None or value != value else f"{value:.3f}"

    interval = f" (95% interval {held.kappa_interval[0]:.3f} to {held.kappa_interval[1]:.3f})" if held.kappa_interval else ""
    print(f"variant {result.variant.name}: tuning kappa {kappa(result.tuning.kappa)} over {result.tuning.count}; "
          f"held-out kappa {kappa(held.kappa)}{interval} over {held.count}" + (f"; {result.failed} pair(s) failed" if result.failed else ""))
    for line in held.label_lines():
        print(f"  held-out {line}")
    aligned = sum(1 for r in result.rows if r.aligned)
    print(f"  rows aligned with people: {aligned} of {len(result.rows)}")


def _write_rows(path: Path, results: list[Any]) -> None:
    with path.open("w", encoding="utf-8") as out:
        for index, row in enumerate(results[0].rows):
            record: dict[str, Any] = {
                "message_id": row.pair.message_id, "memory_id": row.pair.memory_id, "part": row.pair.part,
                "people": "relevant" if row.pair.relevant else "not_relevant",
            }
            for result in results:
                mine = result.rows[index]
                record[result.variant.name] = {"grade": mine.grade, "aligned": mine.aligned}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
