package cliflag_test

import (
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/handoff-dev/handoff/internal/cliflag"
)

func TestList(t *testing.T) {
	var got []string
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Var(cliflag.List{P: &got}, "brokers", "")
	if err := fs.Parse([]string{"--brokers", " a:1, ,b:2 ,"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a:1", "b:2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if s := (cliflag.List{P: &got}).String(); s != "a:1,b:2" {
		t.Fatalf("String() = %q", s)
	}
	if s := (cliflag.List{}).String(); s != "" {
		t.Fatalf("zero List String() = %q", s)
	}
}

// TestKafkaBrokersTrimmedOneWay: brokers from the environment and from the
// flag come out the same, blanks and empty items dropped, whichever
// command parses them.
func TestKafkaBrokersTrimmedOneWay(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  string
		args []string
		want []string
	}{
		{"environment", " a:1, b:2 ,,", nil, []string{"a:1", "b:2"}},
		{"flag wins", "a:1", []string{"--kafka-brokers", "c:3 , d:4"}, []string{"c:3", "d:4"}},
		{"flag emptied", "a:1", []string{"--kafka-brokers", " , "}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var k struct{ Kafka cliflag.Kafka }
			if err := env.ParseWithOptions(&k, env.Options{Environment: map[string]string{"HANDOFF_KAFKA_BROKERS": tt.env}}); err != nil {
				t.Fatal(err)
			}
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			k.Kafka.RegisterFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			err := k.Kafka.Check(false)
			if err != nil || !reflect.DeepEqual(k.Kafka.Brokers, tt.want) {
				t.Errorf("brokers %q, %v; want %q", k.Kafka.Brokers, err, tt.want)
			}
		})
	}
}

// TestKafkaCheck: each bad setting is refused naming its flag and variable.
func TestKafkaCheck(t *testing.T) {
	good := cliflag.Kafka{Brokers: []string{"a:1"}, Topic: "handoff.events", Partitions: 6, Replication: 1}
	for _, tt := range []struct {
		name     string
		change   func(*cliflag.Kafka)
		required bool
		say      string
	}{
		{"good", func(*cliflag.Kafka) {}, true, ""},
		{"none, optional", func(k *cliflag.Kafka) { k.Brokers = nil }, false, ""},
		{"none, required", func(k *cliflag.Kafka) { k.Brokers = nil }, true, "--kafka-brokers (HANDOFF_KAFKA_BROKERS): required"},
		{"no port", func(k *cliflag.Kafka) { k.Brokers = []string{"localhost"} }, false, "--kafka-brokers (HANDOFF_KAFKA_BROKERS): Kafka broker \"localhost\""},
		{"topic", func(k *cliflag.Kafka) { k.Topic = "a b" }, true, "--topic (HANDOFF_TOPIC)"},
		{"partitions", func(k *cliflag.Kafka) { k.Partitions = 0 }, true, "--topic-partitions 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k := good
			tt.change(&k)
			err := k.Check(tt.required)
			if tt.say == "" {
				if err != nil {
					t.Errorf("Check: %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.say) {
				t.Errorf("Check: %v, want an error saying %q", err, tt.say)
			}
		})
	}
}

// TestDeprecated: the old spelling sets the new flag and says, once per
// use, which flag to use instead; the new spelling says nothing.
func TestDeprecated(t *testing.T) {
	for _, tt := range []struct {
		args []string
		warn string
	}{
		{[]string{"--database", "d1"}, "handoff: --database is deprecated and goes away in the next release: use --clickhouse-database\n"},
		{[]string{"--clickhouse-database", "d1"}, ""},
	} {
		var db string
		var warn strings.Builder
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.StringVar(&db, "clickhouse-database", "handoff", "")
		cliflag.Deprecated(fs, "database", "clickhouse-database", &warn)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		if db != "d1" || warn.String() != tt.warn {
			t.Errorf("%q: database %q, warning %q; want d1 and %q", tt.args, db, warn.String(), tt.warn)
		}
		if got := cliflag.Given(fs, "clickhouse-database", "database"); !got {
			t.Errorf("%q: Given = false", tt.args)
		}
	}
}

// TestSecretNeverPrinted: a secret taken from the environment as the
// flag's default must not appear in -h, nor in the usage printed when
// another flag is mistyped.
func TestSecretNeverPrinted(t *testing.T) {
	const secret = "s3cr3t-value"
	for _, args := range [][]string{{"-h"}, {"--no-such-flag"}, {"--password"}} {
		v := secret
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		var out strings.Builder
		fs.SetOutput(&out)
		fs.Var(cliflag.Secret{P: &v}, "password", "a password (ENV_PASSWORD)")
		if err := fs.Parse(args); err == nil {
			t.Fatalf("%q: parse succeeded", args)
		}
		if strings.Contains(out.String(), secret) {
			t.Errorf("%q printed the secret:\n%s", args, out.String())
		}
		if !strings.Contains(out.String(), "-password") {
			t.Errorf("%q: usage lacks the flag:\n%s", args, out.String())
		}
	}
	v := secret
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Var(cliflag.Secret{P: &v}, "password", "")
	if err := fs.Parse([]string{"--password", "other"}); err != nil || v != "other" {
		t.Fatalf("Set: err %v, value %q", err, v)
	}
}

// TestParseTime: every time flag is range-checked; 0001-01-01 (which made
// detect --now overflow to 1734) and 9999-12-31 are refused, naming the
// flag.
func TestParseTime(t *testing.T) {
	for _, tt := range []struct {
		in, err string
	}{
		{"2026-10-03T00:00:00Z", ""},
		{"2026-10-03T08:00:00+08:00", ""},
		{"1970-01-01T00:00:00Z", ""},
		{"0001-01-01T00:00:00Z", "out of range"},
		{"1969-12-31T23:59:59Z", "out of range"},
		{"9999-12-31T23:59:59Z", "out of range"},
		{"2200-01-01T00:00:00Z", "out of range"},
		{"yesterday", "want an RFC 3339 time"},
		{"", "want an RFC 3339 time"},
	} {
		got, err := cliflag.ParseTime("now", tt.in)
		if (err == nil) != (tt.err == "") || (err != nil && (!strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "--now"))) {
			t.Errorf("ParseTime(%q) = %v, %v; want error with %q", tt.in, got, err, tt.err)
		}
	}
}

func TestZone(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		bad      bool
	}{
		{"", "", false},
		{"local", "local", false},
		{"Local", "local", false},
		{"Asia/Shanghai", "Asia/Shanghai", false},
		{" UTC ", "UTC", false},
		{"Mars/Olympus", "", true},
	} {
		var loc *time.Location
		err := (cliflag.Zone{P: &loc}).Set(tc.in)
		if (err != nil) != tc.bad {
			t.Errorf("Set(%q): error %v, want error %t", tc.in, err, tc.bad)
			continue
		}
		if got := (cliflag.Zone{P: &loc}).String(); !tc.bad && got != tc.want {
			t.Errorf("Set(%q): String() = %q, want %q", tc.in, got, tc.want)
		}
	}
}
