#!/usr/bin/env python3
"""json-schema-check.py - check a JSON document against a JSON Schema.

  json-schema-check.py SCHEMA.json DOCUMENT.json

Uses the jsonschema package when it is installed; otherwise checks the
subset of JSON Schema (draft 2020-12) that bcgtool's schemas use: type,
properties, required, additionalProperties (false), items, enum, minimum,
const and $ref to "#/$defs/NAME". Exits 0, or 1 with the first failure.
"""
import json
import sys

TYPES = {
    "object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
}


def is_type(v, t):
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    return isinstance(v, TYPES[t])


def check(root, schema, v, path):
    if "$ref" in schema:
        name = schema["$ref"].split("/")[-1]
        return check(root, root["$defs"][name], v, path)
    t = schema.get("type")
    if t is not None:
        ts = t if isinstance(t, list) else [t]
        if not any(is_type(v, x) for x in ts):
            return "%s: %r is not of type %s" % (path, v, t)
    if "const" in schema and v != schema["const"]:
        return "%s: %r is not %r" % (path, v, schema["const"])
    if "enum" in schema and v not in schema["enum"]:
        return "%s: %r is not one of %r" % (path, v, schema["enum"])
    if "minimum" in schema and is_type(v, "number") and v < schema["minimum"]:
        return "%s: %r is below %r" % (path, v, schema["minimum"])
    if isinstance(v, dict):
        for k in schema.get("required", []):
            if k not in v:
                return "%s: no %r" % (path, k)
        props = schema.get("properties", {})
        for k, x in v.items():
            if k in props:
                err = check(root, props[k], x, path + "." + k)
                if err:
                    return err
            elif schema.get("additionalProperties") is False:
                return "%s: %r is not allowed" % (path, k)
    if isinstance(v, list) and "items" in schema:
        for i, x in enumerate(v):
            err = check(root, schema["items"], x, "%s[%d]" % (path, i))
            if err:
                return err
    return None


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    schema = json.load(open(argv[1]))
    doc = json.load(open(argv[2]))
    try:
        import jsonschema
        jsonschema.validate(doc, schema)
        return
    except ImportError:
        pass
    except Exception as e:  # jsonschema.ValidationError
        print("json-schema-check: %s" % e)
        sys.exit(1)
    err = check(schema, schema, doc, "$")
    if err:
        print("json-schema-check: " + err)
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv)
