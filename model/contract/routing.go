package contract

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"gopkg.in/yaml.v3"
)

// reservedLabels are the labels handoff sets on every alert itself; a
// contract label of the same name would make routing ambiguous.
var reservedLabels = []string{"alertname", "pipeline", "batch", "business_date", "batch_id", "boundary", "kind", "status", "verdict", "severity", "owner"}

// labels reads the labels mapping.
func (p *parser) labels(n *yaml.Node) map[string]string {
	entries := p.mapping(n, "labels", nil)
	if len(entries) == 0 {
		return nil
	}
	out := make(map[string]string, len(entries))
	for _, e := range entries {
		key := "labels." + e.key
		if err := checkLabelName(e.key); err != nil {
			p.fail(e.kn, key, "%v", err)
			continue
		}
		if contains(reservedLabels, e.key) {
			p.fail(e.kn, key, "handoff sets this label itself (reserved: %s); use the contract's own key or another name", strings.Join(reservedLabels, ", "))
			continue
		}
		if e.v.Kind != yaml.ScalarNode || e.v.Tag == "!!null" {
			p.fail(e.v, key, "want a string, got %s", describe(e.v))
			continue
		}
		if err := checkText(e.v.Value); err != nil {
			p.fail(e.v, key, "%q: %v", e.v.Value, err)
			continue
		}
		out[e.key] = e.v.Value
	}
	return out
}

// checkLabelName checks a Prometheus label name: [a-zA-Z_][a-zA-Z0-9_]*,
// and not starting with "__", which Prometheus keeps for itself.
func checkLabelName(s string) error {
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return errors.New("bad label name: want letters, digits and _, not starting with a digit ([a-zA-Z_][a-zA-Z0-9_]*)")
		}
	}
	if strings.HasPrefix(s, "__") {
		return errors.New("label names starting with __ are reserved by Prometheus")
	}
	return nil
}

// maxText bounds owner and label values: they travel in every alert.
const maxText = 256

// checkText checks a free text routing value: one line, printable, short.
func checkText(s string) error {
	if len(s) > maxText {
		return fmt.Errorf("%d bytes: at most %d", len(s), maxText)
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return errors.New("must be one line of printable text")
		}
	}
	return nil
}

// MaxFor bounds a contract's for: a finding held longer than a day is a
// finding nobody hears of.
const MaxFor = 24 * time.Hour

// hold reads for: a Go duration from 0 to MaxFor.
func (p *parser) hold(e *entry, c *Contract) {
	s, ok := p.str(e.v, e.key)
	if !ok {
		return
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		p.fail(e.v, e.key, "%q: want a Go duration such as 10m or 90s (how long a finding stays open before it pages)", s)
		return
	}
	if d < 0 || d > MaxFor {
		p.fail(e.v, e.key, "%q: want 0 to %s", s, MaxFor)
		return
	}
	c.For, c.HasFor = d, true
}
