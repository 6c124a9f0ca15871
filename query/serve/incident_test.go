package serve_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/internal/gen"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
	"github.com/handoff-dev/handoff/query/serve"
	"github.com/handoff-dev/handoff/store/storetest"
)

// graphFixture is a database holding a generated delivery graph and a
// server over it, its clock at the moment the breaks are seen.
type graphFixture struct {
	*fixture
	g   *gen.Graph
	set *contract.Set
	// ups maps each pipeline to the pipelines its contract waits for.
	ups map[string][]string
}

// hostileRoot and hostileDown are a root pipeline and its downstream whose
// names hold markup: the incident page's tree and picture escape them.
const (
	hostileRoot = hostilePipeline
	hostileDown = `down<i>"'&.daily`
)

// hostileContracts are the contracts of hostileRoot and hostileDown.
var hostileContracts = map[string]string{
	"hostile-root.yaml": "pipeline: 'evil<b>x<b>\"''&gpj.exe'\nschedule: daily\ntimezone: UTC\nbatch_id: \"{yyyymmdd}\"\n",
	"hostile-down.yaml": "pipeline: 'down<i>\"''&.daily'\nschedule: daily\ntimezone: UTC\nbatch_id: \"{yyyymmdd}\"\nupstreams:\n  - pipeline: 'evil<b>x<b>\"''&gpj.exe'\n",
}

// newGraphFixture loads a generated graph of 12 pipelines in 3 levels (seed
// 10: a diamond of a root and a batch it blocks, and a batch blocked by
// two roots), and the hostile pair.
func newGraphFixture(t *testing.T, opts serve.Options) *graphFixture {
	t.Helper()
	g, err := gen.GenerateGraph(gen.GraphOptions{Pipelines: 12, Levels: 3, Days: 2, Date: time.Date(2026, 9, 30, 0, 0, 0, 0, time.UTC), Seed: 10})
	if err != nil {
		t.Fatal(err)
	}
	set := testenv.Contracts(t, g.Contracts, hostileContracts)
	ups := map[string][]string{}
	for _, p := range set.Pipelines() {
		for _, u := range set.For(p).Upstreams {
			ups[p] = append(ups[p], u.Pipeline)
		}
	}
	tdb := storetest.NewDB(t, "serve_incident")
	raw, db := tdb.Conn, tdb.Name
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var events []model.Event
	var dec model.Decoder
	for _, l := range g.Events {
		e, err := dec.Decode([]byte(l))
		if err != nil {
			t.Fatalf("generated line %s: %v", l, err)
		}
		events = append(events, e)
	}
	day := model.MustParseDate("2026-09-30")
	at := time.Date(2026, 10, 1, 1, 0, 0, 0, time.UTC)
	events = append(events,
		model.Event{Spec: model.SpecV1, ID: "h-root", Type: model.JobFailed, Time: at, Pipeline: hostileRoot, BusinessDate: day, BatchID: day.Compact(), System: model.Producer, Error: "boom"},
		model.Event{Spec: model.SpecV1, ID: "h-down", Type: model.JobStarted, Time: at, Pipeline: hostileDown, BusinessDate: day, BatchID: day.Compact(), System: model.Producer})
	w := tdb.Sink
	if err := w.Events(ctx, events); err != nil {
		t.Fatal(err)
	}
	opts.Database, opts.Contracts = db, set
	opts.Now = func() time.Time { return g.SeenAt }
	if opts.QueryTimeout == 0 {
		opts.QueryTimeout = 20 * time.Second
	}
	conn := &recordingConn{Conn: raw}
	srv, err := serve.New(context.Background(), conn, opts)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{conn: conn, raw: raw, db: db, srv: srv, http: newHTTP(t, srv)}
	return &graphFixture{fixture: f, g: g, set: set, ups: ups}
}

// incidentJSON is what the tests read of GET /api/v1/incidents/...
type incidentJSON struct {
	Root struct {
		Batch, Status, Verdict string
		FirstMissing           string `json:"first_missing"`
	} `json:"root"`
	State   string `json:"state"`
	Summary string `json:"summary"`
	Roots   []struct{ Batch, URL string }
	Tree    []*nodeJSON `json:"tree"`
	Blocked int         `json:"blocked"`
	Down    []struct {
		Batch, Status, Verdict string
		FirstMissing           string `json:"first_missing"`
		InIncident             bool   `json:"in_incident"`
		Blocked                *struct {
			By, Roots []struct{ Batch string }
		} `json:"blocked"`
	} `json:"downstream"`
	InGraph int  `json:"downstream_in_graph"`
	Read    int  `json:"downstream_read"`
	Capped  bool `json:"capped"`
	Chain   struct {
		Nodes []struct {
			Pipeline, State string
			Level           int
			Broken          bool
		}
	} `json:"chain"`
}

