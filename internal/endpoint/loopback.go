package endpoint

import (
	"net/netip"
	"strings"
)

// IsLoopback says whether host (a URL's Hostname(): no port, no brackets) names this
// machine's own loopback: localhost, a name under .localhost, or a loopback address.
func IsLoopback(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(strings.Trim(h, "[]"))
	return err == nil && a.Unmap().IsLoopback()
}
