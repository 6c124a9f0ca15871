package schema_test

import (
	"os"
	"strings"
	"testing"

	"github.com/handoff-dev/handoff/ingest/schema"
)

func TestZZDump(t *testing.T) {
	if os.Getenv("DUMPDB") == "" {
		return
	}
	s, _ := schema.Statements(os.Getenv("DUMPDB"))
	os.WriteFile("/tmp/dashtool/schema.sql", []byte(strings.Join(s, "\n;\n")+"\n;\n"), 0o644)
}
