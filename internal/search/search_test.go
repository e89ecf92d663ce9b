package search

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// scripted is a TrialRunner whose verdicts come from a function of the request. It fails the
// test when a request is run twice: the search must never repeat a trial.
type scripted struct {
	t     *testing.T
	pass  func(Request) bool
	value func(Request) float64
	ran   []Request
	seen  map[Request]bool
	// stopAfter > 0 cancels the context once that many trials have run, as an interrupted apply.
	stopAfter int
	cancel    context.CancelFunc
}

func (s *scripted) RunTrial(ctx context.Context, req Request) (Outcome, error) {
	if err := ctx.Err(); err != nil {
		return Outcome{}, fmt.Errorf("trial not started: %w", err)
	}
	if s.seen == nil {
		s.seen = map[Request]bool{}
	}
	if s.seen[req] {
		s.t.Errorf("request %+v run twice", req)
	}
	s.seen[req] = true
	s.ran = append(s.ran, req)
	if s.stopAfter > 0 && len(s.ran) == s.stopAfter {
		s.cancel()
		delete(s.seen, req) // an unfinished trial may run again on resume
		return Outcome{}, fmt.Errorf("load stopped: %w", ctx.Err())
	}
	o := Outcome{Pass: s.pass(req), Cost: float64(req.Concurrency)}
	if s.value != nil {
		o.Value = s.value(req)
	}
	if req.Kind == Probe && !o.Pass {
		o.DecidedEarly = true
	}
	o.Detail = fmt.Sprintf("detail %d/%s/%d", req.Concurrency, req.Kind, req.Index)
	return o, nil
}

func upTo(b int) func(Request) bool { return func(r Request) bool { return r.Concurrency <= b } }

func intp(v int) *int { return &v }

func sides(trials []Outcome) (concurrencies []int, indexes []int, passes []bool) {
	for _, o := range trials {
		concurrencies = append(concurrencies, o.Concurrency)
		indexes = append(indexes, o.Index)
		passes = append(passes, o.Pass)
	}
	return
}

