package load

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"
)

// chatEcho is a loopback chat server that answers every request with a text of its own
// ("reply-N", N counting requests) and keeps each request's messages, so a test can check
// that a turn sends back exactly what the server returned before.
type chatEcho struct {
	mu       sync.Mutex
	n        int
	replies  map[string]bool // every text the server returned
	requests [][]Message     // messages of each request, in arrival order
	fail     func(msg string) bool
}

func (c *chatEcho) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Messages []Message `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.n++
	reply := fmt.Sprintf("reply-%d", c.n)
	if c.replies == nil {
		c.replies = map[string]bool{}
	}
	c.replies[reply] = true
	c.requests = append(c.requests, body.Messages)
	c.mu.Unlock()
	if last := body.Messages[len(body.Messages)-1].Content; c.fail != nil && c.fail(last) {
		http.Error(w, "refused", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	// Two chunks, so the returned text is the concatenation the client assembled.
	fmt.Fprintf(w, "data: %s\n\n", contentChunk(reply[:3]))
	fmt.Fprintf(w, "data: %s\n\n", contentChunk(reply[3:]))
	fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}]}\n\n")
	fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":2,\"prompt_tokens_details\":{\"cached_tokens\":%d}}}\n\ndata: [DONE]\n\n", 10*len(body.Messages), 10*(len(body.Messages)-1))
}

// script gives user u's n-th conversation: three turns, unique messages.
func script(u, n int) Conversation {
	c := Conversation{System: "be brief"}
	for k := range 3 {
		c.Turns = append(c.Turns, Turn{Message: fmt.Sprintf("u%d c%d t%d", u, n, k+1), MaxTokens: 2})
	}
	return c
}

// Each turn sends the system prompt, every earlier user message and the text the server
// returned for it, then the new message; warmups come first, conversations are numbered,
// turns counted, and the trial stops at the measured count.
func TestRunUsersSendsTheServersOwnHistory(t *testing.T) {
	before := runtime.NumGoroutine()
	eng := &chatEcho{}
	srv := httptest.NewServer(eng)
	defer srv.Close()
	client, err := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := RunUsers(context.Background(), client, UsersSpec{
		Users: 2, Next: script, WarmupConversations: 1, Measured: 5,
		Think: Think{Distribution: ThinkConstant, Mean: time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	measured := res.Measured()
	if len(measured) != 5 || res.Unsent != 0 || res.Stopped {
		t.Fatalf("%d measured, %d unsent, stopped %v; want 5, 0, false", len(measured), res.Unsent, res.Stopped)
	}
	warm := res.Requests[:len(res.Requests)-5]
	if len(warm) != 6 { // one whole conversation of 3 turns per user
		t.Errorf("%d warmup requests, want 6", len(warm))
	}
	for i, r := range res.Requests {
		if r.Index != i || r.Warmup != (i < len(warm)) || !r.OK() {
			t.Errorf("request %d: index %d warmup %v ok %v (%s)", i, r.Index, r.Warmup, r.OK(), r.Err)
		}
		if r.Turn < 1 || r.Turn > 3 || r.Conversation < 1 || r.User < 0 || r.User > 1 {
			t.Errorf("request %d placed at user %d conversation %d turn %d", i, r.User, r.Conversation, r.Turn)
		}
		if want := fmt.Sprintf("t%d", r.Turn); r.Prompt[len(r.Prompt)-2:] != want {
			t.Errorf("request %d: turn %d sent %q", i, r.Turn, r.Prompt)
		}
		// The fake reports 10 cached tokens per message before the new one: 2 turn - 1.
		if r.CachedTokens == nil || *r.CachedTokens != 10*(2*r.Turn-1) {
			t.Errorf("request %d: cached tokens %v, want %d", i, r.CachedTokens, 10*(2*r.Turn-1))
		}
	}
	// The server's view: turn k carries 1 + 2(k-1) + 1 messages, the assistant ones being
	// replies it gave, in the conversation's order.
	for _, msgs := range eng.requests {
		if msgs[0].Role != "system" || msgs[0].Content != "be brief" {
			t.Fatalf("first message %+v, want the system prompt", msgs[0])
		}
		turn := (len(msgs)-2)/2 + 1
		if len(msgs) != 2*turn {
			t.Fatalf("%d messages", len(msgs))
		}
		for k := 1; k < turn; k++ {
			u, a := msgs[2*k-1], msgs[2*k]
			if u.Role != "user" || a.Role != "assistant" || !eng.replies[a.Content] {
				t.Errorf("turn %d history %d: %+v then %+v; want a user message then a reply the server gave", turn, k, u, a)
			}
			if u.Content[len(u.Content)-2:] != fmt.Sprintf("t%d", k) {
				t.Errorf("turn %d history %d: user message %q out of order", turn, k, u.Content)
			}
		}
		if last := msgs[len(msgs)-1]; last.Role != "user" || last.Content[len(last.Content)-2:] != fmt.Sprintf("t%d", turn) {
			t.Errorf("last message %+v, want turn %d's", last, turn)
		}
	}
	if res.MeasuredStart.IsZero() || !res.MeasuredEnd.After(res.MeasuredStart) {
		t.Errorf("measured window %v .. %v", res.MeasuredStart, res.MeasuredEnd)
	}
	srv.Close()
	checkNoLeak(t, before)
}

// A failed turn ends its conversation (there is no answer to send back): the user's next
// request is the first turn of a new conversation.
func TestRunUsersFailedTurnEndsTheConversation(t *testing.T) {
	eng := &chatEcho{fail: func(msg string) bool { return msg == "u0 c0 t2" }}
	srv := httptest.NewServer(eng)
	defer srv.Close()
	client, err := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := RunUsers(context.Background(), client, UsersSpec{Users: 1, Next: script, Measured: 4, Think: Think{Distribution: ThinkConstant}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Requests {
		got = append(got, fmt.Sprintf("%d/%d ok=%v", r.Conversation, r.Turn, r.OK()))
	}
	want := []string{"1/1 ok=true", "1/2 ok=false", "2/1 ok=true", "2/2 ok=true"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("requests %v, want %v", got, want)
	}
}

// Think time: every pause before a later turn and between conversations is a draw of the
// distribution, the first turn waits within one mean, and the draws are a pure function of
// the seed.
func TestRunUsersThinks(t *testing.T) {
	eng := &chatEcho{}
	srv := httptest.NewServer(eng)
	defer srv.Close()
	client, err := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	run := func(d string) []time.Duration {
		var mu sync.Mutex
		var pauses []time.Duration
		_, err := RunUsers(context.Background(), client, UsersSpec{
			Users: 1, Next: script, Measured: 6, Seed: 7,
			Think: Think{Distribution: d, Mean: 10 * time.Second},
			Sleep: func(ctx context.Context, d time.Duration) error {
				mu.Lock()
				pauses = append(pauses, d)
				mu.Unlock()
				return ctx.Err()
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return pauses
	}
	constant := run(ThinkConstant)
	// first arrival, t1→t2, t2→t3, between conversations, t1→t2, t2→t3; the trial ends after
	// the sixth turn.
	if len(constant) != 6 || constant[0] >= 10*time.Second {
		t.Fatalf("pauses %v: want 6, the first under the mean", constant)
	}
	for _, p := range constant[1:] {
		if p != 10*time.Second {
			t.Errorf("constant pause %s, want 10s", p)
		}
	}
	a, b := run(ThinkExponential), run(ThinkExponential)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("same seed, other pauses: %v vs %v", a, b)
	}
	if a[1] == a[2] || a[1] == 10*time.Second {
		t.Errorf("exponential pauses %v look constant", a)
	}
}

// The exponential draw has the mean it is given: the mean of -ln(1-u) over a fine grid of
// u is 1 (within 0.5 %).
func TestThinkExponentialMean(t *testing.T) {
	th := Think{Distribution: ThinkExponential, Mean: time.Second}
	const n = 100000
	sum := 0.0
	for i := range n {
		sum += th.Draw((float64(i) + 0.5) / n).Seconds()
	}
	if m := sum / n; m < 0.995 || m > 1.005 {
		t.Errorf("mean %.4f s, want 1 s", m)
	}
	if err := (Think{Distribution: "uniform", Mean: time.Second}).Validate(); err == nil {
		t.Error("an unknown distribution validated")
	}
}

// Observe stops the trial: no further turn is sent and the trial says it stopped.
func TestRunUsersObserveStops(t *testing.T) {
	before := runtime.NumGoroutine()
	eng := &chatEcho{}
	srv := httptest.NewServer(eng)
	defer srv.Close()
	client, err := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	completed := 0
	res, err := RunUsers(context.Background(), client, UsersSpec{
		Users: 3, Next: script, Measured: 50, Think: Think{Distribution: ThinkConstant, Mean: time.Millisecond},
		Observe: func(ev Event) bool {
			if ev.Kind == EventCompleted {
				completed++
			}
			return completed >= 2
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Stopped || res.Unsent == 0 || len(res.Measured()) > 5 {
		t.Errorf("stopped %v, unsent %d, %d measured: want a stop after about 2", res.Stopped, res.Unsent, len(res.Measured()))
	}
	srv.Close()
	checkNoLeak(t, before)
}

// The completions API cannot carry a history: the request fails and says so.
func TestConversationNeedsChat(t *testing.T) {
	client, err := NewClient(ClientConfig{BaseURL: "http://127.0.0.1:1", Model: "m", API: APICompletions})
	if err != nil {
		t.Fatal(err)
	}
	r := client.Stream(context.Background(), Request{Prompt: "x", MaxTokens: 1, History: []Message{{Role: "user", Content: "y"}}})
	if r.Err == "" || r.OK() {
		t.Fatalf("a history on the completions API was sent: %+v", r)
	}
}

// In-flight requests over the measured window, by hand: the window is 0-10 s; a request on
// the wire 0-10 s, one 2-4 s, one 3-8 s (peak 3 at 3-4 s), one that ended before the window.
// Mean = (10 + 2 + 5) / 10 = 1.7.
func TestInFlight(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	res := TrialResult{
		MeasuredStart: at(0), MeasuredEnd: at(10),
		Requests: []RequestResult{
			{Sent: at(-5), Done: at(-1)},
			{Sent: at(-1), Done: at(10)},
			{Sent: at(2), Done: at(4)},
			{Sent: at(3), Done: at(8)},
		},
	}
	mean, peak := res.InFlight()
	if peak != 3 || mean < 1.6999 || mean > 1.7001 {
		t.Errorf("mean %g peak %d, want 1.7 and 3", mean, peak)
	}
}
