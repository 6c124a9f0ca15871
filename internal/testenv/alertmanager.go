package testenv

import (
	"os"
	"strings"
	"testing"
)

// AlertmanagerURL returns the first URL of HANDOFF_ALERTMANAGER_URLS (the
// Alertmanager deploy/services/alertmanager.sh starts) or fails the test.
func AlertmanagerURL(t testing.TB) string {
	t.Helper()
	Integration(t)
	u, _, _ := strings.Cut(strings.TrimSpace(os.Getenv("HANDOFF_ALERTMANAGER_URLS")), ",")
	if u == "" {
		t.Fatalf("HANDOFF_ALERTMANAGER_URLS is not set: this test needs a real Alertmanager; run `make test`, or `bash deploy/services/up.sh && . .data/services.env` and then go test")
	}
	return strings.TrimRight(u, "/")
}
