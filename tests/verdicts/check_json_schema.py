#!/usr/bin/env python3
"""Validates `gpuscope analyze --json` output against docs/analysis.schema.json.

Usage: check_json_schema.py SCHEMA GPUSCOPE [--requests NAME] TRACE...
Each trace is analyzed (with --requests NAME when given); every document
must validate (exit 1 otherwise), also the one `analyze` prints with exit 2
for an input that is no trace."""
import json
import subprocess
import sys

import jsonschema


def main() -> int:
    schema_path, gpuscope, traces = sys.argv[1], sys.argv[2], sys.argv[3:]
    extra = []
    if traces[:1] == ["--requests"]:
        extra, traces = traces[:2], traces[2:]
    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    failures = 0
    for trace in traces:
        out = subprocess.run([gpuscope, "analyze", "--json", trace, *extra], capture_output=True, text=True, check=False)
        if out.returncode not in (0, 2):
            raise subprocess.CalledProcessError(out.returncode, out.args, out.stdout, out.stderr)
        errors = list(validator.iter_errors(json.loads(out.stdout)))
        for e in errors:
            print(f"{trace}: {'/'.join(map(str, e.absolute_path))}: {e.message}")
        failures += bool(errors)
    print(f"check_json_schema: {len(traces) - failures}/{len(traces)} documents valid")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
