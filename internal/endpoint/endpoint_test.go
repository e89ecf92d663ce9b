package endpoint

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, in string
		base     string // the URL returned when accepted
		want     string // substring of the error; "" for accepted
	}{
		{"plain", "http://gpu-host.example.com:30000", "http://gpu-host.example.com:30000", ""},
		{"https", "https://gpu-host.example.com", "https://gpu-host.example.com", ""},
		{"trailing slash", "http://gpu-host.example.com:30000/", "http://gpu-host.example.com:30000", ""},
		{"proxy prefix", "http://gateway/sglang", "http://gateway/sglang", ""},
		{"proxy prefix slashes", "http://gateway/sglang//", "http://gateway/sglang", ""},
		{"ipv6", "http://[::1]:8080", "http://[::1]:8080", ""},
		{"empty", "", "", "must not be empty"},
		{"no scheme", "gpu-host.example.com:30000", "", "is not an http:// or https:// URL"},
		{"grpc", "grpc://gpu-host.example.com:30000", "", "is not an http:// or https:// URL"},
		{"no host", "http://:30000", "", "has no host"},
		{"password", "http://admin:hunter2@gpu-host.example.com", "", "carries credentials"},
		{"user only", "http://token@gpu-host.example.com", "", "carries credentials"},
		{"port zero", "http://gpu-host.example.com:0", "", "port 0 is not between 1 and 65535"},
		{"port high", "http://gpu-host.example.com:65536", "", "port 65536 is not between 1 and 65535"},
		{"query", "http://gpu-host.example.com?a=1", "", "has a query string"},
		{"empty query", "http://gpu-host.example.com?", "", "has a query string"},
		{"fragment", "http://gpu-host.example.com#top", "", "has a fragment"},
		{"v1", "http://gpu-host.example.com:30000/v1", "", `use the base URL "http://gpu-host.example.com:30000"`},
		{"v1 slash", "http://gpu-host.example.com:30000/v1/", "", `ends in /v1;`},
		{"prefixed v1", "http://gateway/sglang/v1", "", `use the base URL "http://gateway/sglang"`},
		{"completions", "http://gpu-host.example.com/v1/completions", "", "ends in /v1/completions"},
		{"space", "http://gpu host", "", "contains spaces or control characters"},
		{"newline", "http://gpu-host\n", "", "contains spaces or control characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := Parse(tt.in)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Parse(%q) = %v, want nil", tt.in, err)
			case tt.want == "" && u.String() != tt.base:
				t.Fatalf("Parse(%q) = %q, want %q", tt.in, u, tt.base)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Parse(%q) = %v, want an error containing %q", tt.in, err, tt.want)
			}
		})
	}
}

// The password must not appear in the message: it is shown in plan output and CI logs.
func TestParseHidesPassword(t *testing.T) {
	_, err := Parse("https://admin:hunter2@gpu-host.example.com:30000")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("Parse = %v, want an error without the password", err)
	}
}

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST.": true, "api.localhost": true, "127.0.0.1": true, "127.8.0.1": true,
		"::1": true, "[::1]": true, "::ffff:127.0.0.1": true,
		"localhost.example.com": false, "10.0.0.1": false, "0.0.0.0": false, "example.com": false, "": false,
	} {
		if got := IsLoopback(host); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", host, got, want)
		}
	}
}
