package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/analyzer/upstream"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/store/history"
)

// DefaultMaxIncidentBatches is how many downstream batches one incident
// page reads at most unless Options.MaxIncidentBatches says otherwise.
const DefaultMaxIncidentBatches = 200

// Incident states.
const (
	// IncidentOpen: the batch is not delivered and not blocked itself: it
	// is a root, and the batches blocked by it are its incident.
	IncidentOpen = "open"
	// IncidentOver: the batch is delivered; the downstream batches are
	// shown as they are now.
	IncidentOver = "over"
	// IncidentNotRoot: the batch is blocked by batches further up; their
	// incidents are the ones it belongs to.
	IncidentNotRoot = "not_root"
)

// Incident is one incident, named by its root batch: the root's diagnosis
// (the same the batch page shows), the downstream batches blocked by it as
// a tree, and the chain of pipelines it runs through. The page and the
// API are built from this one value.
type Incident struct {
	Root  IncidentBatch `json:"root"`
	State string        `json:"state"`
	// Summary says in one sentence what the page shows.
	Summary string `json:"summary"`
	// Diagnosis is the root batch's, from where the batch page has it
	// (Source: stored or on_read).
	Source    string            `json:"source"`
	Diagnosis *replay.Diagnosis `json:"diagnosis"`
	// Roots, when State is not_root, are the incidents the batch belongs
	// to: the roots of its own diagnosis.
	Roots []IncidentRef `json:"roots,omitempty"`
	// Tree holds the batches blocked by the root (state open), nested
	// along their blocked.by chains; otherwise every downstream batch
	// read, nested along the contracts' upstreams. A batch with two
	// parents in the tree is shown once, under the parent furthest from
	// the root, naming the others (AlsoWaitsFor).
	Tree []*IncidentNode `json:"tree"`
	// Blocked is how many batches the tree holds when the state is open
	// (the blast radius), 0 otherwise.
	Blocked int `json:"blocked"`
	// Downstream is every downstream batch read, in key order, with its
	// state now.
	Downstream []IncidentBatch `json:"downstream"`
	// InGraph is how many batches the contracts' upstreams put downstream
	// of the root; Read how many of them were read (at most the cap, the
	// closest levels first); Capped says the cap was hit.
	InGraph int  `json:"downstream_in_graph"`
	Read    int  `json:"downstream_read"`
	Capped  bool `json:"capped"`
	Cap     int  `json:"cap"`
	// Chain is the picture: the root's and the downstream pipelines in
	// levels (the longest path from the root), with arrows from upstream
	// to downstream.
	Chain Chain  `json:"chain"`
	URL   string `json:"url"`
	API   string `json:"api_url"`
}

// IncidentRef names an incident: its root batch and its page.
type IncidentRef struct {
	Batch string `json:"batch"`
	URL   string `json:"url"`
}

// IncidentBatch is one batch of an incident, as its own page has it.
type IncidentBatch struct {
	Batch        string `json:"batch"`
	Pipeline     string `json:"pipeline"`
	Status       string `json:"status"`
	Verdict      string `json:"verdict"`
	FirstMissing string `json:"first_missing"`
	// Seen: the batch has stored events.
	Seen bool `json:"seen"`
	// Source is stored or on_read, as on the batch page; none when the
	// batch has no diagnosis (Note says why: not due yet, not expected).
	Source string `json:"source"`
	Note   string `json:"note,omitempty"`
	// Blocked is the diagnosis' own blocked cause.
	Blocked *replay.Blocked `json:"blocked,omitempty"`
	// InIncident: the batch is part of the incident: the root while the
	// incident is open, a batch whose Blocked.Roots include the root.
	InIncident bool `json:"in_incident"`
	// Incidents are the pages of every root of Blocked.
	Incidents []IncidentRef `json:"incidents,omitempty"`
	URL       string        `json:"url"`
}

// OtherIncidents are the incidents the node is part of besides the
// page's.
func (n *IncidentNode) OtherIncidents() []IncidentRef { return n.others }

// IncidentNode is one batch of the tree, with its children.
type IncidentNode struct {
	IncidentBatch
	// AlsoWaitsFor names the node's other parents in the tree (a diamond:
	// the node is shown once, under its first parent).
	AlsoWaitsFor []IncidentRef `json:"also_waits_for,omitempty"`
	// others are the node's incidents but this one (the page's "also
	// part of"); the JSON has them all in Incidents.
	others   []IncidentRef
	Children []*IncidentNode `json:"children,omitempty"`
}

// incidentPath is the incident page of root batch k.
func incidentPath(k model.BatchKey) string {
	return "/incidents/" + pathEscape(k.Pipeline) + "/" + k.BusinessDate.String() + "/" + pathEscape(k.BatchID)
}