func TestRunBoundaries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name              string
		min, max, k       int
		pass              func(Request) bool
		wantMax, wantFail *int
		wantPassing       []int // concurrency of each reported passing trial
		wantFailing       []int
		wantFailingPasses []bool
	}{
		{
			name: "boundary inside", min: 1, max: 64, k: 3, pass: upTo(11),
			wantMax: intp(11), wantFail: intp(12),
			wantPassing: []int{11, 11, 11}, wantFailing: []int{12, 12, 12}, wantFailingPasses: []bool{false, false, false},
		},
		{
			name: "minimum fails", min: 1, max: 64, k: 3, pass: upTo(0),
			wantMax: nil, wantFail: intp(1),
			wantFailing: []int{1, 1, 1}, wantFailingPasses: []bool{false, false, false},
		},
		{
			name: "minimum fails with higher minimum", min: 4, max: 16, k: 2, pass: upTo(3),
			wantMax: nil, wantFail: intp(4),
			wantFailing: []int{4, 4}, wantFailingPasses: []bool{false, false},
		},
		{
			name: "nothing fails up to max", min: 1, max: 64, k: 3, pass: upTo(1000),
			wantMax: intp(64), wantFail: nil, wantPassing: []int{64, 64, 64},
		},
		{
			name: "boundary at max minus one", min: 1, max: 64, k: 3, pass: upTo(63),
			wantMax: intp(63), wantFail: intp(64),
			wantPassing: []int{63, 63, 63}, wantFailing: []int{64, 64, 64}, wantFailingPasses: []bool{false, false, false},
		},
		{
			name: "min equals max and passes", min: 8, max: 8, k: 3, pass: upTo(8),
			wantMax: intp(8), wantFail: nil, wantPassing: []int{8, 8, 8},
		},
		{
			name: "min equals max and fails", min: 8, max: 8, k: 1, pass: upTo(7),
			wantMax: nil, wantFail: intp(8), wantFailing: []int{8}, wantFailingPasses: []bool{false},
		},
		{
			name: "single confirmation trial", min: 1, max: 100, k: 1, pass: upTo(37),
			wantMax: intp(37), wantFail: intp(38),
			wantPassing: []int{37}, wantFailing: []int{38}, wantFailingPasses: []bool{false},
		},
		{
			// Noise near the boundary: the probe at 12 passes, but the second confirmation
			// trial at 12 fails, so the grid protocol's first failing level is 12. All three
			// trials at 12 are reported, the passing ones too.
			name: "confirmation failure moves down", min: 1, max: 64, k: 3,
			pass: func(r Request) bool {
				return r.Concurrency <= 11 || (r.Concurrency == 12 && !(r.Kind == Confirmation && r.Index == 2))
			},
			wantMax: intp(11), wantFail: intp(12),
			wantPassing: []int{11, 11, 11}, wantFailing: []int{12, 12, 12}, wantFailingPasses: []bool{true, false, true},
		},
		{
			// The probe at 16 fails by noise while its confirmation trials all pass: the
			// search moves up again and finds the real boundary.
			name: "confirmation pass moves up", min: 1, max: 64, k: 3,
			pass: func(r Request) bool {
				return r.Concurrency <= 20 && !(r.Concurrency == 16 && r.Kind == Probe)
			},
			wantMax: intp(20), wantFail: intp(21),
			wantPassing: []int{20, 20, 20}, wantFailing: []int{21, 21, 21}, wantFailingPasses: []bool{false, false, false},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &scripted{t: t, pass: tt.pass}
			res, err := Run(context.Background(), Config{Min: tt.min, Max: tt.max, ConfirmationTrials: tt.k}, r)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if !equalPtr(res.MaximumPassing, tt.wantMax) || !equalPtr(res.FirstFailing, tt.wantFail) {
				t.Fatalf("boundary = (%s, %s), want (%s, %s)", show(res.MaximumPassing), show(res.FirstFailing), show(tt.wantMax), show(tt.wantFail))
			}
			gotPassing, passIdx, passPasses := sides(res.PassingTrials)
			if !slices.Equal(gotPassing, tt.wantPassing) {
				t.Errorf("passing trials at %v, want %v", gotPassing, tt.wantPassing)
			}
			if len(passIdx) > 0 && (!slices.Equal(passIdx, seq(tt.k)) || slices.Contains(passPasses, false)) {
				t.Errorf("passing trials indexes %v passes %v, want 1..%d all passing", passIdx, passPasses, tt.k)
			}
			gotFailing, failIdx, failPasses := sides(res.FailingTrials)
			if !slices.Equal(gotFailing, tt.wantFailing) || !slices.Equal(failPasses, tt.wantFailingPasses) {
				t.Errorf("failing trials at %v passing %v, want %v passing %v", gotFailing, failPasses, tt.wantFailing, tt.wantFailingPasses)
			}
			if len(failIdx) > 0 && !slices.Equal(failIdx, seq(tt.k)) {
				t.Errorf("failing trials indexes %v, want 1..%d", failIdx, tt.k)
			}
			for _, o := range append(slices.Clone(res.PassingTrials), res.FailingTrials...) {
				if o.Kind != Confirmation || o.Detail == nil {
					t.Errorf("reported trial %+v is not a confirmation with its detail", o.Request)
				}
			}
			if len(res.All) != len(r.ran) {
				t.Errorf("All has %d outcomes, runner ran %d", len(res.All), len(r.ran))
			}
			wantCost := 0.0
			for _, q := range r.ran {
				wantCost += float64(q.Concurrency)
			}
			if res.Cost != wantCost {
				t.Errorf("cost = %g, want %g", res.Cost, wantCost)
			}
		})
	}
}

