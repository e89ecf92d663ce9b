package capacity

import (
	"bytes"
	"context"
	"errors"
	"hash/fnv"
	"io"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

// replicaLog is one replica double's record of its idle checks, flushes and generations.
type replicaLog struct{ simengine.CallLog }

// flushes counts the flushes and checks that each one came right after an idle check on
// the same replica. The one exception may be the replica's first call: the flush at connect,
// which goes through the Service, so its idle check may have reached another replica.
func (l *replicaLog) flushes(t *testing.T, name string) (n int, first bool) {
	t.Helper()
	events := l.Events()
	for i, ev := range events {
		if ev != "flush" {
			continue
		}
		n++
		switch {
		case i == 0:
			first = true
		case events[i-1] != "idle":
			t.Errorf("%s: flush %d not preceded by an idle check (events %v)", name, n, events)
		}
	}
	return n, first
}

// roundRobin is a Service in front of the replicas: each request goes to the next one.
func roundRobin(t *testing.T, urls []string) string {
	t.Helper()
	var next atomic.Uint64
	targets := make([]*url.URL, len(urls))
	for i, u := range urls {
		targets[i], _ = url.Parse(u)
	}
	proxy := &httputil.ReverseProxy{FlushInterval: -1, Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(targets[next.Add(1)%uint64(len(targets))])
	}}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return srv.URL
}

// With replica_endpoints, every replica behind the Service is waited for and flushed
// before every trial (the Service alone would reach one of them), and each trial's
// document says per replica what was proven, with the replica's own prefix-cache counters.
func TestRunFlushesEveryReplica(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		protocol simengine.Protocol
		opts     simengine.Options
	}{
		{simengine.SGLang, simengine.Options{Version: "0.5.10"}},
		{simengine.VLLM, simengine.Options{Version: "0.11.0", DevMode: true}},
	} {
		t.Run(string(tc.protocol), func(t *testing.T) {
			t.Parallel()
			const n = 3
			var urls []string
			var engines []*simengine.Server
			logs := make([]*replicaLog, n)
			for i := range n {
				opts := tc.opts
				opts.Protocol = tc.protocol
				eng := twoSlotEngine(t, opts)
				logs[i] = &replicaLog{}
				srv := httptest.NewServer(logs[i].Wrap(eng))
				t.Cleanup(srv.Close)
				urls = append(urls, srv.URL)
				engines = append(engines, eng)
			}
			cfg := testConfig(roundRobin(t, urls))
			cfg.ReplicaEndpoints = urls
			cfg.ConcurrencyLevels = []int{1, 2}
			var trials atomic.Int64
			cfg.Progress = func(JournalEntry) { trials.Add(1) }
			doc, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			T := int(trials.Load())
			if T < 2 {
				t.Fatalf("%d trials, want at least 2", T)
			}
			// Each replica once per trial, and one of them once more: the flush at connect
			// that identified the engine through the Service.
			total, atConnect := 0, 0
			for i, l := range logs {
				f, first := l.flushes(t, urls[i])
				total += f
				if first {
					atConnect++
				}
				if f < T {
					t.Errorf("replica %d flushed %d times for %d trials", i+1, f, T)
				}
				if st := engines[i].Stats(); st.FlushesIgnored != 0 || st.Flushes != int64(f) {
					t.Errorf("replica %d: %d flushes done, %d ignored, %d sent", i+1, st.Flushes, st.FlushesIgnored, f)
				}
			}
			if atConnect > 1 {
				t.Errorf("%d replicas were flushed before any idle check; only the flush at connect may be", atConnect)
			}
			if total != n*T+1 {
				t.Errorf("%d flushes in all, want %d (%d replicas × %d trials + 1 at connect)", total, n*T+1, n, T)
			}
			w := doc.Workloads[0]
			if len(w.Trials()) == 0 {
				t.Fatal("no trials in the document")
			}
			for _, tr := range w.Trials() {
				reps := tr.Trial.Replicas
				if len(reps) != n {
					t.Fatalf("trial %s/%d: %d replica checks, want %d", tr.Side, tr.Trial.Trial, len(reps), n)
				}
				prompts := 0.0
				for i, c := range reps {
					if c.Endpoint != urls[i] || !c.IdleVerified || !c.CacheFlushed || c.PrefixCacheHitTokens == nil || c.PromptTokens == nil {
						t.Errorf("trial %s/%d replica %d: %+v, want %s idle, flushed, with its counters", tr.Side, tr.Trial.Trial, i+1, c, urls[i])
						continue
					}
					prompts += *c.PromptTokens
				}
				// The measured requests went through the Service; the replicas' own counters
				// together saw every one of them.
				if min := float64(cfg.MeasuredRequests * cfg.Workloads[0].InputTokens); prompts < min {
					t.Errorf("trial %s/%d: the replicas counted %g prompt tokens over the measured requests, want at least %g", tr.Side, tr.Trial.Trial, prompts, min)
				}
				c := tr.Trial.Correctness
				if c.CachedPromptTokens == nil || !c.CachedPromptTokens.Known || c.RequestsCachedBeyondSharedPrefix != 0 {
					t.Errorf("trial %s/%d: cached %+v, %d beyond the shared prefix; want a known cold cache", tr.Side, tr.Trial.Trial, c.CachedPromptTokens, c.RequestsCachedBeyondSharedPrefix)
				}
			}
		})
	}
}

