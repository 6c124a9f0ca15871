package serve

import (
	"bytes"
	"fmt"
	"html"
	"html/template"
	"sort"
	"unicode/utf8"

	"github.com/handoff-dev/handoff/model"
)

// Chain is the picture of an incident: one box per pipeline, in levels
// from the root's (level 0, the longest path from the root along the
// contracts' upstreams), ordered by name within a level, with an arrow
// from each upstream to each downstream among them. Its coordinates are
// computed here, so the picture is the same for the same incident.
type Chain struct {
	Width  int         `json:"width"`
	Height int         `json:"height"`
	Nodes  []ChainNode `json:"nodes"`
	Edges  []ChainEdge `json:"edges"`
}

// Chain node states.
const (
	// ChainRoot is the root's pipeline: the broken link while the
	// incident is open.
	ChainRoot = "root"
	// ChainBlocked is a pipeline with a batch blocked by the root.
	ChainBlocked = "blocked"
	// ChainHealthy is any other pipeline downstream: not part of the
	// incident (delivered, or not delivered for a cause of its own).
	ChainHealthy = "healthy"
)

// ChainNode is one pipeline's box.
type ChainNode struct {
	Pipeline string `json:"pipeline"`
	Level    int    `json:"level"`
	Order    int    `json:"order"`
	X        int    `json:"x"`
	Y        int    `json:"y"`
	State    string `json:"state"`
	// Label is the box's second line: the first missing boundary of the
	// root, the state of the others' batches.
	Label string `json:"label"`
	// Broken: the root while the incident is open (not delivered, not
	// blocked itself): drawn as the broken link.
	Broken bool   `json:"broken,omitempty"`
	URL    string `json:"url"`
}

// ChainEdge is one arrow, upstream to downstream.
type ChainEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Blocked: both ends are in the incident (the root or blocked).
	Blocked bool `json:"blocked,omitempty"`
}

// chainBox is what the layout is given of one pipeline.
type chainBox struct {
	Pipeline, State, Label, URL string
	Broken                      bool
}

// The picture's geometry, in pixels.
const (
	chainBoxW   = 250
	chainBoxH   = 46
	chainGapX   = 70
	chainGapY   = 16
	chainMargin = 12
	// chainNameRunes is how much of a name a box shows; its title has
	// the whole name.
	chainNameRunes = 32
)

// chainOf is the picture of inc.
func (s *Server) chainOf(inc *Incident) Chain {
	byPipeline := map[string][]IncidentBatch{}
	for _, b := range inc.Downstream {
		byPipeline[b.Pipeline] = append(byPipeline[b.Pipeline], b)
	}
	root := chainBox{Pipeline: inc.Root.Pipeline, State: ChainRoot, URL: inc.Root.URL}
	switch inc.State {
	case IncidentOpen:
		root.Broken = true
		switch {
		case inc.Root.FirstMissing != "" && inc.Root.Seen:
			root.Label = "stopped at " + inc.Root.FirstMissing
		case inc.Root.FirstMissing != "":
			root.Label = "no event: " + inc.Root.FirstMissing + " missing"
		default:
			root.Label = inc.Root.Status + ", " + inc.Root.Verdict
		}
	case IncidentOver:
		root.Label = "delivered: incident over"
	default:
		root.Label = "blocked further up"
	}
	boxes := []chainBox{root}
	for p, bs := range byPipeline {
		if p == root.Pipeline {
			continue
		}
		b := chainBox{Pipeline: p, State: ChainHealthy, URL: bs[0].URL}
		for _, x := range bs {
			if x.InIncident {
				b.State, b.URL = ChainBlocked, x.URL
				break
			}
		}
		first := bs[0]
		switch {
		case b.State == ChainBlocked:
			b.Label = "blocked"
		case first.Source == "none":
			b.Label = "no diagnosis"
		default:
			b.Label = first.Status
		}
		if first.Status != "" && b.State == ChainBlocked {
			b.Label += " (" + first.Status + ")"
		}
		if len(bs) > 1 {
			b.Label += fmt.Sprintf(", %d batches", len(bs))
		}
		boxes = append(boxes, b)
	}
	return layoutChain(boxes, s.upstreamsOf)
}

// layoutChain places boxes (the first is the root) in levels: level =
// the longest path from the root along ups within the boxes, order within
// a level by name; edges from each upstream to each downstream among the
// boxes, sorted.
func layoutChain(boxes []chainBox, ups func(string) []string) Chain {
	if len(boxes) == 0 {
		return Chain{}
	}
	root := boxes[0].Pipeline
	var others []string
	in := map[string]chainBox{}
	for _, b := range boxes {
		in[b.Pipeline] = b
		if b.Pipeline != root {
			others = append(others, b.Pipeline)
		}
	}
	levels := pipelineLevels(root, others, ups)
	names := append([]string{root}, others...)
	sort.Slice(names, func(i, j int) bool {
		li, lj := levels[names[i]], levels[names[j]]
		if li != lj {
			return li < lj
		}
		return names[i] < names[j]
	})
	var c Chain
	rows := map[int]int{}
	maxLevel, maxRows := 0, 0
	for _, p := range names {
		l := levels[p]
		b := in[p]
		n := ChainNode{Pipeline: p, Level: l, Order: rows[l], State: b.State, Label: b.Label, Broken: b.Broken, URL: b.URL}
		n.X = chainMargin + l*(chainBoxW+chainGapX)
		n.Y = chainMargin + n.Order*(chainBoxH+chainGapY)
		rows[l]++
		maxLevel, maxRows = max(maxLevel, l), max(maxRows, rows[l])
		c.Nodes = append(c.Nodes, n)
	}
	for _, n := range c.Nodes {
		for _, u := range ups(n.Pipeline) {
			ub, ok := in[u]
			if !ok || u == n.Pipeline {
				continue
			}
			inIncident := func(b chainBox) bool { return b.State == ChainBlocked || (b.State == ChainRoot && b.Broken) }
			c.Edges = append(c.Edges, ChainEdge{From: u, To: n.Pipeline, Blocked: inIncident(ub) && inIncident(in[n.Pipeline])})
		}
	}
	sort.Slice(c.Edges, func(i, j int) bool {
		if c.Edges[i].From != c.Edges[j].From {
			return c.Edges[i].From < c.Edges[j].From
		}
		return c.Edges[i].To < c.Edges[j].To
	})
	c.Width = 2*chainMargin + (maxLevel+1)*chainBoxW + maxLevel*chainGapX
	c.Height = 2*chainMargin + maxRows*chainBoxH + max(maxRows-1, 0)*chainGapY
	return c
}

