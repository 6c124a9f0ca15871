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
	// without one: a page of every pipeline asks For each of thousands of
	// pipelines several times, and a fresh Default each time was a
	// twentieth of its CPU. A reload builds a new Set, so the defaults go
	// with the contracts they stood beside.
	defaults defaultContracts
}

// maxSharedDefaults bounds how many pipelines' Default contracts a Set
// keeps: the pipelines asked for may come from requests (a page's URL),
// so past it For makes a fresh Default again rather than grow.
const maxSharedDefaults = 1 << 16

// defaultContracts keeps Default contracts by pipeline for a Set. Reads
// are a map lookup without a lock or a write: the map read is never
// changed once published; new contracts go to pending, under mu, and
// are published (read copied with them) once pending holds a quarter as
// many as read, so the copies add up to a few times the contracts kept.
// sync.Map was slower here than allocating a Default per call: its
// lookups cost more than the allocation for 10,000 pipelines.
type defaultContracts struct {
	read    atomic.Pointer[map[string]*Contract]
	mu      sync.Mutex
	pending map[string]*Contract
	n       int // contracts kept, read's and pending's
}

// get returns the Default contract of pipeline kept, making it on the
// first call.
func (d *defaultContracts) get(pipeline string) *Contract {
	if m := d.read.Load(); m != nil {
		if c, ok := (*m)[pipeline]; ok {
			return c
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.pending[pipeline]; ok {
		return c
	}
	read := d.read.Load()
	if read != nil {
		if c, ok := (*read)[pipeline]; ok {
			return c // published since the look above
		}
	}
	if d.n >= maxSharedDefaults {
		return Default(pipeline)
	}
	// A copy of the name: the one given may point into a larger buffer
	// (a decoded row) that the set would otherwise keep alive.
	c := Default(strings.Clone(pipeline))
	if d.pending == nil {
		d.pending = make(map[string]*Contract)
	}
	d.pending[c.Pipeline] = c
	d.n++
	size := 0
	if read != nil {
		size = len(*read)
	}
	if len(d.pending) >= max(64, size/4) {
		m := make(map[string]*Contract, size+len(d.pending))
		if read != nil {
			for k, v := range *read {
				m[k] = v
			}
		}
		for k, v := range d.pending {
			m[k] = v
		}
		d.read.Store(&m)
		d.pending = nil
	}
	return c
}

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
	return s.defaults.get(pipeline)
}

// Scheduled reports whether pipeline's contract has a schedule (one
// that may expect batches: Expected), without making the default
// contract of a pipeline that has no contract of its own: the default
// has no schedule. A page of every pipeline asks it of each row, where
// most pipelines may have no contract.
func (s *Set) Scheduled(pipeline string) bool {
	if s == nil {
		return false
	}
	c, ok := s.byPipeline[pipeline]
	return ok && (c.cron != nil || c.Schedule != NoSchedule)
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
