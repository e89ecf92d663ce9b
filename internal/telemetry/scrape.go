package telemetry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/llmserve/terraform-provider-llmserve/internal/endpoint"
)

// Source is one exporter endpoint: each call reads its devices once.
type Source interface {
	Scrape(ctx context.Context) ([]Reading, error)
}

// maxBody bounds one exporter's answer: a node with 16 GPUs and every DCGM field is a few
// hundred KiB.
const maxBody = 16 << 20

const example = `give the exporter's metrics URL, e.g. "http://gpu-node:9400/metrics" (DCGM exporter) or "http://gpu-node:29999/metrics" (XPU Manager)`

// ParseEndpoint checks one telemetry endpoint URL. Credentials and query strings are refused:
// the URL is stored in state and shown in plan output like the benchmark's endpoint, which
// refuses them for the same reason. The message never repeats a password.
func ParseEndpoint(raw string) (*url.URL, error) {
	shown := endpoint.Redact(raw) // every message quotes this, never raw
	if raw == "" {
		return nil, fmt.Errorf("must not be empty; %s", example)
	}
	if strings.TrimSpace(raw) != raw || strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f || (r >= 0x80 && r <= 0x9f) }) {
		return nil, fmt.Errorf("%q contains spaces or control characters; %s", shown, example)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL; %s", shown, example)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%q carries credentials, which would be stored in state and shown in plan output; expose the exporter without them (on a private network, or through a proxy that adds them)", shown)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%q is not an http:// or https:// URL; %s", shown, example)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("%q has no host; %s", shown, example)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%q: port %s is not between 1 and 65535", shown, p)
		}
	}
	if u.RawQuery != "" || u.ForceQuery {
		return nil, fmt.Errorf("%q has a query string, which may carry a token into state and plan output; remove it", shown)
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return nil, fmt.Errorf("%q has a fragment, which is never sent to a server; remove it", shown)
	}
	if u.Path == "" {
		return nil, fmt.Errorf("%q has no path; exporters serve their metrics at a path, usually /metrics: %q", shown, shown+"/metrics")
	}
	return u, nil
}

// Key is the form two endpoint URLs are compared in for duplicates: scheme and host lower
// case, default port made explicit, no trailing slash.
func Key(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port + strings.TrimRight(u.EscapedPath(), "/")
}

// HTTPSource scrapes one exporter over HTTP.
type HTTPSource struct {
	url    string
	name   string // host and path, for messages
	client *http.Client
}

// NewHTTPSource scrapes u with client (a default one with a 5 s timeout when nil).
func NewHTTPSource(u *url.URL, client *http.Client) *HTTPSource {
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	return &HTTPSource{url: u.String(), name: u.Host + u.EscapedPath(), client: client}
}

// Scrape reads the exporter once. Its errors name the host and path, never more of the URL.
func (s *HTTPSource) Scrape(ctx context.Context) ([]Reading, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", s.name, err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := s.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text repeats the whole URL
		}
		return nil, fmt.Errorf("GET %s: %w", s.name, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: reading the answer: %w", s.name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d", s.name, resp.StatusCode)
	}
	if len(body) > maxBody {
		return nil, fmt.Errorf("GET %s: the answer is over %d MiB", s.name, maxBody>>20)
	}
	return Parse(body)
}

// Parse reads the Prometheus text format into a reading per device of each exporter it
// recognises.
func Parse(text []byte) ([]Reading, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("not Prometheus text: %w", err)
	}
	return readings(fams), nil
}
