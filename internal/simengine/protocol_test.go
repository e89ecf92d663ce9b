package simengine

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// slowDecode starts one streamed completion that decodes for a while and returns once the
// server has admitted it; the request ends with the test.
func slowDecode(t *testing.T, s *Server, url string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	resp, err := post(t, ctx, url+"/v1/completions", "", `{"prompt":"decode for a while","max_tokens":30000,"ignore_eos":true,"stream":true}`)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	go func() { _, _ = io.Copy(io.Discard, resp.Body) }()
	for deadline := time.Now().Add(5 * time.Second); ; {
		if running, _ := s.load(); running == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the request never started running")
		}
		time.Sleep(time.Millisecond)
	}
}

func getJSON(t *testing.T, url string, v any) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d %s", url, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, b)
	}
	return string(b)
}

// The SGLang double answers /v1/loads in the current wrapper shape (entrypoints/v1_loads.py:
// running and waiting apart, no num_reqs) and /get_load in the legacy list shape (num_reqs =
// running + waiting), here while one request decodes and none waits.
func TestSGLangLoadShapes(t *testing.T) {
	s, ts := fast(t, func(o *Options) { o.Protocol = SGLang; o.Version = "0.5.10" })
	slowDecode(t, s, ts.URL)

	var wrapper struct {
		Timestamp *float64         `json:"timestamp"`
		Version   string           `json:"version"`
		Loads     []map[string]any `json:"loads"`
	}
	raw := getJSON(t, ts.URL+"/v1/loads", &wrapper)
	if wrapper.Timestamp == nil || wrapper.Version != "0.5.10" || len(wrapper.Loads) != 1 {
		t.Fatalf("/v1/loads = %s, want the wrapper with timestamp, version and one rank", raw)
	}
	l := wrapper.Loads[0]
	if l["dp_rank"] != 0.0 || l["num_running_reqs"] != 1.0 || l["num_waiting_reqs"] != 0.0 {
		t.Errorf("/v1/loads rank = %v, want dp_rank 0, 1 running, 0 waiting", l)
	}
	if _, ok := l["num_reqs"]; ok {
		t.Errorf("/v1/loads rank has num_reqs, which LoadSnapshot.to_dict() does not: %v", l)
	}

	var legacy []map[string]any
	raw = getJSON(t, ts.URL+"/get_load", &legacy)
	if len(legacy) != 1 || legacy[0]["num_reqs"] != 1.0 || legacy[0]["num_waiting_reqs"] != 0.0 {
		t.Errorf("/get_load = %s, want one rank with num_reqs 1 and 0 waiting", raw)
	}
}

// SGLang and vLLM leave prompt_tokens_details out (vLLM: null) when nothing was cached, even
// with the reporting flag; llama.cpp reports 0. The second identical prompt is served from the
// cache and reported by all three.
func TestCachedTokensOmittedAtZero(t *testing.T) {
	for _, p := range []Protocol{SGLang04, SGLang, VLLM, LlamaCpp} {
		t.Run(string(p), func(t *testing.T) {
			_, ts := fast(t, func(o *Options) { o.Protocol = p; o.DevMode = true })
			// Long enough for one vLLM block of 16 tokens to be cached the second time.
			prompt := strings.Repeat("alpha beta gamma delta ", 12)
			body := `{"prompt":"` + prompt + `","max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`
			for i, wantCached := range []bool{false, true} {
				details, present := lastUsageDetails(t, ts.URL+"/v1/completions", body)
				switch {
				case p == LlamaCpp && !present:
					t.Errorf("request %d: llama.cpp usage without prompt_tokens_details", i)
				case p != LlamaCpp && present != wantCached:
					t.Errorf("request %d: prompt_tokens_details %s, want present=%v", i, details, wantCached)
				case present && wantCached && details == `{"cached_tokens":0}`:
					t.Errorf("request %d: a repeated prompt reported 0 cached tokens", i)
				}
			}
		})
	}
}

// lastUsageDetails is the prompt_tokens_details of the stream's usage chunk; present is false
// when it is missing or null.
func lastUsageDetails(t *testing.T, url, body string) (string, bool) {
	t.Helper()
	resp, err := post(t, context.Background(), url, "", body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var details json.RawMessage
	usage := false
	for _, line := range strings.Split(string(b), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct {
			Usage map[string]json.RawMessage `json:"usage"`
		}
		if json.Unmarshal([]byte(data), &c) == nil && c.Usage != nil {
			usage, details = true, c.Usage["prompt_tokens_details"]
		}
	}
	if !usage {
		t.Fatalf("no usage chunk in %s", b)
	}
	return string(details), len(details) > 0 && string(details) != "null"
}

// Early SGLang 0.4.x answers every flush 200 with the usual text and flushes nothing while a
// request runs; it serves POST only.
func TestSGLangEarlyFlushIsNoOpWhenBusy(t *testing.T) {
	s, ts := fast(t, func(o *Options) { o.Protocol = SGLang04Early })
	resp, err := http.Get(ts.URL + "/flush_cache")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /flush_cache = %d, want 405 (@app.post)", resp.StatusCode)
	}
	flush := func() (int, string) {
		resp, err := post(t, context.Background(), ts.URL+"/flush_cache", "", "")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	slowDecode(t, s, ts.URL)
	if code, body := flush(); code != http.StatusOK || !strings.HasPrefix(body, "Cache flushed") {
		t.Errorf("flush while busy = %d %q, want 200 Cache flushed", code, body)
	}
	if st := s.Stats(); st.FlushesIgnored != 1 || st.Flushes != 0 {
		t.Errorf("stats after a busy flush = %+v, want 1 ignored, 0 done", st)
	}
}
