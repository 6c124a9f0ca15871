#!/usr/bin/env bash
# Checks that every relative link and #anchor in the tracked Markdown
# (README.md, docs/, deploy/) resolves (run by `make vet`): sections move
# between the README and docs/, and a moved heading breaks links to it.
# Local files only, no network.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mapfile -t files < <(git ls-files '*.md')
go run ./deploy/checklinks "${files[@]}"