type nodeJSON struct {
	Batch        string
	Incidents    []struct{ Batch, URL string }
	AlsoWaitsFor []struct{ Batch string } `json:"also_waits_for"`
	Children     []*nodeJSON
}

// walk calls fn for every node of the tree with its parent's batch.
func walk(parent string, ns []*nodeJSON, fn func(parent string, n *nodeJSON)) {
	for _, n := range ns {
		fn(parent, n)
		walk(n.Batch, n.Children, fn)
	}
}

func keyPath(batch string) string {
	k, err := model.ParseBatchKey(batch)
	if err != nil {
		panic(err)
	}
	return "/" + url.PathEscape(k.Pipeline) + "/" + k.BusinessDate.String() + "/" + url.PathEscape(k.BatchID)
}

func pipelineOf(batch string) string { p, _, _ := strings.Cut(batch, "/"); return p }

// TestIncidentTree: on the real ClickHouse, a generated graph of 12
// pipelines in 3 levels with three root breaks: each root's incident holds
// exactly the batches the generator says it blocks, each under a parent it
// waits for, the one furthest from the root, the others named; a diamond
// is shown once; a batch blocked by two roots is in both incidents and
// names both; every batch's state is its batch page's; the picture is
// well-formed XML with one box per pipeline, the root marked broken.
func TestIncidentTree(t *testing.T) {
	f := newGraphFixture(t, serve.Options{})
	roots := slices.Sorted(func(yield func(string) bool) {
		for r := range f.g.Roots {
			if !yield(r) {
				return
			}
		}
	})
	inAny := map[string]int{} // blocked batch -> in how many trees
	sawDiamond, sawDeep := false, false
	for _, root := range roots {
		var inc incidentJSON
		f.getJSON(t, "/api/v1/incidents"+keyPath(root), 200, &inc)
		if inc.State != "open" || inc.Root.Batch != root {
			t.Fatalf("incident %s: state %q root %q, want open", root, inc.State, inc.Root.Batch)
		}
		var want []string
		for b, rs := range f.g.Blocked {
			if slices.Contains(rs, root) {
				want = append(want, b)
			}
		}
		sort.Strings(want)
		// Where each batch sits: its parent in the tree.
		parent := map[string]string{}
		depth := map[string]int{root: 0}
		var got []string
		walk(root, inc.Tree, func(p string, n *nodeJSON) {
			if _, dup := parent[n.Batch]; dup {
				t.Errorf("incident %s: %s shown twice", root, n.Batch)
			}
			parent[n.Batch] = p
			depth[n.Batch] = depth[p] + 1
			got = append(got, n.Batch)
			inAny[n.Batch]++
			sawDeep = sawDeep || depth[n.Batch] >= 2
		})
		sort.Strings(got)
		if !slices.Equal(got, want) || inc.Blocked != len(want) {
			t.Errorf("incident %s: tree %v (blocked %d), want %v", root, got, inc.Blocked, want)
		}
		// Each node's parents are its upstream batches in the incident:
		// the one placed under is the furthest from the root.
		walk(root, inc.Tree, func(p string, n *nodeJSON) {
			var ps []string
			for _, u := range f.ups[pipelineOf(n.Batch)] {
				ub := u + "/2026-09-30/20260930"
				if ub == root || slices.Contains(f.g.Blocked[ub], root) {
					ps = append(ps, ub)
				}
			}
			named := []string{p}
			for _, a := range n.AlsoWaitsFor {
				named = append(named, a.Batch)
				if depth[a.Batch] > depth[p] {
					t.Errorf("incident %s: %s placed under %s (depth %d), but %s is further (depth %d)", root, n.Batch, p, depth[p], a.Batch, depth[a.Batch])
				}
			}
			sort.Strings(ps)
			sort.Strings(named)
			if !slices.Equal(ps, named) {
				t.Errorf("incident %s: %s under %s, also %v: want its parents %v", root, n.Batch, p, n.AlsoWaitsFor, ps)
			}
			if len(ps) >= 2 {
				sawDiamond = true
			}
			if rs := f.g.Blocked[n.Batch]; len(n.Incidents) != len(rs) {
				t.Errorf("incident %s: %s names incidents %v, want %v", root, n.Batch, n.Incidents, rs)
			}
		})
		// Every downstream batch reads as its own page has it.
		for _, d := range inc.Down {
			var b struct {
				Diagnosis struct {
					Status, Verdict string
					FirstMissing    string `json:"first_missing"`
					Blocked         *struct{ Roots []struct{ Batch string } }
				}
			}
			f.getJSON(t, "/api/v1/batches"+keyPath(d.Batch), 200, &b)
			var pageRoots, incRoots []string
			if b.Diagnosis.Blocked != nil {
				for _, r := range b.Diagnosis.Blocked.Roots {
					pageRoots = append(pageRoots, r.Batch)
				}
			}
			if d.Blocked != nil {
				for _, r := range d.Blocked.Roots {
					incRoots = append(incRoots, r.Batch)
				}
			}
			if b.Diagnosis.Status != d.Status || b.Diagnosis.Verdict != d.Verdict || b.Diagnosis.FirstMissing != d.FirstMissing || !slices.Equal(pageRoots, incRoots) {
				t.Errorf("incident %s: %s reads %s/%s/%s roots %v; its batch page %s/%s/%s roots %v", root, d.Batch, d.Status, d.Verdict, d.FirstMissing, incRoots,
					b.Diagnosis.Status, b.Diagnosis.Verdict, b.Diagnosis.FirstMissing, pageRoots)
			}
		}
		// The picture: one box per pipeline of the incident's chain, the
		// root marked broken, well-formed XML.
		code, page := f.get(t, "/incidents"+keyPath(root))
		if code != 200 {
			t.Fatalf("GET incident page %s: %d %s", root, code, page)
		}
		boxes := svgBoxes(t, page)
		wantBoxes := map[string]bool{pipelineOf(root): true}
		for _, d := range inc.Down {
			wantBoxes[pipelineOf(d.Batch)] = true
		}
		if len(boxes) != len(wantBoxes) {
			t.Errorf("incident %s: %d boxes %v, want one per pipeline %v", root, len(boxes), boxes, wantBoxes)
		}
		for p, class := range boxes {
			switch {
			case !wantBoxes[p]:
				t.Errorf("incident %s: a box for %s, not in the chain", root, p)
			case p == pipelineOf(root) && class != "node root broken":
				t.Errorf("incident %s: the root's box has class %q, want it marked broken", root, class)
			case p != pipelineOf(root) && slices.Contains(want, p+"/2026-09-30/20260930") && class != "node blocked":
				t.Errorf("incident %s: blocked %s's box has class %q", root, p, class)
			}
		}
	}
	if !sawDiamond || !sawDeep {
		t.Errorf("the graph has no diamond (%v) or no chain of 3 levels (%v): pick another seed", sawDiamond, sawDeep)
	}
	// A batch blocked by two roots: in both trees; its page links both
	// incidents; its own incident page says it is not a root and points
	// to them.
	two := ""
	for b, rs := range f.g.Blocked {
		if len(rs) == 2 && (two == "" || b < two) {
			two = b
		}
	}
	if two == "" || inAny[two] != 2 {
		t.Fatalf("no batch blocked by two roots in both trees (%q in %d)", two, inAny[two])
	}
	// Each of its roots' pages names the other incident beside it.
	for i, r := range f.g.Blocked[two] {
		other := f.g.Blocked[two][1-i]
		_, page := f.get(t, "/incidents"+keyPath(r))
		if !bytes.Contains(page, []byte(`<a class="incident" href="/incidents`+keyPath(other)+`">incident `+other+`</a>`)) {
			t.Errorf("the incident page of %s does not say %s is also part of incident %s", r, two, other)
		}
		if bytes.Contains(page, []byte(`">incident `+r+`</a>`)) {
			t.Errorf("the incident page of %s names itself as another incident", r)
		}
	}
	_, page := f.get(t, "/batches"+keyPath(two))
	for _, r := range f.g.Blocked[two] {
		if !bytes.Contains(page, []byte(`class="incident" href="/incidents`+keyPath(r)+`"`)) {
			t.Errorf("the page of %s does not link the incident of its root %s", two, r)
		}
	}
	var inc incidentJSON
	f.getJSON(t, "/api/v1/incidents"+keyPath(two), 200, &inc)
	var named []string
	for _, r := range inc.Roots {
		named = append(named, r.Batch)
		if r.URL != "/incidents"+keyPath(r.Batch) {
			t.Errorf("not-root incident %s: root %s links %s", two, r.Batch, r.URL)
		}
	}
	if inc.State != "not_root" || !slices.Equal(named, f.g.Blocked[two]) {
		t.Errorf("incident page of %s: state %q roots %v, want not_root and %v", two, inc.State, named, f.g.Blocked[two])
	}
	_, page = f.get(t, "/incidents"+keyPath(two))
	if !bytes.Contains(page, []byte(`id="not-root"`)) || !bytes.Contains(page, []byte(`href="/incidents`+keyPath(f.g.Blocked[two][0])+`"`)) {
		t.Errorf("the incident page of %s does not point to its roots:\n%s", two, page)
	}
	// A root's own page links to its incident.
	_, page = f.get(t, "/batches"+keyPath(roots[0]))
	if !bytes.Contains(page, []byte(`id="incident-link"`)) || !bytes.Contains(page, []byte(`href="/incidents`+keyPath(roots[0])+`"`)) {
		t.Errorf("the root %s's page does not link its incident", roots[0])
	}
	// A delivered batch: the incident is over; the downstream is shown
	// as it is now, nobody in an incident.
	over := strings.Replace(roots[0], "2026-09-30/20260930", "2026-09-29/20260929", 1)
	f.getJSON(t, "/api/v1/incidents"+keyPath(over), 200, &inc)
	if inc.State != "over" || inc.Blocked != 0 || len(inc.Down) == 0 || len(inc.Tree) == 0 {
		t.Errorf("incident of delivered %s: state %q, blocked %d, %d downstream, tree %d: want over with the downstream shown", over, inc.State, inc.Blocked, len(inc.Down), len(inc.Tree))
	}
	for _, d := range inc.Down {
		if d.InIncident || d.Status != "delivered" {
			t.Errorf("incident of delivered %s: %s is %s, in incident %v", over, d.Batch, d.Status, d.InIncident)
		}
	}
}

