package httpbody

import (
	"errors"
	"net/url"
	"testing"
)

func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://admin:hunter2@host:30000/v1", "http://admin:xxxxx@host:30000/v1"},
		{"http://host:30000", "http://host:30000"},
		{"http://[::1", "(unparseable URL)"},
	} {
		if got := RedactURL(tc.in); got != tc.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestStripURL(t *testing.T) {
	inner := errors.New("connection refused")
	if got := StripURL(&url.Error{Op: "Get", URL: "http://u:secret@host", Err: inner}); got != inner {
		t.Errorf("StripURL kept the wrapper: %v", got)
	}
	if got := StripURL(inner); got != inner {
		t.Errorf("StripURL changed a plain error: %v", got)
	}
}
