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
	"strconv"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

// The runner mode of a Kubernetes Job (Serve) against a simulated engine: its events served
// in whole lines from any offset while it runs, its result once it ends, its records as the
// tar the provider unpacks into records_directory; started again in the same directory (the
// container restarted after the run) it serves the same result without measuring anything.
func TestServe(t *testing.T) {
	engine, err := simengine.NewServer(simengine.Options{Model: simengine.TwoSlotModel(), ModelName: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(engine)
	defer srv.Close()
	specDir, dir := t.TempDir(), t.TempDir()
	cfg := testConfig(srv.URL)
	cfg.RecordsDirectory = RecordsPath
	writeSpec := func() {
		raw, _ := json.Marshal(Spec{Config: cfg})
		if err := os.WriteFile(filepath.Join(specDir, "spec.json"), raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	base := "http://" + addr
	get := func(p string) (int, []byte) {
		resp, err := http.Get(base + p)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, raw
	}
	serve := func(ctx context.Context) chan int {
		done := make(chan int, 1)
		go func() {
			done <- Serve(ctx, []string{"--listen", addr, "--dir", dir, "--spec", filepath.Join(specDir, "spec.json")}, io.Discard, io.Discard)
		}()
		return done
	}

	writeSpec()
	ctx, cancel := context.WithCancel(context.Background())
	done := serve(ctx)
	var offset int64
	trials := 0
	deadline := time.Now().Add(2 * time.Minute)
	var result []byte
	for time.Now().Before(deadline) {
		code, chunk := get(eventsPath + "?offset=" + strconv.FormatInt(offset, 10))
		if code == http.StatusOK && len(chunk) > 0 {
			if chunk[len(chunk)-1] != '\n' {
				t.Fatalf("events from %d end mid-line: %q", offset, chunk[max(0, len(chunk)-40):])
			}
			for _, line := range bytes.Split(bytes.TrimSuffix(chunk, []byte("\n")), []byte("\n")) {
				var e Event
				if err := json.Unmarshal(line, &e); err != nil {
					t.Fatalf("event line %q: %v", line, err)
				}
				if e.Trial != nil {
					trials++
				}
			}
			offset += int64(len(chunk))
		}
		if code, raw := get(resultPath); code == http.StatusOK {
			result = raw
			if code, chunk := get(eventsPath + "?offset=" + strconv.FormatInt(offset, 10)); code == http.StatusOK && len(chunk) == 0 {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	var res Result
	if err := json.Unmarshal(result, &res); err != nil || res.Document == nil || res.Error != "" {
		t.Fatalf("result %v: %.500s", err, result)
	}
	if trials < 4 {
		t.Errorf("%d trial events served; want every trial (at least 4)", trials)
	}
	code, tarball := get(recordsPath)
	recs := t.TempDir()
	if code != http.StatusOK {
		t.Fatalf("records: %d", code)
	}
	if err := extractRecords(bytes.NewReader(tarball), recs); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(recs, "*", "*.jsonl"))
	if more, _ := filepath.Glob(filepath.Join(recs, "*.jsonl")); len(files)+len(more) < trials {
		t.Errorf("%d records files for %d trials", len(files)+len(more), trials)
	}
	cancel()
	if code := <-done; code != ExitFinished {
		t.Errorf("exit %d after the stop", code)
	}

	// Started again after the run: the same result, nothing measured again.
	served := engine.Stats().RequestsServed
	writeSpec()
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	done = serve(ctx)
	var again []byte
	for i := 0; i < 200; i++ {
		if code, raw := get(resultPath); code == http.StatusOK {
			again = raw
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if !bytes.Equal(again, result) {
		t.Errorf("the restarted runner serves another result")
	}
	if code, chunk := get(eventsPath + "?offset=" + strconv.FormatInt(offset, 10)); code != http.StatusOK || len(chunk) != 0 {
		t.Errorf("the restarted runner wrote events (%d, %d bytes)", code, len(chunk))
	}
	if got := engine.Stats().RequestsServed; got != served {
		t.Errorf("the restarted runner sent %d requests", got-served)
	}
	cancel()
	<-done
}
