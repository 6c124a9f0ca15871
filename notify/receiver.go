package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Headers of a webhook request.
const (
	// HeaderSignature is "sha256=" and the hex HMAC-SHA256 of the body under
	// the configured secret.
	HeaderSignature = "X-Handoff-Signature"
	// HeaderFinding is "fingerprint/seq": the record's identity, the key a
	// receiver deduplicates on (delivery is at least once).
	HeaderFinding = "X-Handoff-Finding"
)

// Sign returns the X-Handoff-Signature value of body under secret:
// "sha256=" followed by the lower-case hex HMAC-SHA256.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether header is the signature of body under secret,
// comparing in constant time. Receivers written in Go can call it; the
// docs show the same check in shell and Python.
func Verify(secret, body []byte, header string) bool {
	got, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return false
	}
	want := Sign(secret, body)[len("sha256="):]
	return hmac.Equal([]byte(got), []byte(want))
}

// receiver is one HTTP endpoint every finding goes to.
type receiver struct {
	kind string // "alertmanager" or "webhook": the metrics' label
	url  string // the endpoint posted to
}

// httpError is a refused or failed request. Permanent errors (a 4xx other
// than 408 and 429: the request itself is wrong) are not retried.
type httpError struct {
	url       string
	status    int
	body      string
	permanent bool
}

func (e *httpError) Error() string {
	return fmt.Sprintf("POST %s: HTTP %d: %s", e.url, e.status, e.body)
}

// post sends body to url with headers; any 2xx is success.
func post(ctx context.Context, c *http.Client, url string, body []byte, headers map[string]string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return &httpError{url: url, body: err.Error(), permanent: true}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "handoff-notify")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", url, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	return &httpError{
		url: url, status: resp.StatusCode, body: strings.TrimSpace(string(msg)),
		permanent: resp.StatusCode/100 == 4 && resp.StatusCode != http.StatusRequestTimeout && resp.StatusCode != http.StatusTooManyRequests,
	}
}

// alertsEndpoint is Alertmanager's v2 endpoint under base URL u.
func alertsEndpoint(u string) string { return strings.TrimRight(u, "/") + "/api/v2/alerts" }

// postAlerts sends alerts to one Alertmanager.
func postAlerts(ctx context.Context, c *http.Client, base string, alerts []Alert) error {
	body, err := json.Marshal(alerts)
	if err != nil {
		return fmt.Errorf("encode alerts for %s: %w", base, err)
	}
	return post(ctx, c, alertsEndpoint(base), body, nil)
}

// postWebhook sends one finding record, unchanged, signed.
func postWebhook(ctx context.Context, c *http.Client, url string, secret, record []byte, fingerprint string, seq int) error {
	return post(ctx, c, url, record, map[string]string{
		HeaderSignature: Sign(secret, record),
		HeaderFinding:   fingerprint + "/" + strconv.Itoa(seq),
	})
}