// svgBoxes decodes the incident page's SVG as XML and returns each box's
// pipeline and class.
func svgBoxes(t *testing.T, page []byte) map[string]string {
	t.Helper()
	i, j := bytes.Index(page, []byte("<svg")), bytes.Index(page, []byte("</svg>"))
	if i < 0 || j < i {
		t.Fatalf("no SVG in the page:\n%s", page)
	}
	dec := xml.NewDecoder(bytes.NewReader(page[i : j+len("</svg>")]))
	boxes := map[string]string{}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v\n%s", err, page[i:j+6])
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "g" {
			var p, class string
			for _, a := range se.Attr {
				switch a.Name.Local {
				case "data-pipeline":
					p = a.Value
				case "class":
					class = a.Value
				}
			}
			if strings.HasPrefix(class, "node") {
				boxes[p] = class
			}
		}
	}
	return boxes
}

// TestIncidentCapped: past the cap, the page reads the closest batches
// and says so.
func TestIncidentCapped(t *testing.T) {
	f := newGraphFixture(t, serve.Options{MaxIncidentBatches: 2})
	var root string
	for r := range f.g.Roots {
		if root == "" || r < root {
			root = r
		}
	}
	var inc incidentJSON
	f.getJSON(t, "/api/v1/incidents"+keyPath(root), 200, &inc)
	if !inc.Capped || inc.Read != 2 || inc.InGraph <= 2 || len(inc.Down) != 2 {
		t.Fatalf("capped incident: capped %v, read %d of %d, %d downstream; want 2 read of more", inc.Capped, inc.Read, inc.InGraph, len(inc.Down))
	}
	_, page := f.get(t, "/incidents"+keyPath(root))
	if !bytes.Contains(page, []byte(`id="capped"`)) {
		t.Errorf("the capped incident page does not say it was capped")
	}
}

// TestIncidentHostileNames: the tree, the table and the picture of an
// incident whose pipelines' names hold markup show them as text, and the
// picture stays well-formed XML.
func TestIncidentHostileNames(t *testing.T) {
	f := newGraphFixture(t, serve.Options{})
	root := model.BatchKey{Pipeline: hostileRoot, BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930"}
	code, page := f.get(t, "/incidents"+keyPath(root.String()))
	if code != 200 {
		t.Fatalf("GET the hostile incident: %d %s", code, page)
	}
	for _, raw := range []string{"<b>x", `<i>"`} {
		if bytes.Contains(page, []byte(raw)) {
			t.Errorf("the incident page holds %q raw", raw)
		}
	}
	boxes := svgBoxes(t, page)
	if boxes[hostileRoot] != "node root broken" || boxes[hostileDown] != "node blocked" || len(boxes) != 2 {
		t.Errorf("hostile incident boxes %v: want the root broken and %q blocked", boxes, hostileDown)
	}
	if !regexp.MustCompile(`data-batch="down&lt;i&gt;&#34;&#39;&amp;.daily/2026-09-30/20260930"`).Match(page) {
		t.Errorf("the hostile downstream batch is not in the tree, escaped:\n%s", page)
	}
}
