// Package hostile is the hostile-input suite: it replays, against the
// built handoff binary and the real services, the inputs a hostile run
// used against handoff (secrets in the environment, time flags at the ends
// of the calendar, escape sequences and bidi controls in events, oversize
// and malformed OpenLineage lines, overlapping job claims, links out of a
// watched tree, huge and forged signals, publishing without being asked,
// path traversal in --batch and in templates, links at a restore's signal
// and data file), so that none of the defects comes back, and none of what
// held gives way.
//
// The cases that need a package's internals live beside the package and
// are named in TestSuiteCasesExist, which fails when one of them is
// renamed or removed: webhook redirects, signatures and one-line outcomes
// (notify), the watcher's notification path (ingest/watch), stored text in
// every page and field in headless Chromium, hostile query parameters,
// security headers, /static/ and the read-only user (query/serve).
//
// It is a package of tests only (this file aside): it imports every room,
// which no product package may. `make test` runs it with the others.
package hostile
