// Package prometheus holds handoff's Prometheus configuration (rules.yml,
// prometheus.yml) and its tests: promtool checks both files and runs the
// rule unit tests of tests.yml, and every rule must have a unit test and
// read only metrics that handoff's code registers.
package prometheus

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/handoff-dev/handoff/internal/testenv"
)

// promtool returns the path of promtool or fails the test with how to get
// it (deploy/services/alertmanager.sh installs Debian's prometheus package).
func promtool(t *testing.T) string {
	t.Helper()
	testenv.Integration(t)
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found: run `make test`, or `bash deploy/services/alertmanager.sh install` (Debian package prometheus)")
	}
	return p
}

// TestPromtool runs promtool's checks of the configuration and rules and
// the rule unit tests.
func TestPromtool(t *testing.T) {
	p := promtool(t)
	for _, args := range [][]string{
		{"check", "config", "prometheus.yml"},
		{"check", "rules", "rules.yml"},
		{"test", "rules", "tests.yml"},
	} {
		out, err := exec.Command(p, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

type ruleFile struct {
	Groups []struct {
		Rules []struct {
			Alert string `yaml:"alert"`
			Expr  string `yaml:"expr"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

type testFile struct {
	Tests []struct {
		AlertRuleTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestEveryRuleTested: each alerting rule has a unit test where it fires
// and one where it does not.
func TestEveryRuleTested(t *testing.T) {
	var rules ruleFile
	var tests testFile
	readYAML(t, "rules.yml", &rules)
	readYAML(t, "tests.yml", &tests)
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			if !fires[r.Alert] || !silent[r.Alert] {
				t.Errorf("rule %s: tests.yml has a firing case %v and a silent case %v; want both", r.Alert, fires[r.Alert], silent[r.Alert])
			}
		}
	}
	if n == 0 {
		t.Fatal("no rules read from rules.yml")
	}
}

// TestRulesReadRegisteredMetrics: every handoff_* metric a rule reads is
// registered by handoff's code (a Name: "handoff_..." in a .go file), so a
// renamed metric fails here instead of silencing its alert.
func TestRulesReadRegisteredMetrics(t *testing.T) {
	var rules ruleFile
	readYAML(t, "rules.yml", &rules)
	registered := map[string]bool{}
	nameRE := regexp.MustCompile(`Name:\s*"(handoff_[a-z0-9_]+)"`)
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".data" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range nameRE.FindAllSubmatch(b, -1) {
			registered[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	useRE := regexp.MustCompile(`handoff_[a-z0-9_]+`)
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			for _, m := range useRE.FindAllString(r.Expr, -1) {
				if !registered[m] {
					t.Errorf("rule %s reads %s, which no handoff code registers", r.Alert, m)
				}
			}
		}
	}
}