// TestRunCheaperThanGrid checks the point of the package on a clean curve: with a boundary at
// 40 the grid runs 3 trials at each of 1..41 (123 trials); the search probes about log2(40)
// levels and confirms two.
func TestRunCheaperThanGrid(t *testing.T) {
	t.Parallel()
	r := &scripted{t: t, pass: upTo(40)}
	res, err := Run(context.Background(), Config{Min: 1, Max: 64, ConfirmationTrials: 3}, r)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	// Confirmation trials at 1 and 2, then gallop 4,8,16,32,64(fail); bisect 48(f) 40(p);
	// the bracket 40..48 is walked up with single confirmation trials: 41 fails. Then 40's
	// three and 41's other two: 7 probes and 8 confirmations.
	want := []Request{{1, Confirmation, 1}, {2, Confirmation, 1}, {4, Probe, 1}, {8, Probe, 1}, {16, Probe, 1},
		{32, Probe, 1}, {64, Probe, 1}, {48, Probe, 1}, {40, Probe, 1}, {41, Confirmation, 1},
		{40, Confirmation, 1}, {40, Confirmation, 2}, {40, Confirmation, 3}, {41, Confirmation, 2}, {41, Confirmation, 3}}
	if !slices.Equal(r.ran, want) {
		t.Errorf("ran %v, want %v", r.ran, want)
	}
	if *res.MaximumPassing != 40 {
		t.Errorf("maximum passing = %d, want 40", *res.MaximumPassing)
	}
}

func TestRunNonMonotone(t *testing.T) {
	t.Parallel()
	// The probe at 4 fails by noise; the confirmation trials at 4 pass, and 5..10 pass too.
	// The grid (confirmation trials only) would also say 10: the boundary is right, and the
	// passes above a failed trial are reported.
	r := &scripted{t: t, pass: func(q Request) bool {
		return q.Concurrency <= 10 && !(q.Concurrency == 4 && q.Kind == Probe)
	}}
	res, err := Run(context.Background(), Config{Min: 1, Max: 64, ConfirmationTrials: 3}, r)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if *res.MaximumPassing != 10 || *res.FirstFailing != 11 {
		t.Fatalf("boundary = (%d, %d), want (10, 11)", *res.MaximumPassing, *res.FirstFailing)
	}
	if len(res.NonMonotone) == 0 || res.NonMonotone[0] != (NonMonotone{Passed: 5, Failed: 4}) {
		t.Fatalf("non-monotone = %v, want it to start with 5 passing above 4", res.NonMonotone)
	}
	for _, n := range res.NonMonotone {
		if n.Failed != 4 || n.Passed <= 4 || n.Passed > 10 {
			t.Errorf("unexpected note %v", n)
		}
	}
}

