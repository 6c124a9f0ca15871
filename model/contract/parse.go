package contract

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/handoff-dev/handoff/model"
)

// ParseError is one problem in a contract file, located by file and line.
// Its text reads like a compiler's: "contracts/x.yaml:7: deadlines.finalized:
// ...". Parse returns every problem it finds, joined with errors.Join, so a
// user fixes a file in one pass; errors.As finds the first.
type ParseError struct {
	Source string // the source name given to Parse
	Line   int    // 1-based; 0 when the problem has no line (an empty file)
	Key    string // dotted key path, such as "deadlines.finalized"; "" for the whole file
	Err    error
}

// Error formats the problem as "source:line: key: reason".
func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString(e.Source)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the reason, so errors.Is sees through to causes such as a
// missing time zone.
func (e *ParseError) Unwrap() error { return e.Err }

// MaxFileSize bounds a contract file. Contracts are a few hundred bytes; the
// bound keeps a misplaced data file from being parsed as YAML.
const MaxFileSize = 1 << 20

// Parse parses a contract file (the format of docs/contracts.md). source
// names the file in errors and becomes the contract's Source. Unknown keys
// are errors, so that a misspelt key cannot silently fall back to a default.
//
// Parse has no file system, so a contract whose holidays key names a file
// fails here: load it with LoadFS, which reads the file beside it.
func Parse(source string, data []byte) (*Contract, error) {
	return parse(nil, source, data)
}

// parse parses a contract read from fsys at source (fsys nil: none), so
// that a holidays file is read from the same file system, relative to the
// contract.
func parse(fsys fs.FS, source string, data []byte) (*Contract, error) {
	if len(data) > MaxFileSize {
		return nil, &ParseError{Source: source, Err: fmt.Errorf("file of %d bytes is over the %d-byte limit", len(data), MaxFileSize)}
	}
	root, err := parseYAML(source, data)
	if err != nil {
		return nil, err
	}
	p := &parser{source: source, fsys: fsys}
	c := p.contract(root)
	if err := errors.Join(p.errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// parseYAML returns the single document's root node.
func parseYAML(source string, data []byte) (n *yaml.Node, err error) {
	// yaml.v3 reports some malformed input by panicking; a contract file is
	// user input, so that must surface as an error, not take the process down.
	defer func() {
		if r := recover(); r != nil {
			n, err = nil, &ParseError{Source: source, Err: fmt.Errorf("invalid YAML: %v", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &ParseError{Source: source, Err: errors.New("empty contract: want at least pipeline: <name>")}
		}
		return nil, yamlError(source, err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, &ParseError{Source: source, Line: next.Line, Err: errors.New("more than one YAML document: want one contract per file")}
	case !errors.Is(err, io.EOF):
		return nil, yamlError(source, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &ParseError{Source: source, Err: errors.New("empty contract: want at least pipeline: <name>")}
	}
	return doc.Content[0], nil
}

// yamlError turns "yaml: line 3: did not find expected key" into a
// ParseError at line 3.
func yamlError(source string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if i := strings.Index(rest, ": "); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil {
				line, msg = n, rest[i+2:]
			}
		}
	}
	return &ParseError{Source: source, Line: line, Err: fmt.Errorf("invalid YAML: %s", msg)}
}

// parser collects the problems of one file.
type parser struct {
	source string
	fsys   fs.FS // where holiday files are read; nil in Parse
	errs   []error
}

func (p *parser) fail(n *yaml.Node, key string, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.errs = append(p.errs, &ParseError{Source: p.source, Line: line, Key: key, Err: fmt.Errorf(format, args...)})
}

func (p *parser) failErr(n *yaml.Node, key string, err error) {
	p.errs = append(p.errs, &ParseError{Source: p.source, Line: n.Line, Key: key, Err: err})
}

// entry is one key of a mapping, with its value.
type entry struct {
	key   string
	kn, v *yaml.Node
}

// resolve follows aliases, so that anchors work as YAML users expect.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 8; i++ {
		n = n.Alias
	}
	return n
}

// mapping returns the entries of a mapping node in order, reporting
// non-string, unknown and duplicate keys. known lists the allowed keys; nil
// allows any.
func (p *parser) mapping(n *yaml.Node, path string, known []string) []entry {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		p.fail(n, path, "want a mapping of keys to values, got %s", describe(n))
		return nil
	}
	var out []entry
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		full := join(path, kn.Value)
		if kn.Kind != yaml.ScalarNode {
			p.fail(kn, path, "want a key, got %s", describe(kn))
			continue
		}
		if first, dup := seen[kn.Value]; dup {
			p.fail(kn, full, "duplicate key (first set at line %d)", first)
			continue
		}
		seen[kn.Value] = kn.Line
		if known != nil && !contains(known, kn.Value) {
			p.fail(kn, full, "unknown key (want %s)", strings.Join(known, ", "))
			continue
		}
		out = append(out, entry{key: kn.Value, kn: kn, v: v})
	}
	return out
}

