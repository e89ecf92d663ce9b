package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A server that echoes the request's Authorization header in its error body must not get
// the API key into RequestResult.Err, which reaches diagnostics and logs.
func TestClientScrubsEchoedKey(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad request, headers: Authorization="+r.Header.Get("Authorization"), http.StatusBadRequest)
	}))
	defer srv.Close()
	const key = "sk-echo-me-4242"
	c, err := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m", APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	rec := c.Do(context.Background(), "hi", 2)
	if rec.HTTPStatus != http.StatusBadRequest || !strings.Contains(rec.Err, "Authorization=Bearer [redacted]") {
		t.Fatalf("Err = %q, want the echoed header with the key redacted", rec.Err)
	}
	if strings.Contains(rec.Err, key) {
		t.Fatalf("Err reveals the key: %q", rec.Err)
	}
}