func TestRunGuardBand(t *testing.T) {
	t.Parallel()
	// p95 (Value) rises 10 per level and the threshold is 200: level 19 is at 190, within the
	// 10 % band, and so is 18 (180); 17 (170) is not. One confirmation trial at 18 fails by
	// noise, which the grid would have met first. Without the guard the search reports 19.
	value := func(q Request) float64 {
		v := float64(q.Concurrency * 10)
		if q.Concurrency == 18 && q.Kind == Confirmation && q.Index == 3 {
			v = 205
		}
		return v
	}
	pass := func(q Request) bool { return value(q) < 200 }

	r := &scripted{t: t, pass: pass, value: value}
	res, err := Run(context.Background(), Config{Min: 1, Max: 64, ConfirmationTrials: 3}, r)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if *res.MaximumPassing != 19 {
		t.Fatalf("without guard: maximum passing = %d, want 19 (the third trial at 18 is never run)", *res.MaximumPassing)
	}

	r = &scripted{t: t, pass: pass, value: value}
	res, err = Run(context.Background(), Config{Min: 1, Max: 64, ConfirmationTrials: 3, Threshold: 200, GuardBand: 0.1}, r)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if *res.MaximumPassing != 17 || *res.FirstFailing != 18 {
		t.Fatalf("with guard: boundary = (%d, %d), want (17, 18)", *res.MaximumPassing, *res.FirstFailing)
	}
	// The walk up reaches 18 at 180, within the band, and gives it its other trials before
	// going on: the third fails, so 19 is never run, where a walk on first trials alone would
	// have climbed past 18 and needed the guard to come back down.
	for _, q := range r.ran {
		if q.Concurrency == 19 {
			t.Errorf("ran %+v above the first failing level", q)
		}
	}
	// 17's trials are at 170, outside the band: 16 needs no confirmation.
	for _, q := range r.ran {
		if q.Concurrency == 16 && q.Kind == Confirmation {
			t.Errorf("confirmed 16 although 17 is outside the guard band")
		}
	}

	// The walk below a confirmed boundary: 19 (190) is in the band, so 18 gets trials. At 178
	// it is clear of the band (below 180) but not far below the threshold (176, 12 % under):
	// two trials clear of the band end the walk without the third. At 170 one trial is
	// enough. Either way 17 gets no trial beyond the one the search's own walk up gave it.
	for _, tc := range []struct {
		at18 float64
		want []int
	}{{178, []int{1, 2}}, {170, []int{1}}} {
		clearBelow := func(q Request) float64 {
			if q.Concurrency == 18 {
				return tc.at18
			}
			return float64(q.Concurrency * 10)
		}
		r = &scripted{t: t, pass: func(q Request) bool { return clearBelow(q) < 200 }, value: clearBelow}
		res, err = Run(context.Background(), Config{Min: 1, Max: 64, ConfirmationTrials: 3, Threshold: 200, GuardBand: 0.1}, r)
		if err != nil {
			t.Fatal(err)
		}
		var at18 []int
		for _, q := range r.ran {
			if q.Kind == Confirmation && q.Concurrency == 18 {
				at18 = append(at18, q.Index)
			}
			if q.Kind == Confirmation && q.Concurrency < 18 && q.Index > 1 {
				t.Errorf("18 at %g: guard ran %+v below a level clear of the band", tc.at18, q)
			}
		}
		if *res.MaximumPassing != 19 || !slices.Equal(at18, tc.want) {
			t.Errorf("18 at %g: boundary %d, trials at 18 %v; want 19 and trials %v", tc.at18, *res.MaximumPassing, at18, tc.want)
		}
	}
}

// TestRunResume interrupts the search after every possible number of trials and resumes it
// from the outcomes it returned: the resumed search must end where the uninterrupted one does
// and run no trial twice. The guarded case walks the guard below a noisy boundary: 18's third
// trial fails, so the resumed search must also find 17/18 and the same trials.
func TestRunResume(t *testing.T) {
	t.Parallel()
	guarded := func(q Request) float64 {
		if q.Concurrency == 18 && q.Kind == Confirmation && q.Index == 3 {
			return 205
		}
		return float64(q.Concurrency * 10)
	}
	for _, tc := range []struct {
		name  string
		cfg   Config
		pass  func(Request) bool
		value func(Request) float64
	}{
		{"plain", Config{Min: 1, Max: 64, ConfirmationTrials: 3}, func(q Request) bool {
			return q.Concurrency <= 23 || (q.Concurrency == 24 && q.Kind == Probe)
		}, nil},
		{"guarded", Config{Min: 1, Max: 64, ConfirmationTrials: 3, Threshold: 200, GuardBand: 0.1},
			func(q Request) bool { return guarded(q) < 200 }, guarded},
	} {
		t.Run(tc.name, func(t *testing.T) { testResume(t, tc.cfg, tc.pass, tc.value) })
	}
}