func hasKey(entries []entry, key string) bool {
	for _, e := range entries {
		if e.key == key {
			return true
		}
	}
	return false
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// describe names a node's kind for error messages.
func describe(n *yaml.Node) string {
	switch {
	case n == nil:
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		return "no value"
	case n.Kind == yaml.ScalarNode:
		return strconv.Quote(n.Value)
	}
	return "an alias"
}

// str returns a non-empty scalar's text.
func (p *parser) str(n *yaml.Node, key string) (string, bool) {
	switch {
	case n.Kind == yaml.MappingNode && isTemplateKey(key):
		// batch_id: {yyyymmdd} without quotes is a YAML flow mapping.
		p.fail(n, key, "want a string, got a mapping (quote templates: %s: \"{yyyymmdd}\")", key)
		return "", false
	case n.Kind != yaml.ScalarNode:
		p.fail(n, key, "want a string, got %s", describe(n))
		return "", false
	case n.Tag == "!!null" || n.Value == "":
		p.fail(n, key, "must not be empty")
		return "", false
	}
	return n.Value, true
}

func isTemplateKey(key string) bool { return key == "batch_id" || key == "artifact" || key == "signal" }

var topKeys = []string{"pipeline", "schedule", "timezone", "holidays", "batch_id", "artifact", "signal", "required", "deadlines", "rows", "owner", "severity", "labels", "signal_content", "openlineage", "reruns", "allowed_lateness", "for", "upstreams"}

func (p *parser) contract(root *yaml.Node) *Contract {
	c := Default("")
	c.Source = p.source
	root = resolve(root)
	if root == nil || root.Kind != yaml.MappingNode {
		p.fail(root, "", "want a mapping of keys to values, got %s", describe(root))
		return c
	}
	entries := p.mapping(root, "", topKeys)
	// Deadlines depend on the required set, templates and holidays on the
	// schedule, wherever they appear in the file.
	var deadlines, holidays, schedule *entry
	var templates []entry
	hasPipeline := false
	for i := range entries {
		e := &entries[i]
		switch e.key {
		case "pipeline":
			hasPipeline = true
			s, ok := p.str(e.v, e.key)
			if !ok {
				continue
			}
			if err := model.CheckName("pipeline", s); err != nil {
				p.fail(e.v, e.key, "%q: %s", s, reason(err))
				continue
			}
			c.Pipeline = s
		case "schedule":
			schedule = e
			s, ok := p.str(e.v, e.key)
			if !ok {
				continue
			}
			if cal, ok := namedCron(Schedule(s)); ok {
				c.Schedule, c.cron = Schedule(s), &cal
				continue
			}
			if !strings.ContainsAny(s, " \t") && !strings.HasPrefix(s, "@") {
				p.fail(e.v, e.key, "unknown schedule %q (want daily, weekdays, hourly or a cron expression such as \"30 6 * * 1-5\", or leave it out)", s)
				continue
			}
			cal, err := ParseCron(s)
			if err != nil {
				p.failErr(e.v, e.key, err)
				continue
			}
			c.Schedule, c.cron = Schedule(cal.String()), &cal
		case "timezone":
			s, ok := p.str(e.v, e.key)
			if !ok {
				continue
			}
			loc, err := loadLocation(s)
			if err != nil {
				p.failErr(e.v, e.key, err)
				continue
			}
			c.Location = loc
		case "holidays":
			holidays = e
		case "batch_id", "artifact", "signal":
			templates = append(templates, *e)
		case "owner":
			s, ok := p.str(e.v, e.key)
			if !ok {
				continue
			}
			if err := checkText(s); err != nil {
				p.fail(e.v, e.key, "%q: %v", s, err)
				continue
			}
			c.Owner = s
		case "severity":
			s, ok := p.str(e.v, e.key)
			if !ok {
				continue
			}
			switch s {
			case SeverityCritical, SeverityWarning, SeverityInfo:
				c.Severity = s
			default:
				p.fail(e.v, e.key, "unknown severity %q (want critical, warning or info)", s)
			}
		case "labels":
			c.Labels = p.labels(e.v)
		case "for":
			p.hold(e, c)
		case "openlineage":
			p.openLineage(e.v, c)
		case "signal_content":
			s, ok := p.str(e.v, e.key)
			if !ok {
				continue
			}
			switch SignalContent(s) {
			case SignalEmpty, SignalManifest:
				c.SignalContent = SignalContent(s)
			default:
				p.fail(e.v, e.key, "unknown signal content %q (want empty or manifest)", s)
			}
		case "required":
			if set, ok := p.required(e.v); ok {
				c.Required = set
			}
		case "deadlines":
			deadlines = e
		case "rows":
			p.rows(e.v, &c.Rows)
		case "reruns", "allowed_lateness":
			p.attempts(e, c)
		case "upstreams":
			p.upstreams(e.v, c)
		}
	}
	if !hasPipeline {
		p.fail(root, "", "missing pipeline: every contract names its pipeline")
	}
	for _, e := range templates {
		s, ok := p.str(e.v, e.key)
		if !ok {
			continue
		}
		t, err := p.template(e.key, s, c)
		if err != nil {
			p.failErr(e.v, e.key, err)
			continue
		}
		switch e.key {
		case "batch_id":
			c.BatchID = t
		case "artifact":
			c.Artifact = t
		case "signal":
			c.Signal = t
		}
	}
	if c.cron != nil && c.BatchID.IsZero() && !hasKey(templates, "batch_id") {
		if _, okH := c.cron.singleHour(); !okH {
			p.fail(schedule.v, "schedule", "%q fires in more than one hour of a day, so batch ids must name the hour: add batch_id: \"{yyyymmdd}{hh}\"", c.Schedule)
		} else if _, okM := c.cron.singleMinute(); !okM {
			p.fail(schedule.v, "schedule", "%q fires at more than one minute of an hour, so batch ids must name the minute: add batch_id: \"{yyyymmdd}{hh}{mi}\"", c.Schedule)
		}
	}
	if holidays != nil {
		p.holidays(holidays, c)
	}
	var artifact, signal *entry
	for i := range templates {
		switch templates[i].key {
		case "artifact":
			artifact = &templates[i]
		case "signal":
			signal = &templates[i]
		}
	}
	p.checkNames(c, artifact, signal)
	if deadlines != nil {
		p.deadlines(deadlines.v, c)
	}
	return c
}

// reason returns the reason of a model.ValidationError, without the field
// name and value the caller reports itself.
func reason(err error) string {
	var ve *model.ValidationError
	if errors.As(err, &ve) {
		return ve.Reason
	}
	return err.Error()
}

// LoadZones loads time zones by name from the zone database, under the
// rules a contract's timezone is loaded by.
func LoadZones(names []string) ([]*time.Location, error) {
	out := make([]*time.Location, 0, len(names))
	for _, n := range names {
		loc, err := loadLocation(n)
		if err != nil {
			return nil, err
		}
		out = append(out, loc)
	}
	return out, nil
}

// loadLocation is time.LoadLocation minus the names that do not name one
// zone everywhere.
func loadLocation(name string) (*time.Location, error) {
	if name == "Local" {
		return nil, fmt.Errorf("%q is the zone of whichever machine runs handoff; name an IANA zone such as Asia/Shanghai", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q: want an IANA name such as Asia/Shanghai or UTC (the zone database may be missing on this machine: %w)", name, err)
	}
	return loc, nil
}

// template parses a name template and checks that the names it renders tell
// batches apart under c's schedule.
func (p *parser) template(key, s string, c *Contract) (Template, error) {
	t, err := ParseTemplate(s)
	if err != nil {
		return Template{}, err
	}
	if t.usesTime() && (c.cron == nil || c.Schedule == Daily || c.Schedule == Weekdays) {
		return Template{}, fmt.Errorf("%q: {hh} and {mi} name the time of a firing, which needs schedule: hourly or a cron expression", s)
	}
	datePart := t.Uses("business_date") || t.Uses("yyyymmdd") || (t.Uses("yyyy") && t.Uses("mm") && t.Uses("dd"))
	if key == "batch_id" {
		if t.Uses("batch_id") {
			return Template{}, fmt.Errorf("%q: a batch id cannot derive from itself: use date placeholders such as {yyyymmdd}", s)
		}
		if !datePart {
			return Template{}, fmt.Errorf("%q: does not use the business date ({yyyymmdd}, {business_date} or {yyyy}{mm}{dd}), so every batch would get the same id", s)
		}
		if c.cron != nil {
			if _, ok := c.cron.singleHour(); !ok && !t.Uses("hh") {
				return Template{}, fmt.Errorf("%q: does not use {hh}, but schedule %q fires in more than one hour of a day, so its batches would share ids (write \"{yyyymmdd}{hh}\")", s, c.Schedule)
			}
			if _, ok := c.cron.singleMinute(); !ok && !t.Uses("mi") {
				return Template{}, fmt.Errorf("%q: does not use {mi}, but schedule %q fires at more than one minute of an hour, so its batches would share ids (write \"{yyyymmdd}{hh}{mi}\")", s, c.Schedule)
			}
		}
		// The rendered id must be a valid batch_id of the wire format.
		id := t.renderAt(model.BatchKey{Pipeline: "p", BusinessDate: model.Date{Year: 2026, Month: 9, Day: 30}}, 23, 59)
		if err := model.CheckName("batch_id", id); err != nil {
			return Template{}, fmt.Errorf("%q renders %q: %s", s, id, reason(err))
		}
		return t, nil
	}
	if err := checkNameTemplate(t); err != nil {
		return Template{}, err
	}
	if !t.Uses("batch_id") && !datePart {
		return Template{}, fmt.Errorf("%q: does not use {batch_id} or the business date, so names cannot tell batches apart", s)
	}
	return t, nil
}

// nameSamples are the batches a contract's names are rendered for at load:
// the first and last minute of a day, and a long batch id where the
// contract does not derive ids (they are then whatever the producer sends).
func nameSamples(c *Contract) []model.BatchKey {
	pipeline := c.Pipeline
	if pipeline == "" {
		pipeline = "p"
	}
	date := model.Date{Year: 2026, Month: 9, Day: 30}
	var out []model.BatchKey
	for _, at := range [][2]int{{0, 0}, {23, 59}} {
		k := model.BatchKey{Pipeline: pipeline, BusinessDate: date, BatchID: date.Compact()}
		if !c.BatchID.IsZero() {
			k.BatchID = c.BatchID.renderAt(k, at[0], at[1])
		}
		out = append(out, k)
	}
	return out
}

// checkNames renders the artifact and signal templates for sample batches:
// each must render a valid file name, and the two must never render the
// same name ("a_{batch_id}.csv" and "a_{yyyymmdd}.csv" do whenever the id
// is the date): the signal would be the data file.
func (p *parser) checkNames(c *Contract, artifact, signal *entry) {
	bad := false
	for _, e := range []*entry{artifact, signal} {
		if e == nil {
			continue
		}
		t := c.Artifact
		if e.key == "signal" {
			t = c.Signal
		}
		if t.IsZero() {
			continue
		}
		for i, k := range nameSamples(c) {
			name := t.renderAt(k, 23*i, 59*i)
			if err := CheckFileName(name); err != nil {
				p.fail(e.v, e.key, "%q %v (for batch %s)", t.text, err, k)
				bad = true
				break
			}
		}
	}
	if bad || artifact == nil || signal == nil || c.Artifact.IsZero() || c.Signal.IsZero() {
		return
	}
	for i, k := range nameSamples(c) {
		a, s := c.Artifact.renderAt(k, 23*i, 59*i), c.Signal.renderAt(k, 23*i, 59*i)
		if a == s {
			p.fail(signal.v, "signal", "%q renders %q for batch %s, the same name as artifact %q (line %d): the signal and the data file need different names", c.Signal.text, s, k, c.Artifact.text, artifact.v.Line)
			return
		}
	}
}

func (p *parser) required(n *yaml.Node) (model.BoundarySet, bool) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		p.fail(n, "required", "want a list of boundaries such as [produced, finalized], got %s", describe(n))
		return 0, false
	}
	if len(n.Content) == 0 {
		p.fail(n, "required", "empty list: require at least one boundary, or leave the key out for all seven")
		return 0, false
	}
	var set model.BoundarySet
	ok := true
	for _, item := range n.Content {
		item = resolve(item)
		if item.Kind != yaml.ScalarNode {
			p.fail(item, "required", "want a boundary name, got %s", describe(item))
			ok = false
			continue
		}
		b, err := model.ParseBoundary(item.Value)
		if err != nil {
			p.failErr(item, "required", err)
			ok = false
			continue
		}
		if set.Has(b) {
			p.fail(item, "required", "%s listed twice", b)
			ok = false
			continue
		}
		set = set.With(b)
	}
	return set, ok
}

