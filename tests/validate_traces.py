#!/usr/bin/python3
"""Validate stepwise traces against trace/schema/ with python3-jsonschema.

  validate_traces.py TRACE.jsonl ...

Each line's "event" names its schema: trace/schema/<event>.schema.json.
This is the full JSON Schema implementation (Draft 2020-12), independent of
the subset checker inside `stepwise trace validate`. Prints one line per
violation and a closing "N passed, N failed" line; exits 1 on any failure.
"""
import json
import os
import sys

import jsonschema

SCHEMA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "trace", "schema")


def load_validators():
    validators = {}
    for name in sorted(os.listdir(SCHEMA_DIR)):
        if name.endswith(".schema.json"):
            with open(os.path.join(SCHEMA_DIR, name), encoding="utf-8") as f:
                schema = json.load(f)
            jsonschema.Draft202012Validator.check_schema(schema)
            validators[name[: -len(".schema.json")]] = jsonschema.Draft202012Validator(schema)
    return validators


def validate(path, validators):
    """Return the list of problems of one trace file."""
    problems = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    else:
        problems.append("%s: the last line does not end with a newline" % path)
    events = []
    for number, line in enumerate(lines, 1):
        try:
            event = json.loads(line)
        except ValueError as e:
            problems.append("%s:%d: not JSON: %s" % (path, number, e))
            continue
        name = event.get("event") if isinstance(event, dict) else None
        if name not in validators:
            problems.append("%s:%d: unknown event %r" % (path, number, name))
            continue
        for error in validators[name].iter_errors(event):
            problems.append("%s:%d: %s: %s" % (path, number, name, error.message))
        events.append(name)
    if not events or events[0] != "run":
        problems.append("%s: the first event is not run" % path)
    if not events or events[-1] not in ("done", "scored", "error"):
        problems.append("%s: the last event is not done, scored or error" % path)
    return problems


def main(paths):
    validators = load_validators()
    failed = 0
    for path in paths:
        problems = validate(path, validators)
        for p in problems[:20]:
            print(p)
        failed += bool(problems)
    print("trace schemas: %d passed, %d failed" % (len(paths) - failed, failed))
    return 1 if failed or not paths else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