func testResume(t *testing.T, cfg Config, pass func(Request) bool, value func(Request) float64) {
	full := &scripted{t: t, pass: pass, value: value}
	want, err := Run(context.Background(), cfg, full)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for stop := 1; stop <= len(full.ran); stop++ {
		t.Run(fmt.Sprint(stop), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			first := &scripted{t: t, pass: pass, value: value, stopAfter: stop, cancel: cancel}
			partial, err := Run(ctx, cfg, first)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("interrupted Run error = %v, want context.Canceled", err)
			}
			if partial.MaximumPassing != nil || partial.FirstFailing != nil {
				t.Errorf("interrupted Run reported a boundary")
			}
			if len(partial.All) != stop-1 {
				t.Fatalf("interrupted Run kept %d outcomes, want %d", len(partial.All), stop-1)
			}

			second := &scripted{t: t, pass: pass, value: value, seen: first.seen}
			var progress []Outcome
			c := cfg
			c.History = partial.All
			c.Progress = func(o Outcome) { progress = append(progress, o) }
			got, err := Run(context.Background(), c, second)
			if err != nil {
				t.Fatalf("resumed Run: %v", err)
			}
			// The interrupted trial itself was not finished, so it runs again; nothing else does.
			if !slices.Equal(append(slices.Clone(first.ran[:stop-1]), second.ran...), full.ran) {
				t.Errorf("interrupted and resumed runs asked for %v then %v, want %v", first.ran[:stop-1], second.ran, full.ran)
			}
			if *got.MaximumPassing != *want.MaximumPassing || *got.FirstFailing != *want.FirstFailing {
				t.Errorf("resumed boundary (%d, %d), want (%d, %d)", *got.MaximumPassing, *got.FirstFailing, *want.MaximumPassing, *want.FirstFailing)
			}
			if len(progress) != len(got.All) {
				t.Errorf("progress saw %d outcomes, All has %d", len(progress), len(got.All))
			}
			for i, o := range got.All {
				if o.Resumed != (i < len(partial.All)) {
					t.Errorf("outcome %d (%+v) resumed = %v", i, o.Request, o.Resumed)
				}
			}
		})
	}
}

func TestRunCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &scripted{t: t, pass: upTo(30), stopAfter: 4, cancel: cancel}
	res, err := Run(ctx, Config{Min: 1, Max: 64, ConfirmationTrials: 3}, r)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	// Probes at 1, 2 and 4 finished; the fourth trial (at 8) was cut off.
	if got, _, _ := sides(res.All); !slices.Equal(got, []int{1, 2, 4}) {
		t.Errorf("kept trials at %v, want [1 2 4]", got)
	}
	if res.Cost != 7 {
		t.Errorf("cost = %g, want 7", res.Cost)
	}
}

func TestRunRunnerError(t *testing.T) {
	t.Parallel()
	boom := errors.New("endpoint unreachable")
	calls := 0
	res, err := Run(context.Background(), Config{Min: 1, Max: 8, ConfirmationTrials: 3}, RunnerFunc(func(context.Context, Request) (Outcome, error) {
		calls++
		if calls == 2 {
			return Outcome{}, boom
		}
		return Outcome{Pass: true}, nil
	}))
	if !errors.Is(err, boom) {
		t.Fatalf("error = %v, want it to wrap %v", err, boom)
	}
	if len(res.All) != 1 {
		t.Errorf("kept %d outcomes, want 1", len(res.All))
	}
}

func TestRunInvalidConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
	}{
		{"zero minimum", Config{Min: 0, Max: 4, ConfirmationTrials: 1}},
		{"max below min", Config{Min: 5, Max: 4, ConfirmationTrials: 1}},
		{"no confirmation trials", Config{Min: 1, Max: 4, ConfirmationTrials: 0}},
		{"guard band without threshold", Config{Min: 1, Max: 4, ConfirmationTrials: 1, GuardBand: 0.1}},
		{"guard band of one", Config{Min: 1, Max: 4, ConfirmationTrials: 1, Threshold: 1, GuardBand: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &scripted{t: t, pass: upTo(2)}
			if _, err := Run(context.Background(), tt.cfg, r); err == nil {
				t.Errorf("Run accepted %+v", tt.cfg)
			}
			if len(r.ran) != 0 {
				t.Errorf("ran trials for an invalid config")
			}
		})
	}
}

func equalPtr(a, b *int) bool { return (a == nil && b == nil) || (a != nil && b != nil && *a == *b) }

func show(p *int) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