func (p *parser) deadlines(n *yaml.Node, c *Contract) {
	var names []string
	for _, b := range model.Ladder {
		names = append(names, b.String())
	}
	for _, e := range p.mapping(n, "deadlines", names) {
		key := "deadlines." + e.key
		b, _ := model.ParseBoundary(e.key) // mapping accepted only known names
		if !c.Required.Has(b) {
			p.fail(e.kn, key, "%s is not a required boundary: add it to required or drop the deadline", b)
			continue
		}
		s, ok := p.str(e.v, key)
		if !ok {
			continue
		}
		d, err := ParseDeadline(s)
		if err != nil {
			p.failErr(e.v, key, err)
			continue
		}
		if d.Kind == AfterStart && c.cron == nil {
			p.fail(e.v, key, "%q: a batch has a start only under a schedule: add schedule: or use \"business_date + 1d 06:00\"", s)
			continue
		}
		c.Deadlines[b] = d
	}
}

func (p *parser) rows(n *yaml.Node, r *RowRule) {
	for _, e := range p.mapping(n, "rows", []string{"min", "equal", "header"}) {
		key := "rows." + e.key
		v := e.v
		switch e.key {
		case "min":
			var min int64
			if v.Kind != yaml.ScalarNode || v.Tag != "!!int" || v.Decode(&min) != nil {
				p.fail(v, key, "want a whole number, got %s", describe(v))
				continue
			}
			if min < 0 {
				p.fail(v, key, "%d: must not be negative", min)
				continue
			}
			r.Min, r.HasMin = min, true
		case "equal":
			var eq bool
			if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" || v.Decode(&eq) != nil {
				p.fail(v, key, "want true or false, got %s", describe(v))
				continue
			}
			r.Equal = eq
		case "header":
			var h bool
			if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" || v.Decode(&h) != nil {
				p.fail(v, key, "want true or false, got %s", describe(v))
				continue
			}
			r.Header = h
		}
	}
}

