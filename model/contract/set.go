package contract

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Set holds the contracts of many pipelines. It is immutable once built, so
// any number of goroutines may read it at once.
type Set struct {
	byPipeline map[string]*Contract
	pipelines  []string // sorted
	// downstreams lists, per pipeline, the pipelines that wait for it.
	downstreams map[string][]string
	// defaults holds the Default contract For has made of each pipeline
	// without one (string to *Contract), at most maxSharedDefaults of
	// them (ndefaults counts them): a page of every pipeline asks For
	// each of thousands of pipelines several times, and a fresh Default
	// each time was a twentieth of its CPU. A reload builds a new Set, so
	// the defaults go with the contracts they stood beside.
	defaults  sync.Map
	ndefaults atomic.Int64
}

// maxSharedDefaults bounds how many pipelines' Default contracts a Set
// keeps: the pipelines asked for may come from requests (a page's URL),
// so past it For makes a fresh Default again rather than grow.
const maxSharedDefaults = 1 << 16

// NewSet returns a set of the given contracts. Two contracts for one
// pipeline are an error naming both sources.
func NewSet(cs ...*Contract) (*Set, error) {
	s := &Set{byPipeline: make(map[string]*Contract, len(cs))}
	for _, c := range cs {
		if c == nil {
			return nil, fmt.Errorf("contract set: nil contract")
		}
		if c.Pipeline == "" {
			return nil, fmt.Errorf("contract set: %s: no pipeline", c.Name())
		}
		if prev, ok := s.byPipeline[c.Pipeline]; ok {
			return nil, fmt.Errorf("%s: pipeline %q already has a contract in %s", c.Name(), c.Pipeline, prev.Name())
		}
		s.byPipeline[c.Pipeline] = c
		s.pipelines = append(s.pipelines, c.Pipeline)
	}
	sort.Strings(s.pipelines)
	if err := linkUpstreams(s); err != nil {
		return nil, err
	}
	return s, nil
}

// For returns the contract of pipeline, or Default(pipeline) when the set
// has none. A nil Set has none. The returned contract is shared (the
// default one too, between calls on one Set): do not modify it.
func (s *Set) For(pipeline string) *Contract {
	if s == nil {
		return Default(pipeline)
	}
	if c, ok := s.byPipeline[pipeline]; ok {
		return c
	}
	if c, ok := s.defaults.Load(pipeline); ok {
		return c.(*Contract)
	}
	if s.ndefaults.Load() >= maxSharedDefaults {
		return Default(pipeline)
	}
	// A copy of the name: the one given may point into a larger buffer
	// (a decoded row) that the set would otherwise keep alive.
	c := Default(strings.Clone(pipeline))
	if prev, loaded := s.defaults.LoadOrStore(pipeline, c); loaded {
		return prev.(*Contract)
	}
	s.ndefaults.Add(1)
	return c
}

// Zone returns the time zone of pipeline's contract (UTC for the default
// contract): the zone text output shows beside UTC.
func (s *Set) Zone(pipeline string) *time.Location { return s.For(pipeline).Location }

// Len returns the number of contracts in the set.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.pipelines)
}

// Pipelines returns the pipelines that have a contract, sorted.
func (s *Set) Pipelines() []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s.pipelines...)
}
