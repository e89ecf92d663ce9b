package endpoint

import "strings"

// Redacted is what Redact puts in place of a secret.
const Redacted = "REDACTED"

// Redact returns raw, a URL or anything a user meant as one, with what may be a secret
// replaced by Redacted: the user info (user and password) before the last "@", every query
// value (and a query part without "=", which may be a bare token), and the fragment. It works
// on strings url.Parse refuses (a bad port, a space, a control character), so a message can
// quote any value a user gave: every message, warning and log line that repeats a URL-bearing
// attribute (endpoint, replica_endpoints, telemetry_endpoints, docker_host, kubernetes.host)
// quotes Redact(value), never the value. It redacts too much rather than too little: an "@"
// anywhere hides everything before it.
func Redact(raw string) string {
	scheme, rest := "", raw
	if i := strings.Index(rest, "://"); i >= 0 {
		scheme, rest = rest[:i+3], rest[i+3:]
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest = Redacted + rest[at:]
	}
	frag := ""
	if i := strings.Index(rest, "#"); i >= 0 {
		rest, frag = rest[:i], "#"+Redacted
		if i == len(rest) && strings.HasSuffix(raw, "#") {
			frag = "#"
		}
	}
	if i := strings.Index(rest, "?"); i >= 0 {
		parts := strings.Split(rest[i+1:], "&")
		for j, p := range parts {
			switch k, _, ok := strings.Cut(p, "="); {
			case ok:
				parts[j] = k + "=" + Redacted
			case p != "":
				parts[j] = Redacted
			}
		}
		rest = rest[:i+1] + strings.Join(parts, "&")
	}
	return scheme + rest + frag
}