// ParseDeadline parses a deadline as written in a contract:
//
//	business_date + 1d 06:00   absolute: days after the business date, then a
//	                           time of day in the contract's time zone
//	business_date 18:30        absolute, on the business date itself
//	+30m                       relative: a Go duration after the previous
//	                           required boundary
//	start + 90m                a Go duration after the batch's start
//	                           (see Contract.Start); needs a schedule
//
// "1d" may also be written "1 day" or "2 days"; the time of day is HH:MM or
// HH:MM:SS and defaults to 00:00.
func ParseDeadline(s string) (Deadline, error) {
	text := strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(text, "+"); ok {
		return parseRelative(s, strings.TrimSpace(rest))
	}
	if rest, ok := strings.CutPrefix(text, "business_date"); ok {
		return parseAbsolute(s, strings.TrimSpace(rest))
	}
	if rest, ok := strings.CutPrefix(text, "start"); ok {
		dur, ok := strings.CutPrefix(strings.TrimSpace(rest), "+")
		if !ok {
			return Deadline{}, fmt.Errorf("%q: want a duration after the batch's start, as in \"start + 90m\"", s)
		}
		d, err := parseRelative(s, strings.TrimSpace(dur))
		if err != nil {
			return Deadline{}, err
		}
		d.Kind = AfterStart
		return d, nil
	}
	return Deadline{}, fmt.Errorf("%q: want \"business_date + 1d 06:00\" (absolute), \"+30m\" (after the previous required boundary) or \"start + 90m\" (after the batch's start)", s)
}

