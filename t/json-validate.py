#!/usr/bin/env python3
"""json-validate.py SCHEMA FILE: check one --json output against its schema
(formats/json/*.schema.json) with python3-jsonschema; say where it fails."""
import json
import sys

import jsonschema


def main():
    schema = json.load(open(sys.argv[1]))
    doc = json.load(open(sys.argv[2]))
    jsonschema.Draft202012Validator.check_schema(schema)
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=str)
    for e in errors:
        where = "/".join(str(p) for p in e.absolute_path)
        print("%s: %s: %s" % (sys.argv[2], where or "(top)", e.message), file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
