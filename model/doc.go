// Package model holds the vocabulary every room of handoff shares: delivery
// events and their wire format (handoff/v1), batch identity, business dates,
// and the boundary ladder that a delivery climbs from "produced" to
// "consumed".
//
// The package is pure: it does no I/O and imports no other room, so the
// analyzer, the ingester and the query side can all depend on it.
package model
