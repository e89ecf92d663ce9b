package httpbody

import (
	"errors"
	"net/url"
	"testing"
)

func TestStripURL(t *testing.T) {
	inner := errors.New("connection refused")
	if got := StripURL(&url.Error{Op: "Get", URL: "http://u:secret@host", Err: inner}); got != inner {
		t.Errorf("StripURL kept the wrapper: %v", got)
	}
	if got := StripURL(inner); got != inner {
		t.Errorf("StripURL changed a plain error: %v", got)
	}
}
