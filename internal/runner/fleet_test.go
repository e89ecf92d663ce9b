package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Two runner pods on loopback, as an Indexed Job runs them: pod 0 waits for the other's
// address (which the provider posts, with the fleet's token), then measures every trial from
// both over HTTP; the result's trials are spread over the two, their records merged. A post
// without the token is refused.
func TestServeFleet(t *testing.T) {
	engine, err := simengine.NewServer(simengine.Options{Model: simengine.TwoSlotModel(), ModelName: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(engine)
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.APIKey, cfg.AdminAPIKey = "", ""
	cfg.RecordsDirectory = RecordsPath
	cfg.Pods = 2
	spec := Spec{Config: cfg, FleetToken: "fleet-secret"}
	addrs := []string{freeAddr(t), freeAddr(t)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var dones []chan int
	for i, addr := range addrs {
		specDir, dir := t.TempDir(), t.TempDir()
		raw, _ := json.Marshal(spec)
		if err := os.WriteFile(filepath.Join(specDir, "spec.json"), raw, 0o600); err != nil {
			t.Fatal(err)
		}
		done := make(chan int, 1)
		dones = append(dones, done)
		go func() {
			done <- Serve(ctx, []string{"--listen", addr, "--dir", dir, "--spec", filepath.Join(specDir, "spec.json"), "--index", string(rune('0' + i))}, io.Discard, io.Discard)
		}()
	}
	post := func(token string) int {
		body, _ := json.Marshal(map[string][]string{"peers": addrs[1:]})
		for range 100 {
			req, _ := http.NewRequest(http.MethodPost, "http://"+addrs[0]+peersPath, bytes.NewReader(body))
			req.Header.Set(tokenHeader, token)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
				return resp.StatusCode
			}
			time.Sleep(20 * time.Millisecond)
		}
		return 0
	}
	if code := post("wrong"); code != http.StatusForbidden {
		t.Errorf("peers posted without the token: %d", code)
	}
	if code := post("fleet-secret"); code != http.StatusNoContent {
		t.Fatalf("peers posted with the token: %d", code)
	}
	var res Result
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addrs[0] + resultPath)
		if err == nil && resp.StatusCode == http.StatusOK {
			err = json.NewDecoder(resp.Body).Decode(&res)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("result: %v", err)
			}
			break
		}
		if err == nil {
			resp.Body.Close()
		}
		time.Sleep(50 * time.Millisecond)
	}
	if res.Document == nil || res.Error != "" {
		t.Fatalf("result: %+v", res)
	}
	doc, err := results.Parse(res.Document)
	if err != nil {
		t.Fatal(err)
	}
	w := doc.Workloads[0]
	if w.MaximumPassingConcurrency == nil || *w.MaximumPassingConcurrency != 2 {
		t.Errorf("maximum passing %v, want 2", w.MaximumPassingConcurrency)
	}
	for _, tr := range w.AllTrials {
		if tr.Pods == nil || tr.Pods.Pods != 2 {
			t.Fatalf("trial at %d not spread: %+v", tr.Concurrency, tr.Pods)
		}
		t.Logf("concurrency %d: shares %d+%d, start skew %.3f ms (clock uncertainty %.3f ms)", tr.Concurrency,
			tr.Pods.Shares[0].Concurrency, tr.Pods.Shares[1].Concurrency, tr.Pods.StartSkewMs, tr.Pods.ClockUncertaintyMs)
	}
	// The worker pod serves no events and no result of its own: the provider reads pod 0.
	resp, err := http.Get("http://" + addrs[1] + resultPath)
	if err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("the worker's result: %v %v", err, resp.Status)
	}
	resp.Body.Close()
	cancel()
	for _, d := range dones {
		if code := <-d; code != ExitFinished {
			t.Errorf("exit %d", code)
		}
	}
}

// A fleet whose other pods never answer stops waiting after PeerWait, naming the pods.
func TestFleetPeersWaitIsBounded(t *testing.T) {
	old := PeerWait
	PeerWait = 300 * time.Millisecond
	t.Cleanup(func() { PeerWait = old })
	f := newHTTPFleet(t.TempDir(), "tok", 3, nil)
	if err := f.setPeers([]string{freeAddr(t), freeAddr(t)}); err != nil {
		t.Fatal(err)
	}
	_, err := f.Peers(context.Background())
	if err == nil || !strings.Contains(err.Error(), "runner pods 1, 2 of 3 did not answer within 300ms") {
		t.Errorf("err = %v", err)
	}
	// What pod 0 was told survives its restart.
	again := newHTTPFleet(f.dir, "tok", 3, nil)
	if len(again.addrs) != 2 {
		t.Errorf("restarted: %v", again.addrs)
	}
}

// Pod 0 takes pod IPs and ports only: a host name (which could send the trial's shares
// wherever it resolves), a missing port or the wrong count is refused, and nothing is kept.
func TestFleetPeersArePodAddresses(t *testing.T) {
	t.Parallel()
	for _, addrs := range [][]string{
		{"10.0.0.2:8080", "evil.example.com:8080"},
		{"10.0.0.2:8080", "10.0.0.3"},
		{"10.0.0.2:8080"},
	} {
		f := newHTTPFleet(t.TempDir(), "tok", 3, nil)
		if err := f.setPeers(addrs); err == nil {
			t.Errorf("%q: accepted", addrs)
		}
		if len(f.addrs) != 0 {
			t.Errorf("%q: kept %v", addrs, f.addrs)
		}
	}
	f := newHTTPFleet(t.TempDir(), "tok", 3, nil)
	if err := f.setPeers([]string{"10.0.0.2:8080", "[fd00::3]:8080"}); err != nil {
		t.Errorf("pod IPs refused: %v", err)
	}
}