func seq(k int) []int {
	out := make([]int, k)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// A grid runs exactly its levels, k confirmation trials each, never a probe, every level
// whatever the others gave; the boundary is the first failing level and the one before.
func TestRunGrid(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name            string
		levels          []int
		pass            func(Request) bool
		passing, first  *int
		nonMonotoneFrom int // a level reported as passing above a failure; 0: none
	}{
		{"boundary inside", []int{16, 1, 4, 8}, upTo(6), intp(4), intp(8), 0},
		{"everything passes", []int{1, 2, 3}, upTo(64), intp(3), nil, 0},
		{"the lowest fails", []int{2, 4}, upTo(1), nil, intp(2), 0},
		{"a pass above a failure is reported", []int{1, 2, 3, 4}, func(r Request) bool { return r.Concurrency != 2 }, intp(1), intp(2), 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &scripted{t: t, pass: tc.pass}
			res, err := Run(context.Background(), Config{Levels: tc.levels, ConfirmationTrials: 2, Min: 99, Max: 1}, r)
			if err != nil {
				t.Fatal(err)
			}
			sorted := slices.Sorted(slices.Values(tc.levels))
			var want []Request
			for _, c := range sorted {
				want = append(want, Request{c, Confirmation, 1}, Request{c, Confirmation, 2})
			}
			if !slices.Equal(r.ran, want) {
				t.Fatalf("ran %v, want %v", r.ran, want)
			}
			if (res.MaximumPassing == nil) != (tc.passing == nil) || tc.passing != nil && *res.MaximumPassing != *tc.passing {
				t.Errorf("maximum passing %v, want %v", deref(res.MaximumPassing), deref(tc.passing))
			}
			if (res.FirstFailing == nil) != (tc.first == nil) || tc.first != nil && *res.FirstFailing != *tc.first {
				t.Errorf("first failing %v, want %v", deref(res.FirstFailing), deref(tc.first))
			}
			if tc.nonMonotoneFrom != 0 && (len(res.NonMonotone) == 0 || res.NonMonotone[0].Passed != tc.nonMonotoneFrom) {
				t.Errorf("non-monotone %v, want a pass at %d reported", res.NonMonotone, tc.nonMonotoneFrom)
			}
			if len(res.All) != len(want) {
				t.Errorf("%d outcomes reported, want all %d", len(res.All), len(want))
			}
		})
	}
	if _, err := Run(context.Background(), Config{Levels: []int{2, 2}, ConfirmationTrials: 1}, &scripted{t: t, pass: upTo(1)}); err == nil {
		t.Error("a level listed twice must be refused")
	}
	if _, err := Run(context.Background(), Config{Levels: []int{0, 2}, ConfirmationTrials: 1}, &scripted{t: t, pass: upTo(1)}); err == nil {
		t.Error("level 0 must be refused")
	}
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// Where the boundary is at the minimum or just above it, the grid runs almost nothing, so any
// probe would cost more than the grid: the search runs exactly the grid's trials there.
func TestRunLowBoundaryRunsOnlyTheGrid(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		boundary int
		want     []Request
	}{
		{"minimum fails", 0, []Request{{1, Confirmation, 1}, {1, Confirmation, 2}, {1, Confirmation, 3}}},
		{"only the minimum passes", 1, []Request{{1, Confirmation, 1}, {2, Confirmation, 1}, {1, Confirmation, 2},
			{1, Confirmation, 3}, {2, Confirmation, 2}, {2, Confirmation, 3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &scripted{t: t, pass: upTo(tc.boundary)}
			if _, err := Run(context.Background(), Config{Min: 1, Max: 64, ConfirmationTrials: 3, Threshold: 1, GuardBand: 0.07}, r); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(r.ran, tc.want) {
				t.Errorf("ran %v, want the grid's %v", r.ran, tc.want)
			}
		})
	}
}

