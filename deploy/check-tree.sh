#!/usr/bin/env bash
# Checks what the repository tracks and declares (run by `make vet`):
#   no tracked build output: no executable binary (ELF, Mach-O, PE) and no
#   file over 1 MiB, wherever `go build` put it;
#   go.mod and go.sum are tidy (`go mod tidy -diff` prints nothing);
#   every tracked Go file is gofmt'ed;
#   every fuzz target is run by `make fuzz`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
limit=$((1024 * 1024))
fail=0
while IFS= read -r -d '' f; do
  [[ -f "$f" ]] || continue # deleted in the work tree, not yet committed
  size=$(stat -c %s "$f")
  if ((size > limit)); then
    echo "check-tree: $f is tracked and $size bytes (over 1 MiB): build outputs and data sets stay out of git" >&2
    fail=1
    continue
  fi
  magic=$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')
  case "$magic" in
    7f454c46 | cffaedfe | cefaedfe | feedface | feedfacf | 4d5a*)
      echo "check-tree: $f is tracked and is an executable binary: remove it (git rm --cached) and ignore it" >&2
      fail=1 ;;
  esac
done < <(git ls-files -z)
if ! out=$(go mod tidy -diff 2>&1); then
  echo "check-tree: go.mod/go.sum are not tidy; run 'go mod tidy':" >&2
  echo "$out" >&2
  fail=1
fi
if unformatted=$(gofmt -l $(git ls-files '*.go')) && [ -n "$unformatted" ]; then
  echo "check-tree: not gofmt'ed (run gofmt -w on them):" >&2
  echo "$unformatted" >&2
  fail=1
fi
while IFS=: read -r file name; do
  pkg="./$(dirname "$file")/"
  if ! grep -qF -- "-fuzz '^$name\$\$' -fuzztime \$(FUZZTIME) $pkg" Makefile; then
    echo "check-tree: $file: $name is not run by make fuzz: add it to the fuzz target of the Makefile" >&2
    fail=1
  fi
done < <(git ls-files -z '*_test.go' | xargs -0 grep -o '^func Fuzz[A-Za-z0-9_]*' | sed 's/func //')
exit $fail
