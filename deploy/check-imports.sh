#!/usr/bin/env bash
# Checks the import rules of the rooms (docs/architecture.md):
#   model imports no other room and no I/O library;
#   analyzer imports only model (and itself), and no I/O library;
#   store is the one home of ClickHouse: no other package of the product
#     imports the driver (internal/testenv and deploy/bench open connections
#     for tests and benchmarks);
#   only the ingest side writes: no package outside ingest imports
#     store/writer (tests may, to load fixtures as ingest stores them, and
#     so may store/storetest, the tests' fresh database and sink);
#   store/storetest is test support: no package imports it, only tests;
#   no two rooms import each other, directly or through a third room;
#   cmd/handoff wires: no function there is longer than 60 lines.
# Run with CHECK_ROOT=DIR to check a tree other than the repository's (the
# planted-violation test in deploy/checks does).
set -euo pipefail
cd "${CHECK_ROOT:-$(dirname "${BASH_SOURCE[0]}")/..}"
mod=$(go list -m)
fail=0
# One go list for the whole module (a call per package took seconds each
# under load): a line per package, its path then its imports.
imports=$(mktemp)
edges=$(mktemp)
trap 'rm -f "$imports" "$edges"' EXIT
go list -f '{{.ImportPath}}{{range .Imports}} {{.}}{{end}}' ./... >"$imports"
deps() { awk -v p="$1" '$1 == p { for (i = 2; i <= NF; i++) print $i }' "$imports"; }
testdeps() { go list -f '{{join .TestImports "\n"}}{{"\n"}}{{join .XTestImports "\n"}}' "$1"; }
room() { # the top-level folder of a package path inside the module
  local p=${1#"$mod"/}
  echo "${p%%/*}"
}
io='^(os|os/.*|net|net/.*|io/ioutil|database/.*|syscall|github.com/segmentio/.*|github.com/ClickHouse/.*)$'

pkgs=$(awk '{ print $1 }' "$imports")
for pkg in $pkgs; do
  from=$(room "$pkg")
  while read -r imp; do
    [ -z "$imp" ] && continue
    case "$imp" in
      "$mod"/*)
        to=$(room "$imp")
        [ "$from" != "$to" ] && echo "$from $to $pkg $imp" >>"$edges"
        ;;
    esac
    case "$from" in
      model)
        case "$imp" in "$mod"/model | "$mod"/model/*) ;; "$mod"/*)
          echo "check-imports: $pkg imports $imp: model imports no other room"; fail=1 ;; esac
        if [[ $imp =~ $io ]]; then echo "check-imports: $pkg imports $imp: model stays free of I/O"; fail=1; fi
        ;;
      analyzer)
        case "$imp" in "$mod"/model | "$mod"/model/* | "$mod"/analyzer/*) ;; "$mod"/*)
          echo "check-imports: $pkg imports $imp: analyzer imports only model"; fail=1 ;; esac
        if [[ $imp =~ $io ]]; then echo "check-imports: $pkg imports $imp: analyzer stays pure (no I/O)"; fail=1; fi
        ;;
    esac
    case "$imp" in
      github.com/ClickHouse/*)
        case "$from" in store | deploy) ;; *)
          [ "$pkg" = "$mod/internal/testenv" ] ||
            { echo "check-imports: $pkg imports $imp: ClickHouse has one home, store/"; fail=1; } ;;
        esac
        ;;
      "$mod"/store/writer)
        case "$from" in ingest | deploy) ;; *)
          [ "$pkg" = "$mod/store/storetest" ] ||
            { echo "check-imports: $pkg imports $imp: only ingest writes to ClickHouse"; fail=1; } ;;
        esac
        ;;
      "$mod"/store/storetest)
        echo "check-imports: $pkg imports $imp: store/storetest is test support, only _test.go files import it"; fail=1
        ;;
    esac
  done < <(deps "$pkg")
done

# Rooms that import each other, directly or through others: a cycle in the
# graph of rooms (cmd, deploy and the test support, internal/testenv and
# store/storetest, are edges' sources only).
cycles=$(awk '$1 != "cmd" && $1 != "deploy" && $3 !~ /internal\/testenv$/ && $3 !~ /store\/storetest$/ { print $1, $2 }' "$edges" | sort -u | python3 -c '
import sys
g = {}
for line in sys.stdin:
    a, b = line.split()
    g.setdefault(a, set()).add(b)
seen, stack, out = set(), [], []
def visit(n):
    if n in stack:
        out.append(" -> ".join(stack[stack.index(n):] + [n])); return
    if n in seen: return
    seen.add(n); stack.append(n)
    for m in sorted(g.get(n, ())): visit(m)
    stack.pop()
for n in sorted(g): visit(n)
print("\n".join(sorted(set(out))))
')
if [ -n "$cycles" ]; then
  while read -r c; do
    echo "check-imports: rooms import each other: $c"
    # up to five imports per hop, so that a hop of one import is never
    # hidden behind the many imports of the other direction
    awk -v c="$c" 'BEGIN { n = split(c, r, " -> ") } { for (i = 1; i < n; i++) if ($1 == r[i] && $2 == r[i+1]) print i, "  " $3 " imports " $4 }' "$edges" |
      sort -u | awk '++k[$1] <= 5 { sub(/^[0-9]+ /, ""); print }'
  done <<<"$cycles"
  fail=1
fi

# cmd/handoff wires: a function longer than 60 lines holds logic that
# belongs in a package of its own.
while read -r f; do
  awk -v f="$f" '
    /^func / { name = $0; start = FNR; open = 1; next }
    open && /^}/ { n = FNR - start + 1; if (n > 60) { sub(/\{$/, "", name); printf "check-imports: %s:%d: %s is %d lines: cmd/handoff wires, no function there exceeds 60 lines\n", f, start, name, n; bad = 1 } open = 0 }
    END { exit bad }' "$f" || fail=1
done < <(find cmd/handoff -name '*.go' ! -name '*_test.go')
# The reading rooms send no INSERT, DDL or mutation, not even in their
# tests (fixtures go through store/writer, as handoff ingest stores them).
if grep -nE '\.(PrepareBatch|Exec)\(|"(INSERT|CREATE|ALTER|DROP|TRUNCATE|OPTIMIZE) ' \
    $(find query judge -name '*.go'); then
  echo "check-imports: a reading room writes to ClickHouse (above): only ingest writes"; fail=1
fi
exit $fail
