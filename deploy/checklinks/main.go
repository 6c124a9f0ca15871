// Command checklinks checks that every relative link and #anchor in the
// project's Markdown resolves: the README and docs/ are written by many
// hands and sections move between them, and a moved heading silently breaks
// every link to it. It reads only local files (no network), so `make vet`
// can run it on every change (deploy/check-links.sh).
//
// Usage: go run ./deploy/checklinks FILE.md...
//
// A link is checked when it is relative (no scheme): its path must exist,
// relative to the file it is in, and an anchor into a Markdown file must
// name one of that file's headings the way GitHub derives anchors from them.
// Links inside fenced code blocks and inline code are not links.
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: checklinks FILE.md...")
		os.Exit(2)
	}
	if n := check(os.Args[1:], os.Stderr); n > 0 {
		fmt.Fprintf(os.Stderr, "checklinks: %d broken links (above): fix the path or the #anchor (GitHub's heading slug)\n", n)
		os.Exit(1)
	}
}

// check reports each broken link in files to w and returns how many there are.
func check(files []string, w io.Writer) int {
	anchors := map[string]map[string]bool{} // Markdown file -> its anchors, read once
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := anchors[path]; ok {
			return a, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		a := headingAnchors(string(b))
		anchors[path] = a
		return a, nil
	}
	broken := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintf(w, "%s: %v\n", f, err)
			broken++
			continue
		}
		for _, l := range links(string(b)) {
			if msg := resolve(f, l.target, anchorsOf); msg != "" {
				fmt.Fprintf(w, "%s:%d: link %q: %s\n", f, l.line, l.target, msg)
				broken++
			}
		}
	}
	return broken
}

// resolve returns why target, a link found in file from, does not resolve,
// or "" when it does (or is not a relative link).
func resolve(from, target string, anchorsOf func(string) (map[string]bool, error)) string {
	if target == "" || strings.Contains(strings.SplitN(target, "#", 2)[0], "://") ||
		strings.HasPrefix(target, "mailto:") {
		return ""
	}
	path, anchor, _ := strings.Cut(target, "#")
	dest := from
	if path != "" {
		dest = filepath.Join(filepath.Dir(from), filepath.FromSlash(path))
		if _, err := os.Stat(dest); err != nil {
			return fmt.Sprintf("%s does not exist", dest)
		}
	}
	if anchor == "" || !strings.HasSuffix(dest, ".md") {
		return ""
	}
	a, err := anchorsOf(dest)
	if err != nil {
		return err.Error()
	}
	if !a[anchor] {
		return fmt.Sprintf("no heading of %s has the anchor #%s", dest, anchor)
	}
	return ""
}

type link struct {
	line   int
	target string
}

var (
	inlineLink = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	refLink    = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	htmlName   = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
)

// links returns the link targets of a Markdown text, outside code.
func links(text string) []link {
	var out []link
	fence := ""
	for i, line := range strings.Split(text, "\n") {
		if f := fenceOf(line); f != "" {
			switch {
			case fence == "":
				fence = f
			case strings.HasPrefix(f, fence) && strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), f[:1])) == "":
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		if m := refLink.FindStringSubmatch(line); m != nil {
			out = append(out, link{i + 1, m[1]})
			continue
		}
		line = codeSpan.ReplaceAllString(line, "")
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			out = append(out, link{i + 1, m[1]})
		}
	}
	return out
}

// fenceOf returns the fence (``` or ~~~, any longer run) a line opens or
// closes with, or "".
func fenceOf(line string) string {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return ""
	}
	for _, c := range []string{"`", "~"} {
		n := len(t) - len(strings.TrimLeft(t, c))
		if n >= 3 {
			return strings.Repeat(c, n)
		}
	}
	return ""
}

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown text (ATX headings outside code, plus explicit <a name>/<a id>).
func headingAnchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fence := ""
	for _, line := range strings.Split(text, "\n") {
		if f := fenceOf(line); f != "" {
			switch {
			case fence == "":
				fence = f
			case strings.HasPrefix(f, fence):
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		for _, m := range htmlName.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		t := strings.TrimLeft(line, " ")
		if len(line)-len(t) > 3 || !strings.HasPrefix(t, "#") {
			continue
		}
		level := len(t) - len(strings.TrimLeft(t, "#"))
		rest := t[level:]
		if level > 6 || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		s := slug(rest)
		if n, dup := seen[s]; dup {
			seen[s] = n + 1
			s = fmt.Sprintf("%s-%d", s, n+1)
		} else {
			seen[s] = 0
		}
		out[s] = true
	}
	return out
}

var (
	closingHashes = regexp.MustCompile(`\s+#+\s*$`)
	linkText      = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// slug derives GitHub's anchor from a heading's text: the text of links
// kept, lower case, every character but letters, digits, '_', '-' and
// spaces dropped, spaces turned into '-'.
func slug(heading string) string {
	h := strings.TrimSpace(closingHashes.ReplaceAllString(heading, ""))
	h = linkText.ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
