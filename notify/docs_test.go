package notify

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestDocsShellVerification runs the shell check of docs/alerting.md as
// written: a fresh signature is valid; a changed body, a changed
// X-Handoff-Finding and a signature an hour old are refused.
func TestDocsShellVerification(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatalf("openssl, which the documented check uses, is not installed: %v", err)
	}
	doc, err := os.ReadFile("../docs/alerting.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "### Verifying a request")
	_, after, ok2 := strings.Cut(after, "```sh\n")
	script, _, ok3 := strings.Cut(after, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/alerting.md: no sh block under \"### Verifying a request\"")
	}
	secret, body, finding := "s3cret", `{"fingerprint":"b2cc3eaca6e2972c","seq":3,"error":"it's \"quoted\""}`, "b2cc3eaca6e2972c/3"
	now := time.Now()
	for _, tt := range []struct {
		name, body, finding, sig, want string
	}{
		{"fresh", body, finding, Sign([]byte(secret), now, finding, []byte(body)), "valid"},
		{"body changed", body + " ", finding, Sign([]byte(secret), now, finding, []byte(body)), "refused"},
		{"finding changed", body, "b2cc3eaca6e2972c/4", Sign([]byte(secret), now, finding, []byte(body)), "refused"},
		{"an hour old", body, finding, Sign([]byte(secret), now.Add(-time.Hour), finding, []byte(body)), "refused"},
	} {
		cmd := exec.Command("sh", "-c", script)
		cmd.Env = append(os.Environ(), "HOOK_SECRET="+secret)
		cmd.Env = append(cmd.Env, "body="+tt.body, "finding="+tt.finding, "sig="+tt.sig)
		out, err := cmd.CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != tt.want {
			t.Errorf("%s: the documented check printed %q (err %v), want %q", tt.name, got, err, tt.want)
		}
	}
}