// incidentRefs returns the incident pages of links.
func incidentRefs(ls []replay.Link) []IncidentRef {
	out := make([]IncidentRef, 0, len(ls))
	for _, l := range ls {
		ref := IncidentRef{Batch: l.Batch}
		if k, err := model.ParseBatchKey(l.Batch); err == nil {
			ref.URL = incidentPath(k)
		}
		out = append(out, ref)
	}
	return out
}

func (s *Server) apiIncident(w http.ResponseWriter, r *http.Request) error {
	inc, err := s.incidentOf(r)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, inc)
}

func (s *Server) incidentPage(w http.ResponseWriter, r *http.Request) error {
	inc, err := s.incidentOf(r)
	if err != nil {
		return err
	}
	return render(w, http.StatusOK, "incident.html", map[string]any{
		"I": inc, "Key": inc.Root.Batch, "D": inc.Diagnosis, "Zone": inc.Diagnosis.Zone,
		"Ladder": ladderOf(inc.Diagnosis), "SVG": inc.Chain.svgHTML(),
	})
}

// incidentOf reads the incident a /incidents/{pipeline}/{date}/{id}
// request names: the root batch as the batch page reads it (a batch with
// no events and not expected is a 404), then its downstream batches.
func (s *Server) incidentOf(r *http.Request) (*Incident, error) {
	k, b, err := s.batchOf(r)
	if err != nil {
		return nil, err
	}
	return s.incident(r.Context(), k, b)
}

// incident builds the incident of root batch k, whose detail b the batch
// page would show.
func (s *Server) incident(ctx context.Context, k model.BatchKey, b *BatchDetail) (*Incident, error) {
	d := b.Diagnosis
	inc := &Incident{Source: b.Source, Diagnosis: d, URL: incidentPath(k), API: "/api/v1" + incidentPath(k), Cap: s.maxIncident}
	inc.Root = IncidentBatch{Batch: k.String(), Pipeline: k.Pipeline, Status: string(d.Status), Verdict: d.Verdict.String(),
		FirstMissing: d.FirstMissing, Seen: d.Events > 0, Source: b.Source, Blocked: d.Blocked, URL: batchPath(k)}
	switch {
	case d.Verdict == model.Delivered:
		inc.State = IncidentOver
	case d.Blocked != nil:
		inc.State = IncidentNotRoot
		inc.Roots = incidentRefs(d.Blocked.Roots)
		inc.Root.Incidents = inc.Roots
	default:
		inc.State = IncidentOpen
		inc.Root.InIncident = true
	}
	keys := s.graph.Downstream(k)
	inc.InGraph = len(keys)
	levels := pipelineLevels(k.Pipeline, pipelinesOf(keys), s.upstreamsOf)
	// The closest levels first, so that a cut keeps the nearest blast.
	sort.SliceStable(keys, func(i, j int) bool {
		li, lj := levels[keys[i].Pipeline], levels[keys[j].Pipeline]
		if li != lj {
			return li < lj
		}
		return keys[i].Compare(keys[j]) < 0
	})
	if len(keys) > s.maxIncident {
		keys, inc.Capped = keys[:s.maxIncident], true
	}
	inc.Read = len(keys)
	got, err := s.diagnoseMany(ctx, keys)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(keys, func(a, b model.BatchKey) int { return a.Compare(b) })
	root := k.String()
	inc.Downstream = make([]IncidentBatch, 0, len(keys)) // [] in the JSON, not null
	for _, dk := range keys {
		ib := got[dk]
		if ib.Blocked != nil {
			ib.Incidents = incidentRefs(ib.Blocked.Roots)
			ib.InIncident = slices.ContainsFunc(ib.Blocked.Roots, func(l replay.Link) bool { return l.Batch == root })
		}
		inc.Downstream = append(inc.Downstream, ib)
	}
	inc.Tree, inc.Blocked = s.incidentTree(inc)
	inc.Chain = s.chainOf(inc)
	inc.Summary = incidentSummary(inc)
	return inc, nil
}

// incidentSummary is the page's first sentence.
func incidentSummary(inc *Incident) string {
	capped := ""
	if inc.Capped {
		capped = fmt.Sprintf(" (only the first %d of the %d downstream batches in the contracts' graph were read: the page's cap)", inc.Read, inc.InGraph)
	}
	switch inc.State {
	case IncidentOver:
		return fmt.Sprintf("%s is delivered: the incident is over. Shown as they are now: %s%s.", inc.Root.Batch, downstreamN(inc.Read), capped)
	case IncidentNotRoot:
		var rs []string
		for _, r := range inc.Roots {
			rs = append(rs, r.Batch)
		}
		return fmt.Sprintf("%s is not the root of an incident: it is blocked by %s further up. Shown as they are now: %s%s.",
			inc.Root.Batch, strings.Join(rs, " and "), downstreamN(inc.Read), capped)
	}
	stop := "it has no delivery event"
	if inc.Root.Seen {
		stop = "it stopped at " + inc.Root.FirstMissing
	}
	if inc.Root.FirstMissing == "" {
		stop = "it is " + inc.Root.Status
	}
	return fmt.Sprintf("%s is not delivered (%s, %s) and blocks %s%s.", inc.Root.Batch, stop, inc.Root.Verdict, downstreamN(inc.Blocked), capped)
}