// The boxes' colours: the root broken (red, thick), blocked (amber,
// dashed), the rest neutral (grey).
var chainStyle = map[string]struct{ fill, stroke, width, dash, label string }{
	ChainRoot:    {"#fde3df", "#c0392b", "3", "", "#c0392b"},
	ChainBlocked: {"#fff4dc", "#c77800", "1.5", "6 3", "#8a5300"},
	ChainHealthy: {"#ffffff", "#9aa3b2", "1", "", "#556"},
}

// SVG renders the chain as a standalone SVG document fragment: no script,
// no external reference but the batch pages it links to; every name is
// escaped (control characters and bidi overrides shown as escapes, then
// XML-escaped), so the picture is well-formed XML whatever the names.
func (c Chain) SVG() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chain" id="chain" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="the chain of pipelines of the incident">`+"\n",
		c.Width, c.Height, c.Width, c.Height)
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#7a8291"/></marker>` +
		`<marker id="arrow-blocked" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#c77800"/></marker></defs>` + "\n")
	at := map[string]ChainNode{}
	for _, n := range c.Nodes {
		at[n.Pipeline] = n
	}
	for _, e := range c.Edges {
		u, d := at[e.From], at[e.To]
		stroke, marker := "#7a8291", "arrow"
		if e.Blocked {
			stroke, marker = "#c77800", "arrow-blocked"
		}
		fmt.Fprintf(&b, `<path class="edge" data-from="%s" data-to="%s" d="%s" fill="none" stroke="%s" stroke-width="1.5" marker-end="url(#%s)"/>`+"\n",
			svgEsc(e.From), svgEsc(e.To), edgePath(u, d), stroke, marker)
	}
	for _, n := range c.Nodes {
		st := chainStyle[n.State]
		width := st.width
		class := "node " + n.State
		if n.State == ChainRoot && !n.Broken {
			st = chainStyle[ChainHealthy]
			st.stroke, width = "#c0392b", "1.5"
		}
		if n.Broken {
			class += " broken"
		}
		fmt.Fprintf(&b, `<a href="%s"><g class="%s" data-pipeline="%s" data-state="%s" data-level="%d">`, svgEsc(n.URL), class, svgEsc(n.Pipeline), n.State, n.Level)
		fmt.Fprintf(&b, `<title>%s: %s</title>`, svgEsc(n.Pipeline), svgEsc(n.Label))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" rx="5" fill="%s" stroke="%s" stroke-width="%s"`, n.X, n.Y, chainBoxW, chainBoxH, st.fill, st.stroke, width)
		if st.dash != "" {
			fmt.Fprintf(&b, ` stroke-dasharray="%s"`, st.dash)
		}
		b.WriteString("/>")
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-family="sans-serif" font-size="12" font-weight="600" fill="#1d2330">%s</text>`, n.X+8, n.Y+18, svgEsc(clipRunes(n.Pipeline, chainNameRunes)))
		fmt.Fprintf(&b, `<text class="label" x="%d" y="%d" font-family="sans-serif" font-size="11" fill="%s">%s</text>`, n.X+8, n.Y+36, st.label, svgEsc(clipRunes(n.Label, chainNameRunes+4)))
		b.WriteString("</g></a>\n")
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// edgePath is the arrow from box u to box d: a curve from u's right side
// to d's left side; one that skips levels runs through the gap between
// two rows (the rows line up across the levels, so the gap holds no box)
// and curves out of it into d.
func edgePath(u, d ChainNode) string {
	x1, y1 := u.X+chainBoxW, u.Y+chainBoxH/2
	x2, y2 := d.X, d.Y+chainBoxH/2
	if d.Level-u.Level <= 1 {
		return fmt.Sprintf("M%d,%d C%d,%d %d,%d %d,%d", x1, y1, x1+chainGapX/2, y1, x2-chainGapX/2, y2, x2, y2)
	}
	lane := u.Y + chainBoxH + chainGapY/2 // below u's row, toward d
	if y2 < y1 {
		lane = u.Y - chainGapY/2
	}
	a, z := x1+chainGapX, x2-chainGapX
	return fmt.Sprintf("M%d,%d C%d,%d %d,%d %d,%d L%d,%d C%d,%d %d,%d %d,%d",
		x1, y1, x1+chainGapX/2, y1, x1+chainGapX/2, lane, a, lane, z, lane, z+chainGapX/2, lane, z+chainGapX/2, y2, x2, y2)
}

// svgHTML is the SVG for a page (built here, escaped here).
func (c Chain) svgHTML() template.HTML { return template.HTML(c.SVG()) }

// svgEsc escapes s for SVG text and attributes: control characters and
// bidi overrides as visible escapes (model.EscapeText), then the XML
// specials.
func svgEsc(s string) string { return html.EscapeString(model.EscapeText(s)) }

// clipRunes shortens s to n runes, marking the cut.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
