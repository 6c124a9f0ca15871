// Package examples finds the command examples of the project's Markdown
// (README.md and docs/*.md) so that a test can run every one of them as
// written: a reader copies them, so each must work or say why it cannot.
//
// An example is a fenced block whose language is sh, bash or shell (the
// whole block is a script) or console (the lines that start with "$ " are
// commands, the rest is output). A marker on the line just above the fence
// says how it runs:
//
//	<!-- example: exit 1 -->           it must exit with that status
//	<!-- example: daemon -->           a server: still running after a few seconds is a pass
//	<!-- example: skip: REASON -->     not run, for the reason given (a production address, ...)
//
// No marker: the example must exit 0.
package examples

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Mode is how an example runs.
type Mode int

const (
	// Run: the example must exit 0.
	Run Mode = iota
	// Exit: the example must exit with Example.Exit.
	Exit
	// Daemon: the example starts a server; it passes when it is still
	// running after a few seconds (or exits 0 before).
	Daemon
	// Skip: not run; Example.Reason says why.
	Skip
)

// Example is one command example of a Markdown file.
type Example struct {
	File   string // as given to Parse
	Line   int    // of the opening fence, from 1
	Lang   string
	Script string // the commands, as bash runs them
	Mode   Mode
	Exit   int    // with Mode Exit
	Reason string // with Mode Skip
}

// Where is the example's place, "FILE:LINE".
func (e *Example) Where() string { return e.File + ":" + strconv.Itoa(e.Line) }

const marker = "<!-- example:"

// Parse returns the examples of one Markdown file, in order. A marker that
// does not parse, or one not followed by an example, is an error naming
// its line: a mistyped marker must not silently turn into "run".
func Parse(file string, r io.Reader) ([]Example, error) {
	var (
		out     []Example
		sc      = bufio.NewScanner(r)
		n       int
		pending *Example // a marker waiting for its block
		pendAt  int
		fence   string // the opening fence while inside a block
		cur     *Example
		body    []string
	)
	misplaced := func() error {
		return fmt.Errorf("%s:%d: example marker not directly above a sh, bash, shell or console block", file, pendAt)
	}
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, "`~") == "" {
				if cur != nil {
					cur.Script = script(cur.Lang, body)
					out = append(out, *cur)
				}
				fence, cur, body = "", nil, nil
			} else {
				body = append(body, line)
			}
			continue
		}
		if trimmed == "" {
			continue
		}
		if f, lang, ok := opening(trimmed); ok {
			fence = f
			if isShell(lang) {
				cur = &Example{File: file, Line: n, Lang: lang, Mode: Run}
				if pending != nil {
					cur.Mode, cur.Exit, cur.Reason = pending.Mode, pending.Exit, pending.Reason
					pending = nil
				}
			} else if pending != nil {
				return nil, misplaced()
			}
			continue
		}
		if pending != nil {
			return nil, misplaced()
		}
		if strings.HasPrefix(trimmed, marker) {
			m, err := parseMarker(trimmed)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", file, n, err)
			}
			pending, pendAt = &m, n
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: line %d: %w", file, n+1, err)
	}
	if fence != "" {
		return nil, fmt.Errorf("%s: the block opened with %s is never closed", file, fence)
	}
	if pending != nil {
		return nil, misplaced()
	}
	return out, nil
}

func parseMarker(s string) (Example, error) {
	body, ok := strings.CutSuffix(strings.TrimPrefix(s, marker), "-->")
	if !ok {
		return Example{}, fmt.Errorf("example marker %q: want <!-- example: exit N | daemon | skip: REASON -->", s)
	}
	body = strings.TrimSpace(body)
	switch {
	case body == "daemon":
		return Example{Mode: Daemon}, nil
	case strings.HasPrefix(body, "exit "):
		code, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(body, "exit ")))
		if err != nil || code < 0 || code > 255 {
			return Example{}, fmt.Errorf("example marker %q: exit wants a status 0-255", s)
		}
		return Example{Mode: Exit, Exit: code}, nil
	case strings.HasPrefix(body, "skip:"):
		reason := strings.TrimSpace(strings.TrimPrefix(body, "skip:"))
		if reason == "" {
			return Example{}, fmt.Errorf("example marker %q: skip wants a reason", s)
		}
		return Example{Mode: Skip, Reason: reason}, nil
	}
	return Example{}, fmt.Errorf("example marker %q: want exit N, daemon or skip: REASON", s)
}

// opening reports whether line opens a fenced block, with its fence and
// language.
func opening(line string) (fence, lang string, ok bool) {
	for _, f := range []string{"```", "~~~"} {
		if strings.HasPrefix(line, f) {
			i := len(f)
			for i < len(line) && line[i] == f[0] {
				i++
			}
			lang, _, _ = strings.Cut(strings.TrimSpace(line[i:]), " ")
			return line[:i], lang, true
		}
	}
	return "", "", false
}

func isShell(lang string) bool {
	switch lang {
	case "sh", "bash", "shell", "console":
		return true
	}
	return false
}

// script is what bash runs for a block: the block itself, or for a
// console transcript its "$ " lines (a line ending in \ continues).
func script(lang string, body []string) string {
	if lang != "console" {
		return strings.Join(body, "\n") + "\n"
	}
	var b strings.Builder
	cont := false
	for _, l := range body {
		switch {
		case cont:
			b.WriteString(l + "\n")
		case strings.HasPrefix(l, "$ "):
			b.WriteString(strings.TrimPrefix(l, "$ ") + "\n")
		default:
			continue
		}
		cont = strings.HasSuffix(l, "\\")
	}
	return b.String()
}
