package capacity

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// CheckEndpoint says what is wrong with a benchmark's endpoint, or nil. The endpoint is the
// server's base URL: the client appends /v1/chat/completions or /v1/completions itself, so a
// URL that already carries /v1 (or a whole API path) would be answered with 404 at apply,
// after the deployment finished. Credentials in the URL would be stored in state and shown
// in plan output, so they are refused in favour of api_key. The message never repeats a
// password.
func CheckEndpoint(raw string) error {
	if raw == "" {
		return fmt.Errorf("must not be empty; give the server's base URL, e.g. \"http://gpu-host.example.com:30000\"")
	}
	if strings.TrimSpace(raw) != raw || strings.ContainsFunc(raw, isControlOrSpace) {
		return fmt.Errorf("%q contains spaces or control characters; give the server's base URL, e.g. \"http://gpu-host.example.com:30000\"", raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a URL; give the server's base URL, e.g. \"http://gpu-host.example.com:30000\"", raw)
	}
	if u.User != nil {
		return fmt.Errorf("%q carries credentials, which would be stored in state and shown in plan output; remove them from the URL and pass the key in api_key (write-only, sent as a Bearer token)", u.Redacted())
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q is not an http:// or https:// URL; give the server's base URL, e.g. \"http://gpu-host.example.com:30000\"", raw)
	}
	if u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("%q has no host; give the server's base URL, e.g. \"http://gpu-host.example.com:30000\"", raw)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q: port %s is not between 1 and 65535", raw, p)
		}
	}
	if u.RawQuery != "" || u.ForceQuery {
		return fmt.Errorf("%q has a query string, which the benchmark would not send; remove \"?%s\"", raw, u.RawQuery)
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return fmt.Errorf("%q has a fragment, which is never sent to a server; remove it", raw)
	}
	p := strings.TrimRight(u.Path, "/")
	for _, suffix := range []string{"/v1", "/v1/chat/completions", "/v1/completions", "/chat/completions", "/completions"} {
		if strings.HasSuffix(p, suffix) {
			base := strings.TrimSuffix(strings.TrimRight(raw, "/"), suffix)
			return fmt.Errorf("%q ends in %s; the benchmark adds /v1/chat/completions or /v1/completions itself, so requests would go to %s/v1/... and fail with 404; use the base URL %q", raw, suffix, strings.TrimRight(raw, "/"), base)
		}
	}
	return nil
}

func isControlOrSpace(r rune) bool {
	return r <= ' ' || r == 0x7f || (r >= 0x80 && r <= 0x9f)
}

// isControl is a C0 or C1 control character, DEL included: none belongs in a label that
// ends up on a terminal or in a rendering.
func isControl(r rune) bool {
	return r < ' ' || r == 0x7f || (r >= 0x80 && r <= 0x9f)
}
