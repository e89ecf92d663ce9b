package endpoint

import "testing"

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://127.0.0.1:8000", "http://127.0.0.1:8000"},
		{"http://u:PW@127.0.0.1:8x8/v1", "http://REDACTED@127.0.0.1:8x8/v1"},
		{"http://u:PW@127.0.0.1:8000 ", "http://REDACTED@127.0.0.1:8000 "},
		{"http://u:p/w@host/x", "http://REDACTED@host/x"}, // a "/" in the password
		{"http://u:p?w#x@host", "http://REDACTED@host"},   // "?" and "#" in the password
		{"u:PW@host:80", "REDACTED@host:80"},              // no scheme
		{"ssh://deploy@host", "ssh://REDACTED@host"},      // the user too
		{"http://h:9400/metrics?token=SECRET", "http://h:9400/metrics?token=REDACTED"},
		{"http://h/m?a=1&SECRET&b=", "http://h/m?a=REDACTED&REDACTED&b=REDACTED"},
		{"http://h/m?", "http://h/m?"},
		{"http://h/m#access_token=SECRET", "http://h/m#REDACTED"},
		{"http://h/m#", "http://h/m#"},
		{"http://u:PW@h:x/m?token=S#f", "http://REDACTED@h:x/m?token=REDACTED#REDACTED"},
		{"http://h\x00:80/?k=S\n", "http://h\x00:80/?k=REDACTED"},
		{"", ""},
	} {
		if got := Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