// downstreamN is "n downstream batches", singular for one.
func downstreamN(n int) string {
	if n == 1 {
		return "1 downstream batch"
	}
	return fmt.Sprintf("%d downstream batches", n)
}

// upstreamsOf returns the pipelines p's contract waits for.
func (s *Server) upstreamsOf(p string) []string {
	var out []string
	for _, u := range s.contracts.For(p).Upstreams {
		out = append(out, u.Pipeline)
	}
	return out
}

func pipelinesOf(keys []model.BatchKey) []string {
	var out []string
	for _, k := range keys {
		out = append(out, k.Pipeline)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// pipelineLevels returns each pipeline's level: the longest path from
// root along upstream edges within {root} and pipelines (the root is 0).
// A pipeline with no path from root within them is level 1.
func pipelineLevels(root string, pipelines []string, ups func(string) []string) map[string]int {
	in := map[string]bool{root: true}
	for _, p := range pipelines {
		in[p] = true
	}
	level := map[string]int{root: 0}
	busy := map[string]bool{}
	var walk func(p string) int
	walk = func(p string) int {
		if l, ok := level[p]; ok {
			return l
		}
		if busy[p] {
			return -1 // a cycle, which a contract set refuses to load
		}
		busy[p] = true
		best := -1
		for _, u := range ups(p) {
			if in[u] && u != p {
				if l := walk(u); l >= 0 && l+1 > best {
					best = l + 1
				}
			}
		}
		busy[p] = false
		if best < 0 {
			best = 1
		}
		level[p] = best
		return best
	}
	for _, p := range pipelines {
		walk(p)
	}
	return level
}

// maxIncidentReaders is how many downstream pipelines are read at once.
const maxIncidentReaders = 3

// diagnoseMany returns the batches of keys as each one's batch page would
// show it: its latest stored diagnosis, or a diagnosis on read from the
// history it needs with the upstream rule's input (history.ReadUpstreams),
// the same reads the batch page makes, one per pipeline rather than one
// per batch.
func (s *Server) diagnoseMany(ctx context.Context, keys []model.BatchKey) (map[model.BatchKey]IncidentBatch, error) {
	out := make(map[model.BatchKey]IncidentBatch, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	byPipeline := map[string][]model.BatchKey{}
	from, to := keys[0].BusinessDate, keys[0].BusinessDate
	for _, k := range keys {
		byPipeline[k.Pipeline] = append(byPipeline[k.Pipeline], k)
		if k.BusinessDate.Compare(from) < 0 {
			from = k.BusinessDate
		}
		if k.BusinessDate.Compare(to) > 0 {
			to = k.BusinessDate
		}
	}
	pipelines := make([]string, 0, len(byPipeline))
	for p := range byPipeline {
		pipelines = append(pipelines, p)
	}
	sort.Strings(pipelines)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type upResult struct {
		ups *upstream.Table
		err error
	}
	upc := make(chan upResult, 1)
	go func() {
		ups, err := history.ReadUpstreams(ctx, s.store, history.ContextRequest{Pipelines: pipelines, From: from, To: to, AsOf: s.now(), Contracts: s.contracts})
		upc <- upResult{ups, err}
	}()
	type read struct {
		p      string
		stored map[model.BatchKey]storedRow
		set    *batches.Set
		err    error
	}
	reads := make([]read, len(pipelines))
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxIncidentReaders)
	for i, p := range pipelines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			ks := byPipeline[p]
			lo, hi := ks[0].BusinessDate, ks[0].BusinessDate
			for _, k := range ks {
				if k.BusinessDate.Compare(lo) < 0 {
					lo = k.BusinessDate
				}
				if k.BusinessDate.Compare(hi) > 0 {
					hi = k.BusinessDate
				}
			}
			rd := read{p: p}
			if rd.stored, rd.err = s.rd.storedRows(ctx, p, dateRange{from: lo, to: hi}); rd.err == nil {
				rd.set, rd.err = s.readHistory(ctx, p, lo, hi, nil, nil)
			}
			if rd.err != nil {
				cancel()
			}
			reads[i] = rd
		}()
	}
	wg.Wait()
	up := <-upc
	// The first read that failed cancelled the others: its error, not
	// theirs, says what went wrong.
	errs := []error{up.err}
	for _, rd := range reads {
		errs = append(errs, rd.err)
	}
	var first error
	for _, err := range errs {
		if err != nil && (first == nil || errors.Is(first, context.Canceled)) {
			first = err
		}
	}
	if first != nil {
		return nil, first
	}
	for _, rd := range reads {
		if up.ups != nil {
			rd.set.Upstreams(up.ups)
		}
		for _, k := range byPipeline[rd.p] {
			ib := IncidentBatch{Batch: k.String(), Pipeline: k.Pipeline, URL: batchPath(k)}
			var d *replay.Diagnosis
			if _, ok := rd.stored[k]; ok {
				raw, err := s.rd.storedDiagnosis(ctx, k)
				if err != nil {
					return nil, err
				}
				if raw != nil {
					var sd replay.Diagnosis
					if err := json.Unmarshal(raw, &sd); err != nil {
						return nil, fmt.Errorf("the stored diagnosis of %s in %s.diagnoses_v2 does not decode: %w", k, s.rd.db, err)
					}
					d, ib.Source = &sd, "stored"
				}
			}
			if d == nil {
				od, ok := rd.set.DiagnoseOne(k)
				if ok {
					d, ib.Source = &od, "on_read"
				}
			}
			if d == nil {
				ib.Source, ib.Note = "none", s.noBatch(k).Error()
				out[k] = ib
				continue
			}
			ib.Status, ib.Verdict, ib.FirstMissing, ib.Seen, ib.Blocked = string(d.Status), d.Verdict.String(), d.FirstMissing, d.Events > 0, d.Blocked
			out[k] = ib
		}
	}
	return out, nil
}

