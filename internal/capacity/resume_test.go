package capacity

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

// fill sets every exported field reachable from v to a non-zero value: pointers allocated,
// slices given one element, maps one entry. A field added later is covered without
// touching the test.
func fill(t *testing.T, v reflect.Value, depth int) {
	if depth > 8 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), depth+1)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(t, s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(t, k, depth+1)
		fill(t, e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(3)
	case reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Interface, reflect.Func, reflect.Chan:
	default:
		t.Fatalf("fill: no value for %s", v.Type())
	}
}

// TestJournalRoundTripsEveryField: a trial written to the journal is read back whole. A
// field that marshals in a form it does not unmarshal from (cached_prompt_tokens did: a
// count written, a struct expected) made every line of a trial with it undecodable, so
// resume silently measured such trials again: every trial against SGLang, vLLM or llama.cpp.
func TestJournalRoundTripsEveryField(t *testing.T) {
	t.Parallel()
	cfg := testConfig("http://127.0.0.1:1")
	path := filepath.Join(t.TempDir(), "p.jsonl")
	j, err := OpenJournal(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var e JournalEntry
	fill(t, reflect.ValueOf(&e).Elem(), 0)
	e.Kind, e.Concurrency, e.Index, e.Rate, e.Speedup = "confirmation", 3, 1, 0, 0 // a concurrency trial: no rate, no speedup
	if err := j.Append(e); err != nil {
		t.Fatal(err)
	}
	j.Close()
	j2, err := OpenJournal(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	if got := j2.History(); len(got) != 1 {
		t.Fatalf("read back %d trials, want 1; ignored: %v", len(got), j2.Ignored())
	}
	got := j2.History()[0]
	e.Format, e.Fingerprint, e.FingerprintParts = journalFormat, cfg.Fingerprint(), cfg.FingerprintParts()
	if !reflect.DeepEqual(got, e) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, e)
	}
	if got.Metrics.Correctness.CachedPromptTokens == nil || !got.Metrics.Correctness.CachedPromptTokens.Known {
		t.Errorf("cached_prompt_tokens lost: %+v", got.Metrics.Correctness.CachedPromptTokens)
	}
}

