// Package checks proves the checks `make vet` runs (deploy/check-*.sh): its
// tests copy the tracked tree, plant one violation in each copy, and
// require the script to fail naming it, so that a rule which silently stops
// matching fails `go test` instead of letting the violation through.
package checks
