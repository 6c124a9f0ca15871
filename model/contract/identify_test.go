package contract_test

import (
	"testing"

	"github.com/handoff-dev/handoff/model/contract"
)

func TestIdentify(t *testing.T) {
	daily := mustParse(t, `pipeline: abs.daily
schedule: daily
batch_id: "{yyyymmdd}"
artifact: "account_balance_snapshot_{batch_id}.csv"
signal: "account_balance_snapshot_{batch_id}.flag"
`)
	hourly := mustParse(t, `pipeline: fx.hourly
schedule: hourly
batch_id: "{yyyymmdd}{hh}"
artifact: "fx_rates_{yyyymmdd}_{hh}00.csv"
signal: "fx_rates_{batch_id}.flag"
`)
	noBatchID := mustParse(t, `pipeline: gl
artifact: "gl_{business_date}.parquet"
signal: "gl_{batch_id}._SUCCESS"
`)
	for _, tt := range []struct {
		name string
		c    *contract.Contract
		file string
		key  string // "" when nothing matches
		kind contract.NameKind
	}{
		{"seed artifact", daily, "account_balance_snapshot_20260930.csv", "abs.daily/2026-09-30/20260930", contract.NameArtifact},
		{"seed signal", daily, "account_balance_snapshot_20260930.flag", "abs.daily/2026-09-30/20260930", contract.NameSignal},
		{"temp file", daily, "account_balance_snapshot_20260930.csv.tmp", "", contract.NameNone},
		{"no such date", daily, "account_balance_snapshot_20260931.csv", "", contract.NameNone},
		{"month 13", daily, "account_balance_snapshot_20261301.csv", "", contract.NameNone},
		{"other file", daily, "README.md", "", contract.NameNone},
		{"prefix only", daily, "account_balance_snapshot_.csv", "", contract.NameNone},
		{"hourly artifact", hourly, "fx_rates_20260930_0700.csv", "fx.hourly/2026-09-30/2026093007", contract.NameArtifact},
		{"hourly signal", hourly, "fx_rates_2026093023.flag", "fx.hourly/2026-09-30/2026093023", contract.NameSignal},
		{"hourly bad hour", hourly, "fx_rates_20260930_2500.csv", "", contract.NameNone},
		{"hourly minute not 00", hourly, "fx_rates_20260930_0730.csv", "", contract.NameNone},
		{"no batch_id template: date names the batch", noBatchID, "gl_2026-09-30.parquet", "gl/2026-09-30/20260930", contract.NameArtifact},
		{"no batch_id template: {batch_id} unreadable", noBatchID, "gl_20260930._SUCCESS", "", contract.NameNone},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k, kind, ok := tt.c.Identify(tt.file)
			if tt.key == "" {
				if ok {
					t.Fatalf("Identify(%q) = %s %s, want no match", tt.file, k, kind)
				}
				return
			}
			if !ok || k.String() != tt.key || kind != tt.kind {
				t.Fatalf("Identify(%q) = %s %s %v, want %s %s", tt.file, k, kind, ok, tt.key, tt.kind)
			}
			// Identify is the inverse of the names the contract derives.
			var back string
			if kind == contract.NameArtifact {
				back, _ = tt.c.ArtifactName(k)
			} else {
				back, _ = tt.c.SignalName(k)
			}
			if back != tt.file {
				t.Fatalf("name of %s %s is %q, not %q", k, kind, back, tt.file)
			}
		})
	}
}

func TestSignalContentAndHeader(t *testing.T) {
	for _, tt := range []struct {
		yaml    string
		content contract.SignalContent
		header  bool
		err     string
	}{
		{"pipeline: p\n", contract.SignalEmpty, false, ""},
		{"pipeline: p\nsignal_content: manifest\nrows:\n  header: true\n", contract.SignalManifest, true, ""},
		{"pipeline: p\nsignal_content: empty\n", contract.SignalEmpty, false, ""},
		{"pipeline: p\nsignal_content: json\n", "", false, `c.yaml:2: signal_content: unknown signal content "json" (want empty or manifest)`},
		{"pipeline: p\nrows:\n  header: yes please\n", "", false, `c.yaml:3: rows.header: want true or false, got "yes please"`},
	} {
		c, err := contract.Parse("c.yaml", []byte(tt.yaml))
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%q: error %v, want %s", tt.yaml, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tt.yaml, err)
		}
		if c.SignalContent != tt.content || c.Rows.Header != tt.header {
			t.Errorf("%q: content %q header %v, want %q %v", tt.yaml, c.SignalContent, c.Rows.Header, tt.content, tt.header)
		}
	}
	if d := contract.Default("p"); d.SignalContent != contract.SignalEmpty {
		t.Errorf("default contract's signal content %q, want empty", d.SignalContent)
	}
}

func TestOpenLineageKey(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		err  string
	}{
		{"pipeline: p\nbatch_id: \"{yyyymmdd}\"\nopenlineage:\n  job: build.p\n", ""},
		{"pipeline: p\nopenlineage:\n  job: \"dbt.p_{yyyymmdd}\"\n  namespace: dbt\n  business_date: \"facet:airflow.logical_date\"\n  system: consumer\n", ""},
		{"pipeline: p\nopenlineage:\n  namespace: airflow\n", "c.yaml:3: openlineage.job: missing: which OpenLineage job is this pipeline's (its name, or a template over it)"},
		{"pipeline: p\nopenlineage:\n  job: \"x_{batch_id}\"\n", `c.yaml:3: openlineage.job: "x_{batch_id}": a job name cannot be read through {batch_id}: use date placeholders such as {yyyymmdd}`},
		{"pipeline: p\nopenlineage:\n  job: x\n  business_date: logical\n", `c.yaml:4: openlineage.business_date: "logical": want nominal_start, nominal_end, event_time or facet:NAME.FIELD (a run facet's field)`},
		{"pipeline: p\nopenlineage:\n  job: x\n  system: scheduler\n", `c.yaml:4: openlineage.system: "scheduler": want producer, exchange, consumer or operator`},
		{"pipeline: p\nopenlineage:\n  job: x\n  run: y\n", `c.yaml:4: openlineage.run: unknown key (want job, namespace, business_date, system, inputs)`},
	} {
		c, err := contract.Parse("c.yaml", []byte(tt.yaml))
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%q: error %v, want %s", tt.yaml, err, tt.err)
			}
			continue
		}
		if err != nil || c.OpenLineage == nil {
			t.Fatalf("%q: %v", tt.yaml, err)
		}
	}
	c := mustParse(t, "pipeline: p", "openlineage:", "  job: \"dbt.p_{yyyymmdd}\"", "  business_date: \"facet:airflow.logical_date\"")
	if ol := c.OpenLineage; ol.Date != contract.DateFacet || ol.Facet != "airflow.logical_date" || ol.System != "producer" {
		t.Fatalf("%+v", ol)
	}
	d, _, _, hasDate, ok := c.OpenLineage.Job.Read("dbt.p_20260930", "p")
	if !ok || !hasDate || d.String() != "2026-09-30" {
		t.Fatalf("Read: %v %v %v", d, hasDate, ok)
	}
	if _, _, _, _, ok := c.OpenLineage.Job.Read("dbt.p_20260931", "p"); ok {
		t.Fatal("Read accepted 2026-09-31")
	}
}