// incidentTree nests the incident's batches: when it is open, those whose
// roots include the root, under the batches of their blocked.by in the
// tree; otherwise every downstream batch read, under its upstream batches
// (the contracts' upstreams). A batch is placed once, under the parent
// furthest from the root (the first in key order of those equally far),
// the others named; one with no parent in the tree is placed under the
// root. It returns the root's children and how many batches the tree
// holds when open.
func (s *Server) incidentTree(inc *Incident) ([]*IncidentNode, int) {
	open := inc.State == IncidentOpen
	root := inc.Root.Batch
	nodes := map[string]*IncidentNode{}
	var order []string
	for _, b := range inc.Downstream {
		if open && !b.InIncident {
			continue
		}
		n := &IncidentNode{IncidentBatch: b}
		for _, r := range b.Incidents {
			if r.Batch != root {
				n.others = append(n.others, r)
			}
		}
		nodes[b.Batch] = n
		order = append(order, b.Batch)
	}
	parents := map[string][]string{}
	for _, name := range order {
		n := nodes[name]
		var ps []string
		if open {
			for _, l := range n.Blocked.By {
				if l.Batch == root || nodes[l.Batch] != nil {
					ps = append(ps, l.Batch)
				}
			}
		} else if k, err := model.ParseBatchKey(name); err == nil {
			for _, uk := range s.upstreamKeys(k) {
				if u := uk.String(); u == root || nodes[u] != nil {
					ps = append(ps, u)
				}
			}
		}
		sort.Strings(ps)
		parents[name] = slices.Compact(ps)
	}
	depth := map[string]int{root: 0}
	busy := map[string]bool{}
	var depthOf func(string) int
	depthOf = func(b string) int {
		if d, ok := depth[b]; ok {
			return d
		}
		if busy[b] {
			return 0
		}
		busy[b] = true
		d := 1
		for _, p := range parents[b] {
			d = max(d, depthOf(p)+1)
		}
		busy[b] = false
		depth[b] = d
		return d
	}
	top := []*IncidentNode{} // [] in the JSON, not null
	// Placed in key order, so that children come out sorted.
	for _, name := range order {
		n := nodes[name]
		var first string
		for _, p := range parents[name] {
			if first == "" || depthOf(p) > depthOf(first) {
				first = p
			}
		}
		for _, p := range parents[name] {
			if p != first {
				n.AlsoWaitsFor = append(n.AlsoWaitsFor, IncidentRef{Batch: p, URL: batchLinkOf(p)})
			}
		}
		if first == "" || first == root {
			top = append(top, n)
			continue
		}
		nodes[first].Children = append(nodes[first].Children, n)
	}
	if !open {
		return top, 0
	}
	return top, len(order)
}

// upstreamKeys returns the batches k's contract waits for.
func (s *Server) upstreamKeys(k model.BatchKey) []model.BatchKey {
	c := s.contracts.For(k.Pipeline)
	var out []model.BatchKey
	for _, u := range c.Upstreams {
		if uk, ok := contract.UpstreamKey(k, u, s.contracts.For(u.Pipeline)); ok {
			out = append(out, uk)
		}
	}
	return out
}

// batchLinkOf is the page of the batch named by key ("" when it does not
// parse).
func batchLinkOf(key string) string {
	k, err := model.ParseBatchKey(key)
	if err != nil {
		return ""
	}
	return batchPath(k)
}
