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
	"time"
)

// Headers of a webhook request.
const (
	// HeaderSignature is "t=<unix seconds>,v1=<hex HMAC-SHA256>": the
	// sending time and the HMAC-SHA256, under the configured secret, of
	// SignedPayload (the time, the X-Handoff-Finding value and the body).
	// The time lets a receiver refuse a captured request replayed later;
	// the finding header is signed because receivers deduplicate on it.
	HeaderSignature = "X-Handoff-Signature"
	// HeaderFinding is "fingerprint/seq": the record's identity, the key a
	// receiver deduplicates on (delivery is at least once).
	HeaderFinding = "X-Handoff-Finding"
)

// DefaultTolerance is how old (or how far ahead) a signature's time may be
// before Verify refuses it as a replay: a receiver's clock and the
// request's retries fit in it, a capture replayed later does not.
const DefaultTolerance = 5 * time.Minute

// SignedPayload is what the signature covers: the unix time in seconds,
// ".", the X-Handoff-Finding value, ".", the raw body.
func SignedPayload(unix int64, finding string, body []byte) []byte {
	p := strconv.AppendInt(nil, unix, 10)
	p = append(p, '.')
	p = append(p, finding...)
	p = append(p, '.')
	return append(p, body...)
}

func mac(secret, payload []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(payload)
	return hex.EncodeToString(m.Sum(nil))
}

// Sign returns the X-Handoff-Signature value of a request sent at t with
// the X-Handoff-Finding value finding and body: "t=<unix>,v1=<hex>".
func Sign(secret []byte, t time.Time, finding string, body []byte) string {
	return fmt.Sprintf("t=%d,v1=%s", t.Unix(), mac(secret, SignedPayload(t.Unix(), finding, body)))
}

// Verify checks header, the X-Handoff-Signature of a request with the
// X-Handoff-Finding value finding and body, under secret: the signature
// must match (compared in constant time) and its time lie within
// tolerance of now. The error says which check failed. Receivers written
// in Go can call it; docs/alerting.md shows the same check in shell.
func Verify(secret, body []byte, finding, header string, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return fmt.Errorf("%s %q: want t=<unix seconds>,v1=<hex HMAC-SHA256>", HeaderSignature, header)
	}
	want := mac(secret, SignedPayload(unix, finding, body))
	ok := false
	for _, s := range sigs {
		ok = hmac.Equal([]byte(s), []byte(want)) || ok
	}
	if !ok {
		return fmt.Errorf("%s does not match the body and %s under the secret", HeaderSignature, HeaderFinding)
	}
	if age := now.Sub(time.Unix(unix, 0)); age > tolerance || age < -tolerance {
		return fmt.Errorf("%s was made at %s, %v from now (more than %v): a replayed request", HeaderSignature,
			time.Unix(unix, 0).UTC().Format(time.RFC3339), age.Round(time.Second), tolerance)
	}
	return nil
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

// noRedirects makes a client return a 3xx as it is: following one would
// re-send a POST as a bodiless GET (302, 303), whose 200 would pass for a
// delivery, or re-post the body and signature to another host (307, 308).
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// post sends body to url with headers; any 2xx is success. A 3xx is a
// refusal, not retried: redirects are not followed (the client has
// noRedirects), the URL to configure is the one redirected to.
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
	if resp.StatusCode/100 == 3 {
		return &httpError{url: url, status: resp.StatusCode, permanent: true,
			body: fmt.Sprintf("a redirect to %q, not followed: configure the final URL", resp.Header.Get("Location"))}
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
// The signature's time is taken at each attempt, so a retry is fresh.
func postWebhook(ctx context.Context, c *http.Client, url string, secret, record []byte, fingerprint string, seq int, now time.Time) error {
	finding := fingerprint + "/" + strconv.Itoa(seq)
	return post(ctx, c, url, record, map[string]string{
		HeaderSignature: Sign(secret, now, finding, record),
		HeaderFinding:   finding,
	})
}
