package contract

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/handoff-dev/handoff/model"
)

// MaxHolidays bounds a contract's holiday list: a century of public
// holidays is a few thousand dates.
const MaxHolidays = 10000

// holidays reads the holidays key: a list of dates, or the path of a file
// (relative to the contract file) with one date per line.
func (p *parser) holidays(e *entry, c *Contract) {
	if c.cron == nil {
		p.fail(e.kn, "holidays", "holidays remove dates from a schedule, and this contract has none: add schedule: or drop holidays")
		return
	}
	n := e.v
	var dates []model.Date
	switch {
	case n.Kind == yaml.SequenceNode:
		for _, item := range n.Content {
			item = resolve(item)
			if item.Kind != yaml.ScalarNode {
				p.fail(item, "holidays", "want a date YYYY-MM-DD, got %s", describe(item))
				continue
			}
			d, err := model.ParseDate(item.Value)
			if err != nil {
				p.fail(item, "holidays", "%q: %v", item.Value, err)
				continue
			}
			dates = append(dates, d)
		}
	case n.Kind == yaml.ScalarNode && n.Tag != "!!null" && n.Value != "":
		dates = p.holidayFile(n, n.Value)
	default:
		p.fail(n, "holidays", "want a list of dates such as [2026-10-01] or the path of a file of dates, got %s", describe(n))
		return
	}
	if len(dates) > MaxHolidays {
		p.fail(n, "holidays", "%d dates: more than %d", len(dates), MaxHolidays)
		return
	}
	sort.Slice(dates, func(i, j int) bool { return dates[i].Compare(dates[j]) < 0 })
	c.Holidays = dates[:0:0]
	for i, d := range dates {
		if i == 0 || d != dates[i-1] {
			c.Holidays = append(c.Holidays, d)
		}
	}
}

// holidayFile reads a file of dates named in the contract at node n. Its
// problems are located in the holiday file itself, by line.
func (p *parser) holidayFile(n *yaml.Node, name string) []model.Date {
	if p.fsys == nil {
		p.fail(n, "holidays", "%q: a holidays file is read beside the contract: load contracts with LoadFS", name)
		return nil
	}
	if path.IsAbs(name) || strings.Contains(name, "\\") {
		p.fail(n, "holidays", "%q: want a path relative to the contract file, with forward slashes", name)
		return nil
	}
	full := path.Join(path.Dir(p.source), name)
	data, err := readSmall(p.fsys, full)
	if err != nil {
		p.fail(n, "holidays", "reading %q: %v", full, err)
		return nil
	}
	var dates []model.Date
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		d, err := model.ParseDate(text)
		if err != nil {
			p.errs = append(p.errs, &ParseError{Source: full, Line: line, Key: "holidays", Err: fmt.Errorf("%q: %v (want one date YYYY-MM-DD per line, # for comments)", text, err)})
			continue
		}
		dates = append(dates, d)
	}
	if err := sc.Err(); err != nil {
		p.fail(n, "holidays", "reading %q: %v", full, err)
	}
	return dates
}

// readSmall reads a file of at most MaxFileSize bytes: a holiday list is
// small, and a misplaced data file must not be read whole.
func readSmall(fsys fs.FS, name string) ([]byte, error) {
	if info, err := fs.Stat(fsys, name); err == nil && info.Size() > MaxFileSize {
		return nil, fmt.Errorf("file of %d bytes is over the %d-byte limit", info.Size(), MaxFileSize)
	}
	return fs.ReadFile(fsys, name)
}
