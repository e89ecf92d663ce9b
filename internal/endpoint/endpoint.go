// Package endpoint parses the base URL of an OpenAI-compatible server, the one rule for the
// benchmark's endpoint attribute, the measuring client and the control client.
package endpoint

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

const example = `give the server's base URL, e.g. "http://gpu-host.example.com:30000"`

// Parse returns the server's base URL without a trailing slash, or says what is wrong with
// raw. The clients append /v1/chat/completions, /v1/completions and /v1/models themselves, so
// a URL that already carries /v1 (or a whole API path) would be answered with 404 at apply,
// after the deployment finished. Credentials in the URL would be stored in state and shown in
// plan output, so they are refused in favour of api_key. The message never repeats a
// password.
func Parse(raw string) (*url.URL, error) {
	shown := Redact(raw) // every message quotes this, never raw
	if raw == "" {
		return nil, fmt.Errorf("must not be empty; %s", example)
	}
	if strings.TrimSpace(raw) != raw || strings.ContainsFunc(raw, isControlOrSpace) {
		return nil, fmt.Errorf("%q contains spaces or control characters; %s", shown, example)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL; %s", shown, example)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%q carries credentials, which would be stored in state and shown in plan output; remove them from the URL and pass the key in api_key (write-only, sent as a Bearer token)", shown)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%q is not an http:// or https:// URL; %s", shown, example)
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("%q has no host; %s", shown, example)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%q: port %s is not between 1 and 65535", shown, p)
		}
	}
	if u.RawQuery != "" || u.ForceQuery {
		return nil, fmt.Errorf("%q has a query string, which the benchmark would not send; remove it", shown)
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return nil, fmt.Errorf("%q has a fragment, which is never sent to a server; remove it", shown)
	}
	p := strings.TrimRight(u.Path, "/")
	for _, suffix := range []string{"/v1", "/v1/chat/completions", "/v1/completions", "/chat/completions", "/completions"} {
		if strings.HasSuffix(p, suffix) {
			base := strings.TrimSuffix(strings.TrimRight(raw, "/"), suffix)
			return nil, fmt.Errorf("%q ends in %s; the benchmark adds /v1/chat/completions or /v1/completions itself, so requests would go to %s/v1/... and fail with 404; use the base URL %q", shown, suffix, strings.TrimRight(shown, "/"), Redact(base))
		}
	}
	u.Path = p
	u.RawPath = strings.TrimRight(u.RawPath, "/")
	return u, nil
}

func isControlOrSpace(r rune) bool {
	return r <= ' ' || r == 0x7f || (r >= 0x80 && r <= 0x9f)
}
