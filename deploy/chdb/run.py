#!/usr/bin/env python3
"""Run SQL on a current ClickHouse embedded in-process (the PyPI package
chdb-core), for query/dash's TestCurrentClickHouse.

Usage: run.py SPEC.json > RESULT.json

SPEC is {"statements": [sql, ...], "queries": [{"name": str, "sql": str}, ...]}.
The statements (DDL, INSERTs) run in order in a fresh session; any failure
stops the run (exit 1, the statement and the error on stderr). Then each
query runs and RESULT is a list, one entry per query, of
{"name", "columns", "rows"} (every cell as text, the way Go's fmt.Sprint
prints the value the server returns) or {"name", "error"}.

The SQL comes with its parameters already in it as literals: the Go test
substitutes them (chdb has no client-side binding); production code binds.
"""
import json
import sys
import tempfile


def text(v):
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: run.py SPEC.json")
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    try:
        from chdb import session
    except ImportError as e:
        sys.exit("chdb-core is not installed (%s): run deploy/services/chdb.sh install" % e)
    with tempfile.TemporaryDirectory(prefix="handoff-chdb-") as path:
        s = session.Session(path)
        for stmt in spec["statements"]:
            try:
                s.query(stmt)
            except Exception as e:  # chdb raises its own error types
                sys.exit("statement failed on chdb: %s\n--- statement:\n%s" % (e, stmt[:2000]))
        out = []
        for q in spec["queries"]:
            try:
                res = s.query(q["sql"], "JSONCompact")
                doc = json.loads(res.bytes() if hasattr(res, "bytes") else str(res))
                out.append({"name": q["name"],
                            "columns": [m["name"] for m in doc["meta"]],
                            "types": [m["type"] for m in doc["meta"]],
                            "rows": [[text(c) for c in row] for row in doc["data"]]})
            except Exception as e:
                out.append({"name": q["name"], "error": str(e)})
        s.close()
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
