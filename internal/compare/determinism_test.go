package compare

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// recorded reads the recorded benchmark result (internal/results/testdata/recorded: two
// objectives, levels 1 to 5, two confirmation trials at most levels, records files).
func recorded(t testing.TB) *results.Document {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "results", "testdata", "recorded", "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := results.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// twoWorkloads makes d hold its workload twice, under two labels, the second with its values
// scaled by f per trial index so that the comparison has figures to sum.
func twoWorkloads(d *results.Document, f func(i int) float64) {
	w := d.Workloads[0]
	w2 := w
	w2.Label = "second"
	w2.AllTrials = slices.Clone(w.AllTrials)
	for i := range w2.AllTrials {
		w2.AllTrials[i].SLOs = slices.Clone(w2.AllTrials[i].SLOs)
		for j := range w2.AllTrials[i].SLOs {
			w2.AllTrials[i].SLOs[j].Value *= f(i)
		}
	}
	d.Workloads = append(d.Workloads, w2)
}

// fingerprint is every figure of a comparison, workloads by label, with every digit.
func fingerprint(r Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "refused %q flagged %q only %q %q\n", r.Refused, r.Flagged, r.OnlyInBaseline, r.OnlyInCurrent)
	ws := slices.Clone(r.Workloads)
	slices.SortFunc(ws, func(a, b Workload) int { return strings.Compare(a.Label, b.Label) })
	for _, w := range ws {
		fmt.Fprintf(&b, "%s %s %q %q %s %s %d\n", w.Label, w.Verdict, w.Reason, w.Notes,
			levelStr(w.Axis, w.BaselineMaximumPassing), levelStr(w.Axis, w.CurrentMaximumPassing), w.CapacitySteps)
		for _, o := range w.Objectives {
			fmt.Fprintf(&b, "  %+v\n", o)
		}
	}
	return b.String()
}

// Compare returns the same bits for the same documents, whatever the map order inside it,
// and whatever order the documents list their workloads and trials in. Before the fix its
// pooled variance summed levels in map order, so t differed in its last digit between calls
// (issue 32: "provider function returned an inconsistent result").
func TestCompareDeterministic(t *testing.T) {
	t.Parallel()
	scale := func(i int) float64 { return 1 + 0.01*float64(i%3) }
	base := recorded(t)
	twoWorkloads(base, func(int) float64 { return 1 })
	cur := recorded(t)
	for i := range cur.Workloads[0].AllTrials {
		for j := range cur.Workloads[0].AllTrials[i].SLOs {
			cur.Workloads[0].AllTrials[i].SLOs[j].Value *= scale(i)
		}
	}
	twoWorkloads(cur, func(i int) float64 { return scale(i + 1) })
	records := memoized(RecordsSamples(filepath.Join("..", "results", "testdata", "recorded", "records")))
	// The bootstrap makes a call with records 40 times slower: 40 calls of it.
	for _, opts := range []struct {
		name  string
		o     Options
		calls int
	}{{"trials", Options{}, 200}, {"records", Options{Baseline: records, Current: records}, 40}} {
		t.Run(opts.name, func(t *testing.T) {
			want := Compare(base, cur, opts.o)
			wantPrint, wantSummary := fingerprint(want), want.Summary()
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range opts.calls {
				b, c := base, cur
				if i%2 == 1 {
					b, c = permuted(base, rng), permuted(cur, rng)
				}
				got := Compare(b, c, opts.o)
				if p := fingerprint(got); p != wantPrint {
					t.Fatalf("call %d (permuted %v) differs:\n%s\nwant\n%s", i, i%2 == 1, p, wantPrint)
				}
				// The summary follows the current document's order of workloads.
				if i%2 == 0 && got.Summary() != wantSummary {
					t.Fatalf("call %d: summary %q, want %q", i, got.Summary(), wantSummary)
				}
			}
		})
	}
}

// permuted is a copy of d with its workloads and each workload's trials shuffled.
func permuted(d *results.Document, rng *rand.Rand) *results.Document {
	c := *d
	c.Workloads = slices.Clone(d.Workloads)
	rng.Shuffle(len(c.Workloads), func(i, j int) { c.Workloads[i], c.Workloads[j] = c.Workloads[j], c.Workloads[i] })
	for i := range c.Workloads {
		ts := slices.Clone(c.Workloads[i].AllTrials)
		rng.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
		c.Workloads[i].AllTrials = ts
	}
	return &c
}

// memoized reads each records file once: the test is about Compare, not the file reads.
func memoized(s Samples) Samples {
	type key struct{ file, metric string }
	cache := map[key][]float64{}
	return func(w string, t results.Trial, metric string) ([]float64, bool) {
		k := key{t.RecordsFile, metric}
		if vs, ok := cache[k]; ok {
			return vs, vs != nil
		}
		vs, ok := s(w, t, metric)
		if !ok {
			vs = nil
		}
		cache[k] = vs
		return vs, ok
	}
}
