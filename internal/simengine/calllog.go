package simengine

import (
	"net/http"
	"slices"
	"sync"
)

// CallLog records, in order, the calls a double answered that matter for the start of a
// trial: idle checks ("idle": /v1/loads, /get_load, /metrics), prefix-cache flushes ("flush":
// /flush_cache, /reset_prefix_cache) and generations ("gen"). Tests read it to check that
// every flush came right after an idle check on the same server.
type CallLog struct {
	mu     sync.Mutex
	events []string
}

// Wrap records the calls h answers.
func (l *CallLog) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ev := ""
		switch p := r.URL.Path; {
		case p == "/v1/loads" || p == "/get_load" || p == "/metrics":
			ev = "idle"
		case p == "/flush_cache" || p == "/reset_prefix_cache":
			ev = "flush"
		case p == "/v1/chat/completions" || p == "/v1/completions":
			ev = "gen"
		}
		if ev != "" {
			l.mu.Lock()
			l.events = append(l.events, ev)
			l.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
}

// Events are the calls recorded so far, oldest first.
func (l *CallLog) Events() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}