// A replica that does not confirm its flush fails the trial, and the error names it.
func TestRunNamesTheReplicaThatWasNotFlushed(t *testing.T) {
	t.Parallel()
	var urls []string
	for i := range 3 {
		opts := simengine.Options{Protocol: simengine.SGLang}
		if i == 1 {
			opts.FlushFault = simengine.FlushRefused
		}
		srv := httptest.NewServer(twoSlotEngine(t, opts))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	cfg := testConfig(urls[0]) // the Service happens to reach a healthy replica
	cfg.ReplicaEndpoints = urls
	cfg.IdleTimeout = 300 * time.Millisecond
	_, err := Run(context.Background(), cfg)
	if !errors.Is(err, engine.ErrFlushFailed) || !strings.Contains(err.Error(), "replica 2 of 3 ("+urls[1]+")") {
		t.Fatalf("err = %v, want the refused flush of replica 2 of 3 (%s)", err, urls[1])
	}
	for _, ok := range []string{urls[0], urls[2]} {
		if strings.Contains(err.Error(), "("+ok+")") {
			t.Errorf("err = %v names a replica that flushed (%s)", err, ok)
		}
	}
}

// stickyService sends the same request body to the same replica every time (a Service with
// session affinity by prompt), so a second run with the same seed sends each prompt to the
// replica that saw it in the first.
func stickyService(t *testing.T, urls []string) string {
	t.Helper()
	targets := make([]*url.URL, len(urls))
	for i, u := range urls {
		targets[i], _ = url.Parse(u)
	}
	proxy := &httputil.ReverseProxy{FlushInterval: -1, Rewrite: func(r *httputil.ProxyRequest) {
		body, _ := io.ReadAll(r.In.Body)
		r.Out.Body = io.NopCloser(bytes.NewReader(body))
		h := fnv.New32a()
		_, _ = h.Write(body)
		r.SetURL(targets[h.Sum32()%uint32(len(targets))])
	}}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return srv.URL
}

// One replica answers its flush and keeps its cache (a flush not honoured). The responses
// report no cached tokens, so only the engines' counters can tell; the replicas' own
// counters, summed, catch it on the second run of the same prompts, and the trial's note
// names the replica whose cache served them.
func TestRunCatchesAWarmReplica(t *testing.T) {
	t.Parallel()
	var urls []string
	for i := range 3 {
		opts := simengine.Options{Protocol: simengine.SGLang, NoCacheReport: true}
		if i == 1 {
			opts.FlushFault = simengine.FlushIgnored
		}
		srv := httptest.NewServer(twoSlotEngine(t, opts))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	cfg := testConfig(stickyService(t, urls))
	cfg.ReplicaEndpoints = urls
	cfg.ConcurrencyLevels = []int{2}
	var doc *results.Document
	for range 2 {
		var err error
		if doc, err = Run(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
	}
	if warm := WarmCacheTrials(doc); len(warm) == 0 {
		t.Fatal("the warm replica was not caught")
	}
	tr := doc.Workloads[0].Trials()[0].Trial
	notes := strings.Join(tr.Notes, " ")
	if !strings.Contains(notes, "answered but not honoured") || !strings.Contains(notes, "prefix-cache hits per replica") {
		t.Fatalf("notes %q; want the counter's finding and the hits per replica", tr.Notes)
	}
	// The replica that kept its cache served the hits beyond the prefix; the others only the
	// shared prefix (the chat template), at most once per request.
	hits := func(i int) float64 { return *tr.Replicas[i].PrefixCacheHitTokens }
	if !(hits(1) > hits(0) && hits(1) > hits(2)) {
		t.Errorf("prefix-cache hits per replica %g, %g, %g; want replica 2's the highest", hits(0), hits(1), hits(2))
	}
}