// TestJournalSaysWhatItIgnored: lines of another configuration, of a delivered run and
// damaged lines are each counted and said, never dropped silently.
func TestJournalSaysWhatItIgnored(t *testing.T) {
	t.Parallel()
	cfg := testConfig("http://127.0.0.1:1")
	other := cfg
	other.MaxConcurrency = 9
	path := filepath.Join(t.TempDir(), "p.jsonl")
	write := func(c Config, entries ...JournalEntry) {
		j, err := OpenJournal(path, c)
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		for _, e := range entries {
			if err := j.Append(e); err != nil {
				t.Fatal(err)
			}
		}
	}
	trial := func(c int) JournalEntry {
		return measuredEntry(c, "confirmation", 1, 100)
	}
	write(other, trial(1), trial(2))
	write(cfg, trial(1))
	j, _ := OpenJournal(path, cfg)
	if err := j.Complete(); err != nil {
		t.Fatal(err)
	}
	j.Close()
	write(cfg, trial(1), trial(2), trial(3))
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"format":"llmserve-progress/v1","time":"cut sho` + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()

	j, err = OpenJournal(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if n := len(j.History()); n != 3 {
		t.Errorf("history of %d trials, want the 3 after the delivered run", n)
	}
	got := strings.Join(j.Ignored(), "\n")
	for _, want := range []string{"1 trial of an earlier run of this configuration that finished", "1 damaged line"} {
		if !strings.Contains(got, want) {
			t.Errorf("ignored reasons %q lack %q", got, want)
		}
	}
	// The other configuration's trials came before the delivered run, whose apply said so.
	if strings.Contains(got, "another configuration") {
		t.Errorf("ignored reasons %q repeat what the delivered run's apply said", got)
	}
	j.Close()

	// Apply after apply, each a finished run of a changed configuration: the warning says
	// the latest interrupted configuration's lines only, and does not grow.
	var said []string
	for i := range 4 {
		c := cfg
		c.MaxConcurrency = 10 + i
		write(c, trial(1), trial(2))
		j, err := OpenJournal(path, c)
		if err != nil {
			t.Fatal(err)
		}
		said = append(said, strings.Join(j.Ignored(), "\n"))
		if err := j.Complete(); err != nil {
			t.Fatal(err)
		}
		j.Close()
		write(other, trial(1)) // an interrupted run of another configuration between them
	}
	if said[3] != said[1] || said[2] != said[1] || !strings.Contains(said[1], "1 trial of another configuration") {
		t.Errorf("the warning changes with every apply: %q", said)
	}
}

// TestResumeReusesExactlyTheFinishedTrials interrupts a run after k finished trials for
// several k against an engine that reports cached tokens (the SGLang double), resumes, and
// checks that the server served no request of a reused trial, that the report says what was
// reused, and that the result equals an uninterrupted run's.
func TestResumeReusesExactlyTheFinishedTrials(t *testing.T) {
	t.Parallel()
	eng := twoSlotEngine(t, simengine.Options{Protocol: simengine.SGLang, Version: "0.5.10"})
	var generations atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/completions") {
			generations.Add(1)
		}
		eng.ServeHTTP(w, r)
	}))
	defer srv.Close()
	perTrial := int64(testConfig("").WarmupRequests + testConfig("").MeasuredRequests)

	fresh, err := Resume(context.Background(), testConfig(srv.URL), Files{})
	if err != nil {
		t.Fatal(err)
	}
	all := fresh.Document.Workloads[0].AllTrials
	for _, k := range []int{1, 3, len(all) - 1} {
		path := filepath.Join(t.TempDir(), "p.jsonl")
		ctx, cancel := context.WithCancel(context.Background())
		cfg := testConfig(srv.URL)
		finished := 0
		var lines []string
		_, err := Resume(ctx, cfg, Files{ProgressFile: path, Say: func(l string) {
			lines = append(lines, l)
			if strings.Contains(l, " trials done") || strings.Contains(l, " trial done") {
				if finished++; finished == k {
					cancel()
				}
			}
		}})
		cancel()
		var stopped *StoppedError
		if !errors.As(err, &stopped) || stopped.Why != StopInterrupted || stopped.Kept != k {
			t.Fatalf("k=%d: error %v, want an interruption keeping %d trials", k, err, k)
		}
		if msg := err.Error(); !strings.Contains(msg, "interrupted during") || !strings.Contains(msg, path) || strings.Contains(msg, "context canceled") {
			t.Errorf("k=%d: message %q", k, msg)
		}
		before := generations.Load()
		rep, err := Resume(context.Background(), cfg, Files{ProgressFile: path})
		if err != nil {
			t.Fatal(err)
		}
		served := generations.Load() - before
		if rep.Resumed.Trials != k {
			t.Errorf("k=%d: resumed %d trials", k, rep.Resumed.Trials)
		}
		// Each trial measured again costs warmups + measured requests (probes may stop
		// early and cost fewer); the reused ones cost nothing.
		if maxServed := perTrial*int64(len(all)-k) + 1; served > maxServed {
			t.Errorf("k=%d: the resumed run sent %d generation requests, more than the %d trials left can (%d)", k, served, len(all)-k, maxServed)
		}
		got := rep.Document.Workloads[0]
		want := fresh.Document.Workloads[0]
		if !reflect.DeepEqual(got.MaximumPassingConcurrency, want.MaximumPassingConcurrency) || !reflect.DeepEqual(got.FirstFailingConcurrency, want.FirstFailingConcurrency) {
			t.Errorf("k=%d: boundary %v/%v, uninterrupted %v/%v", k, got.MaximumPassingConcurrency, got.FirstFailingConcurrency, want.MaximumPassingConcurrency, want.FirstFailingConcurrency)
		}
		// The trials the resumed run reused are the interrupted run's, first and in order.
		journaled := journalTrialsOf(t, path, cfg)
		for i := range k {
			g, j := got.AllTrials[i], journaled[i]
			if g.Concurrency != j.Concurrency || g.Kind != j.Kind || g.Trial != j.Index {
				t.Errorf("k=%d: trial %d is %s %d at c=%d, the journal's %s %d at c=%d", k, i, g.Kind, g.Trial, g.Concurrency, j.Kind, j.Index, j.Concurrency)
			}
		}
		// The same sequence as the uninterrupted run, unless wall-clock noise on this machine
		// moved a trial near its threshold (then the search rightly asks for other trials).
		if !nearThreshold(all) && !nearThreshold(got.AllTrials) {
			if len(got.AllTrials) != len(all) {
				t.Errorf("k=%d: %d trials, uninterrupted %d", k, len(got.AllTrials), len(all))
			}
			for i := range min(len(got.AllTrials), len(all)) {
				g, w := got.AllTrials[i], all[i]
				if g.Concurrency != w.Concurrency || g.Kind != w.Kind || g.Trial != w.Trial {
					t.Errorf("k=%d: trial %d is %s %d at c=%d, uninterrupted %s %d at c=%d", k, i, g.Kind, g.Trial, g.Concurrency, w.Kind, w.Trial, w.Concurrency)
				}
			}
		}
		// The journal holds each trial once.
		seen := map[string]bool{}
		data, _ := os.ReadFile(path)
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			for _, e := range journalLine(nil, []byte(l), cfg.Fingerprint(), &ignoredLines{}) {
				key := fmt.Sprintf("%s %d at c=%d", e.Kind, e.Index, e.Concurrency)
				if seen[key] {
					t.Errorf("k=%d: the journal holds %s twice", k, key)
				}
				seen[key] = true
			}
		}
	}
}

