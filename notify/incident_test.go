package notify

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/internal/gen"
	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
)

// graphFindings runs the detector over a generated graph: the findings
// published when the breaks are seen, and those when every late delivery
// has come.
func graphFindings(t *testing.T, g *gen.Graph) (seen, delivered [][]byte) {
	t.Helper()
	d, err := detect.New(detect.Config{Contracts: testenv.Contracts(t, g.Contracts), From: model.Date{Year: 2026, Month: 9, Day: 28}})
	if err != nil {
		t.Fatal(err)
	}
	feed := func(lines []string, safe time.Time) [][]byte {
		var dec model.Decoder
		for _, l := range lines {
			e, err := dec.Decode([]byte(l))
			if err != nil {
				t.Fatalf("generated line %s: %v", l, err)
			}
			d.Observe(&e)
		}
		var out [][]byte
		for _, f := range d.Advance(safe.Add(30*time.Second), safe) {
			out = append(out, f.AppendJSON(nil))
		}
		return out
	}
	return feed(g.Events, g.SeenAt), feed(g.Late, g.DeliveredAt)
}

// amAlertsLike returns Alertmanager's alerts whose pipeline starts with prefix.
func amAlertsLike(t *testing.T, am, prefix string) []amAlert {
	t.Helper()
	q := url.Values{"filter": {`pipeline=~"` + prefix + `.*"`}}
	var out []amAlert
	resp, err := httpGet(am + "/api/v2/alerts?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(resp, &out); err != nil {
		t.Fatalf("decode alerts: %v: %s", err, resp)
	}
	return out
}

// TestIncidentPagesOncePerRoot: a generated graph of 60 pipelines in 4
// levels with three root breaks of different kinds on one date; the
// detector's findings go through the real Kafka to notify and the real
// Alertmanager: exactly three alerts, one per root, each with its blast
// radius; no blocked pipeline pages; once the roots and then every
// blocked batch are delivered late, the three end (Alertmanager lists
// none of them active) and nothing else was ever sent.
func TestIncidentPagesOncePerRoot(t *testing.T) {
	am := testenv.AlertmanagerURL(t)
	prefix := strings.ReplaceAll(testenv.Name("inc"), "_", "-")
	g, err := gen.GenerateGraph(gen.GraphOptions{Pipelines: 60, Levels: 4, Days: 3, Date: time.Date(2026, 9, 30, 0, 0, 0, 0, time.UTC), Seed: 19, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	seen, delivered := graphFindings(t, g)
	if len(seen) <= len(g.Roots) {
		t.Fatalf("%d findings when the breaks are seen: want the roots' and the blocked batches'", len(seen))
	}
	// How many blocked batches wait on each root.
	radius := map[string]int{}
	for _, rs := range g.Blocked {
		for _, r := range rs {
			radius[r]++
		}
	}

	cfg := testConfig(t)
	peer := &recorder{}
	peerSrv := httptest.NewServer(peer)
	defer peerSrv.Close()
	cfg.AlertmanagerURLs = []string{am, peerSrv.URL}
	start(t, cfg)
	publish(t, cfg.Kafka.Brokers, cfg.FindingsTopic, seen...)
	testenv.Eventually(t, 30*time.Second, "one alert per root, each with its blast radius", func() (bool, string) {
		as := amAlertsLike(t, am, prefix)
		got := map[string]string{}
		for _, a := range as {
			got[a.Labels["batch"]] = a.Annotations["blast_radius"]
		}
		want := map[string]string{}
		for r := range g.Roots {
			want[r] = fmt.Sprint(radius[r])
		}
		return len(as) == len(g.Roots) && maps.Equal(got, want), fmt.Sprintf("alerts (batch: blast radius) %v, want %v", got, want)
	})
	for _, a := range amAlertsLike(t, am, prefix) {
		if a.Status.State != "active" || !strings.Contains(a.Annotations["blast_radius_batches"], prefix) {
			t.Errorf("alert of %s: state %s, blast radius batches %q", a.Labels["batch"], a.Status.State, a.Annotations["blast_radius_batches"])
		}
	}

	publish(t, cfg.Kafka.Brokers, cfg.FindingsTopic, delivered...)
	testenv.Eventually(t, 30*time.Second, "the three alerts resolved", func() (bool, string) {
		as := amAlertsLike(t, am, prefix)
		return len(as) == 0, fmt.Sprintf("%d alerts still listed", len(as))
	})
	testenv.Eventually(t, 30*time.Second, "every record delivered", func() (bool, string) {
		n := testenv.Uncommitted(t, cfg.Kafka.Brokers, cfg.Group, cfg.FindingsTopic)
		return n == 0, fmt.Sprintf("%d uncommitted", n)
	})

	// Everything any Alertmanager was ever sent: the three roots' alerts,
	// and each one's last word is its end.
	last := map[string]Alert{}
	for _, r := range peer.accepted() {
		var as []Alert
		if err := json.Unmarshal(r.body, &as); err != nil {
			t.Fatal(err)
		}
		for _, a := range as {
			last[a.Labels["batch"]] = a
		}
	}
	var batches []string
	for b, a := range last {
		batches = append(batches, b)
		if a.EndsAt.After(g.DeliveredAt.Add(time.Minute)) {
			t.Errorf("the last alert of %s ends %s: want it resolved (ended by the delivery)", b, a.EndsAt)
		}
	}
	sort.Strings(batches)
	var roots []string
	for r := range g.Roots {
		roots = append(roots, r)
	}
	sort.Strings(roots)
	if strings.Join(batches, ",") != strings.Join(roots, ",") {
		t.Errorf("alerts were sent for %v, want the three roots only %v", batches, roots)
	}
	t.Logf("%d findings seen, %d at delivery; %d blocked batches paged through 3 root alerts", len(seen), len(delivered), len(g.Blocked))
}

func httpGet(u string) ([]byte, error) {
	resp, err := http.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s %s", u, resp.Status, b)
	}
	return b, err
}