// TestGallopFollowsValues: values growing by 10 a level towards a threshold of 200 put the
// crossing at 20. After the first two levels (10, 20) the line reaches 200 at 20; the gallop
// aims 1.2 times as far (24) but reaches at most three steps past the doubling (8). From 8
// (80) the line still says 20, so the next probe is at 24, which fails. Without a threshold
// the gallop doubles.
func TestGallopFollowsValues(t *testing.T) {
	t.Parallel()
	value := func(q Request) float64 { return float64(q.Concurrency * 10) }
	pass := func(q Request) bool { return value(q) < 200 }
	probes := func(cfg Config) []int {
		r := &scripted{t: t, pass: pass, value: value}
		res, err := Run(context.Background(), cfg, r)
		if err != nil {
			t.Fatal(err)
		}
		if *res.MaximumPassing != 19 {
			t.Errorf("%+v: maximum passing %d, want 19", cfg, *res.MaximumPassing)
		}
		var out []int
		for _, q := range r.ran {
			if q.Kind == Probe {
				out = append(out, q.Concurrency)
			}
		}
		return out
	}
	if got := probes(Config{Min: 1, Max: 64, ConfirmationTrials: 3, Threshold: 200, GuardBand: 0.07}); !slices.Equal(got[:2], []int{8, 24}) {
		t.Errorf("with values: probes %v, want 8 and 24 first", got)
	}
	if got := probes(Config{Min: 1, Max: 64, ConfirmationTrials: 3}); !slices.Equal(got[:3], []int{4, 8, 16}) {
		t.Errorf("without a threshold: probes %v, want 4, 8, 16 first", got)
	}
}

// TestWalkSkipsClearLevels: values growing by 10 a level towards a threshold of 200, band
// 0.07 (186). The gallop probes 8 (80, passes) and 24 (240, fails). The chord from 8's 80 to
// 24's 240 and the line through 2 and 8 both reach 176 (12 % under the threshold) at 17.6,
// so the walk skips 9..16 and confirms 17 (170), then 18 (180) and 19 (190, in the band: it
// gets its other two trials at once); 20 fails. The guard wants a second trial at 18 (clear
// of the band but not 12 % under), then 20 gets its other two. When 24 failed because its
// requests failed it measured nothing, there is no chord, and the bracket is bisected (16)
// and walked a level at a time from there.
func TestWalkSkipsClearLevels(t *testing.T) {
	t.Parallel()
	value := func(q Request) float64 { return float64(q.Concurrency * 10) }
	pass := func(q Request) bool { return value(q) < 200 }
	cfg := Config{Min: 1, Max: 64, ConfirmationTrials: 3, Threshold: 200, GuardBand: 0.07}
	run := func(serverFailsAt24 bool) []Request {
		r := &scripted{t: t, pass: pass, value: value}
		runner := RunnerFunc(func(ctx context.Context, q Request) (Outcome, error) {
			o, err := r.RunTrial(ctx, q)
			if serverFailsAt24 && q.Concurrency == 24 {
				o.Pass, o.Value, o.Failed = false, 0, 5
			}
			return o, err
		})
		res, err := Run(context.Background(), cfg, runner)
		if err != nil {
			t.Fatal(err)
		}
		if *res.MaximumPassing != 19 || *res.FirstFailing != 20 {
			t.Errorf("boundary (%d, %d), want (19, 20)", *res.MaximumPassing, *res.FirstFailing)
		}
		return r.ran
	}
	want := []Request{{1, Confirmation, 1}, {2, Confirmation, 1}, {8, Probe, 1}, {24, Probe, 1},
		{17, Confirmation, 1}, {18, Confirmation, 1}, {19, Confirmation, 1}, {19, Confirmation, 2}, {19, Confirmation, 3},
		{20, Confirmation, 1}, {18, Confirmation, 2}, {20, Confirmation, 2}, {20, Confirmation, 3}}
	if got := run(false); !slices.Equal(got, want) {
		t.Errorf("ran %v,\nwant %v", got, want)
	}
	got := run(true)
	if len(got) < 5 || got[4] != (Request{16, Probe, 1}) || got[5] != (Request{17, Confirmation, 1}) {
		t.Errorf("24 failed by its requests: ran %v, want the probe at 16, then 17 confirmed", got)
	}
}