// nearThreshold reports a trial whose objective value came within a factor 1.6 of its
// threshold: the test engine's trials are 15 times below or twice above it unless the
// machine stalled, and only then may two runs' searches take different paths.
func nearThreshold(trials []results.Trial) bool {
	for _, tr := range trials {
		for _, r := range tr.SLOs {
			if c := r.Value / 150; c > 1/1.6 && c < 1.6 {
				return true
			}
		}
	}
	return false
}

// journalTrialsOf reads the trials of cfg's runs from the journal at path, in order.
func journalTrialsOf(t *testing.T, path string, cfg Config) []JournalEntry {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []JournalEntry
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		out = append(out, journalLine(nil, []byte(l), cfg.Fingerprint(), &ignoredLines{})...)
	}
	return out
}

// TestServerGoneAfterGoodTrials: a server that dies after good trials is reported as such,
// with its last error, not with the start-up advice.
func TestServerGoneAfterGoodTrials(t *testing.T) {
	eng := twoSlotEngine(t, simengine.Options{Protocol: simengine.SGLang, Version: "0.5.10"})
	srv := httptest.NewServer(eng)
	var finished int
	path := filepath.Join(t.TempDir(), "p.jsonl")
	_, err := Resume(context.Background(), testConfig(srv.URL), Files{ProgressFile: path, Say: func(l string) {
		if strings.Contains(l, " done,") {
			if finished++; finished == 2 {
				srv.CloseClientConnections()
				srv.Listener.Close()
			}
		}
	}})
	srv.Close()
	var stopped *StoppedError
	if !errors.As(err, &stopped) || stopped.Why != StopServerGone {
		t.Fatalf("error %v, want the server gone", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "stopped answering after 2 good trials") || !strings.Contains(msg, "last error") ||
		strings.Contains(msg, "check the endpoint URL") || !strings.Contains(msg, path) {
		t.Errorf("message %q", msg)
	}
}

// TestCapacityZeroWarns: even one concurrent request missing the SLO warns at apply with
// the objective, its value and the limit.
func TestCapacityZeroWarns(t *testing.T) {
	t.Parallel()
	eng := twoSlotEngine(t, simengine.Options{})
	srv := httptest.NewServer(eng)
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.SLOs = []results.SLO{{Metric: "time_to_first_token", Percentile: 95, ThresholdMs: 1}}
	doc, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A wall-clock engine's trials may also differ by their timing noise (5.1 against 4.9 ms
	// on a busy CI host), which earns the noise warnings of advice_noise.go; those are not
	// this test's subject, the one capacity-0 warning is.
	var ws []problem.Problem
	for _, w := range cfg.ResultWarnings(doc) {
		if !strings.Contains(w.Summary, "disagree beyond their size") && !strings.Contains(w.Summary, "machine was busy") {
			ws = append(ws, w)
		}
	}
	if len(ws) != 1 || !strings.Contains(ws[0].Summary, "no capacity") ||
		!strings.Contains(ws[0].Detail, "p95 TTFT was") || !strings.Contains(ws[0].Detail, "< 1 ms") || !strings.Contains(ws[0].Detail, "× the limit") {
		t.Fatalf("warnings %+v", ws)
	}
}

// TestResumeFromAForgedJournal: a finished run's journal, with a confirmation trial copied
// with a lowered p95, a failing one turned into a pass and a note typed into the file, is
// resumed. The forged lines are measured again and named in the warning, the note counted,
// and the result passes every check a reader of documents makes (Parse: the document's
// face and CheckHeadline), with each trial once.
func TestResumeFromAForgedJournal(t *testing.T) {
	t.Parallel()
	eng := twoSlotEngine(t, simengine.Options{Protocol: simengine.SGLang, Version: "0.5.10"})
	srv := httptest.NewServer(eng)
	defer srv.Close()
	cfg := testConfig(srv.URL)
	path := filepath.Join(t.TempDir(), "p.jsonl")
	if _, err := Resume(context.Background(), cfg, Files{ProgressFile: path}); err != nil {
		t.Fatal(err)
	}
	entries := journalTrialsOf(t, path, cfg)
	pi := slices.IndexFunc(entries, func(e JournalEntry) bool { return e.Kind == "confirmation" && e.Pass })
	fi := slices.IndexFunc(entries, func(e JournalEntry) bool { return e.Kind == "confirmation" && !e.Pass && e.Errors == 0 })
	if pi < 0 || fi < 0 {
		t.Fatalf("the run journaled no passing and failing confirmation trials: %+v", entries)
	}
	var lines []string
	var forgedDup, forgedPass, note int // their line numbers
	for i, e := range entries {
		lines = append(lines, journalLineOf(t, cfg, e))
		switch i {
		case pi: // the same trial again, its p95 edited
			d := e
			m := *e.Metrics
			m.TTFTMs.P95 *= 0.5
			d.Metrics = &m
			lines = append(lines, journalLineOf(t, cfg, d))
			forgedDup = len(lines)
		case fi: // replaced by a pass
			lines = lines[:len(lines)-1]
			f := e
			f.Pass, f.Verdict = true, "pass"
			lines = append(lines, journalLineOf(t, cfg, f))
			forgedPass = len(lines)
		}
		if i == 0 {
			lines = append(lines, "TODO: re-run the 8K workload with the new image")
			note = len(lines)
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	rep, err := Resume(context.Background(), cfg, Files{ProgressFile: path})
	if err != nil {
		t.Fatal(err)
	}
	warning := strings.Join(rep.Resumed.Ignored, "\n")
	for _, want := range []string{
		fmt.Sprintf("line %d not reused: lines %d, %d record the same trial (workload \"64 / 8\", concurrency %d, confirmation %d)", forgedDup-1, forgedDup-1, forgedDup, entries[pi].Concurrency, entries[pi].Index),
		fmt.Sprintf("line %d not reused: it says pass, but its own figures give fail (p95 time_to_first_token", forgedPass),
		fmt.Sprintf("1 line not written by this provider (the first: line %d)", note),
	} {
		if !strings.Contains(warning, want) {
			t.Errorf("warning %q lacks %q", warning, want)
		}
	}
	if want := len(entries) - 2; rep.Resumed.Trials != want {
		t.Errorf("resumed %d trials, want the %d unforged ones", rep.Resumed.Trials, want)
	}
	data, err := results.Marshal(rep.Document)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := results.Parse(data); err != nil {
		t.Fatalf("the resumed result fails the document checks: %v", err)
	}
	seen := map[string]bool{}
	for i, w := range rep.Document.Workloads {
		if c := results.CheckHeadline(rep.Document.Objectives(), i, w); len(c) > 0 {
			t.Errorf("CheckHeadline: %v", c)
		}
		for _, tr := range w.AllTrials {
			key := fmt.Sprintf("%s %d at c=%d", tr.Kind, tr.Trial, tr.Concurrency)
			if seen[key] {
				t.Errorf("the result holds %s twice", key)
			}
			seen[key] = true
		}
		if !nearThreshold(w.AllTrials) && (w.MaximumPassingConcurrency == nil || *w.MaximumPassingConcurrency != 2) {
			t.Errorf("maximum passing concurrency %v, want 2", w.MaximumPassingConcurrency)
		}
	}
}

// TestJournalOfARateSearchIsReusable: every line a real rate search journals passes the
// journal's checks, so an interrupted rate search resumes from all of them.
func TestJournalOfARateSearchIsReusable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(twoSlotEngine(t, simengine.Options{}))
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.WarmupRequests, cfg.MeasuredRequests, cfg.ConfirmationTrials = 2, 16, 1
	cfg.OpenLoop = &OpenLoop{Arrival: load.Arrival{Pattern: load.ArrivalConstant}, MinRate: 3, MaxRate: 12, Tolerance: 0.25}
	path := filepath.Join(t.TempDir(), "p.jsonl")
	if _, err := Resume(context.Background(), cfg, Files{ProgressFile: path}); err != nil {
		t.Fatal(err)
	}
	entries := journalTrialsOf(t, path, cfg)
	var lines []string
	for _, e := range entries {
		lines = append(lines, journalLineOf(t, cfg, e))
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := OpenJournal(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if len(j.History()) != len(entries) || len(j.Ignored()) > 0 {
		t.Errorf("reused %d of %d lines; ignored: %q", len(j.History()), len(entries), j.Ignored())
	}
}

// TestTimeoutQuotesTheFlushsLastAnswer: a flush the server answers 400 until timeouts.create
// passes ends in a timeout that quotes the server's last answer, status and body, with the
// API key redacted, instead of only "timed out during the connection check".
func TestTimeoutQuotesTheFlushsLastAnswer(t *testing.T) {
	t.Parallel()
	const key = "sk-flush-secret-42"
	eng := twoSlotEngine(t, simengine.Options{Protocol: simengine.SGLang, Version: "0.5.10", APIKey: key})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/flush_cache") {
			http.Error(w, "pending requests (client "+key+")", http.StatusBadRequest)
			return
		}
		eng.ServeHTTP(w, r)
	}))
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.APIKey = key
	cfg.IdleTimeout = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := Resume(ctx, cfg, Files{})
	var stopped *StoppedError
	if !errors.As(err, &stopped) || stopped.Why != StopTimedOut {
		t.Fatalf("err %v, want a timeout", err)
	}
	msg := err.Error()
	t.Log(msg)
	for _, want := range []string{
		"timed out (timeouts.create) during the connection check, waiting on the server: the cache flush POST " + srv.URL + "/flush_cache refused ",
		`(last answer HTTP 400: "pending requests (client `,
		"raise timeouts.create",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, key) {
		t.Errorf("message %q holds the API key", msg)
	}
}