func parseRelative(s, dur string) (Deadline, error) {
	d, err := time.ParseDuration(dur)
	if err != nil {
		// "time: unknown unit "x" in duration "30x"" reads better without the
		// package prefix and the repeated value.
		msg := strings.TrimPrefix(err.Error(), "time: ")
		msg = strings.TrimSuffix(msg, " "+strconv.Quote(dur))
		if strings.Contains(msg, `unit "d"`) {
			msg += ` (durations stop at hours: write +24h)`
		}
		return Deadline{}, fmt.Errorf("%q: %s", s, msg)
	}
	if d <= 0 {
		return Deadline{}, fmt.Errorf("%q: must be a positive duration", s)
	}
	return Deadline{Kind: Relative, After: d, Text: s}, nil
}

func parseAbsolute(s, rest string) (Deadline, error) {
	d := Deadline{Kind: Absolute, Text: s}
	bad := func(why string) (Deadline, error) {
		return Deadline{}, fmt.Errorf("%q: %s", s, why)
	}
	if r, ok := strings.CutPrefix(rest, "+"); ok {
		r = strings.TrimSpace(r)
		i := 0
		for i < len(r) && r[i] >= '0' && r[i] <= '9' {
			i++
		}
		if i == 0 {
			return bad(`want a number of days after '+', as in "business_date + 1d 06:00"`)
		}
		if i > 4 {
			return bad("too many days (at most 9999)")
		}
		n, _ := strconv.Atoi(r[:i])
		r = strings.TrimSpace(r[i:])
		unit, after, _ := strings.Cut(r, " ")
		switch unit {
		case "d", "day", "days":
		case "":
			return bad("missing unit after the number of days (want d, day or days)")
		default:
			return bad(fmt.Sprintf("unknown unit %q after the number of days (want d, day or days)", unit))
		}
		d.Days = n
		rest = strings.TrimSpace(after)
	} else if strings.HasPrefix(rest, "-") {
		return bad("a deadline cannot fall before the business date")
	}
	if rest == "" {
		return d, nil
	}
	tod, err := parseTimeOfDay(rest)
	if err != nil {
		return bad(err.Error())
	}
	d.TimeOfDay = tod
	return d, nil
}

// parseTimeOfDay parses HH:MM or HH:MM:SS, 00:00 to 23:59:59.
func parseTimeOfDay(s string) (time.Duration, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, fmt.Errorf("bad time of day %q (want HH:MM, 00:00 to 23:59)", s)
	}
	limits := []int{24, 60, 60}
	units := []time.Duration{time.Hour, time.Minute, time.Second}
	var tod time.Duration
	for i, part := range parts {
		if len(part) != 2 || part[0] < '0' || part[0] > '9' || part[1] < '0' || part[1] > '9' {
			return 0, fmt.Errorf("bad time of day %q (want HH:MM, 00:00 to 23:59)", s)
		}
		v := int(part[0]-'0')*10 + int(part[1]-'0')
		if v >= limits[i] {
			return 0, fmt.Errorf("time of day %q out of range (want 00:00 to 23:59)", s)
		}
		tod += time.Duration(v) * units[i]
	}
	return tod, nil
}
