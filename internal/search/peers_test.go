package search_test

// The peers' published searches for the highest concurrency under an SLO, implemented from
// their documents and sources, run on the very scenarios and trial noise of SearchVsGrid: a
// peer's n-th full trial at concurrency c is the grid's trial (c, n), so every procedure sees
// the same trials and "agrees with the grid" means it reports the grid's own boundary. Every
// peer trial is a full trial of the benchmark's shape (8 warmups, 64 measured requests) and
// costs what that trial cost the grid; none of them stops a trial early. Their own defaults
// would cost more per trial (AIPerf's smooth-isotonic planner sends 1 000 requests per probe
// after a 30 s warmup), so the costs below favour the peers.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

// fullTrial is one full trial as a peer sees it: the p95 TTFT (ms), the fraction of measured
// requests whose TTFT met the threshold (guidellm's SLO attainment) and the request-seconds.
type fullTrial struct {
	p95, attainment, cost float64
}

func (s scenario) full(c, index int) (fullTrial, error) {
	o, err := s.trial(c, index, false)
	if err != nil {
		return fullTrial{}, err
	}
	reqs, err := s.model.Run(simengine.Trial{Concurrency: c, Warmups: warmups, Measured: measured,
		InputTokens: s.input, OutputTokens: s.output, Index: index})
	if err != nil {
		return fullTrial{}, err
	}
	thr := time.Duration(s.thresholdMs * float64(time.Millisecond))
	good, n := 0, 0
	for _, r := range reqs {
		if r.Warmup {
			continue
		}
		n++
		if r.TTFT() < thr {
			good++
		}
	}
	return fullTrial{p95: o.Value, attainment: float64(good) / float64(n), cost: o.Cost}, nil
}

// peerRun counts one procedure's trials on one scenario; the n-th trial it asks for at a level
// is the grid's trial n there.
type peerRun struct {
	s      scenario
	ran    map[int]int
	cost   float64
	trials int
}

func newPeerRun(s scenario) *peerRun { return &peerRun{s: s, ran: map[int]int{}} }

func (p *peerRun) next(c int) (fullTrial, error) {
	p.ran[c]++
	t, err := p.s.full(c, p.ran[c])
	p.cost += t.cost
	p.trials++
	return t, err
}

// peer is one search procedure: it returns the maximum passing concurrency it reports (minC-1
// when none), having run its trials through p.
type peer struct {
	name   string
	source string // the documents its implementation follows
	run    func(p *peerRun) (int, error)
}

var peers = []peer{
	{"AIPerf monotonic, N=3 per probe, mean verdict", "ai-dynamo/aiperf docs/sweeping/find-max-passing-concurrency.md, src/aiperf/orchestrator/search_planner/monotonic.py",
		func(p *peerRun) (int, error) { return aiperfMonotonic(p, 3, aiperfPrecision) }},
	{"AIPerf monotonic, N=1, stability window 2", "as above; AdaptiveSearchSweep.monotonic_stability_trials default 2",
		func(p *peerRun) (int, error) { return aiperfMonotonic(p, 1, aiperfPrecision) }},
	{"AIPerf monotonic, N=3, bisected to adjacent", "as the first, SLA_PRECISION_DEFAULT set to 0: the bracket closes at a gap of 1",
		func(p *peerRun) (int, error) { return aiperfMonotonic(p, 3, 0) }},
	{"AIPerf smooth_isotonic (default style)", "ai-dynamo/aiperf search_planner/smooth_isotonic.py, _smooth_isotonic_phases.py, _smooth_isotonic_fit.py, _cliff_detect.py, _replicate_budget.py",
		aiperfSmoothIsotonic},
	{"guidellm goodput profile", "vllm-project/guidellm src/guidellm/benchmark/profiles/goodput.py, schemas GoodputProfileArgs",
		func(p *peerRun) (int, error) { return guidellmGoodput(p, 0.1) }},
	{"guidellm goodput, bisected to adjacent", "as above with tolerance near 0: the search stops at worst - best <= 1",
		func(p *peerRun) (int, error) { return guidellmGoodput(p, 1e-9) }},
}

// aiperfPrecision is AIPerf's SLA_PRECISION_DEFAULT: bisection stops once (hi - lo) / hi < 5 %.
const aiperfPrecision = 0.05

// aiperfMaxIterations is the iteration budget of the recipe examples (max_iterations=30); no
// scenario here comes near it.
const aiperfMaxIterations = 30

// aiperfMonotonic is AIPerf's MonotonicSLASearchPlanner (monotonic.py): starting at lo, double
// until the SLA fails (probing hi itself last), then bisect [feasible_max, infeasible_min]
// with a downward-biased midpoint until the gap is 1 or gap / infeasible_min < 5 %. Each
// iteration runs n trials (--num-profile-runs) and, as the issue and the documentation state
// ("each point's verdict averages over trials"), passes when the mean of the trials' p95 meets
// the threshold. A verdict latches once monotonic_stability_trials (default 2) iterations at a
// point agree; n >= 2 satisfies the window in one iteration ("automatic when
// --num-profile-runs >= 2"). The sources' iteration_feasibility (_sla_helpers.py) instead
// passes an iteration when any one trial passes; with n = 1 the two agree. The answer is
// feasible_max.
func aiperfMonotonic(p *peerRun, n int, precision float64) (int, error) {
	const stability = 2
	need := stability
	if n >= stability {
		need = 1
	}
	lo, hi := minC, maxC
	feasMax, infMin := 0, 0 // 0: none yet (levels start at 1)
	passes, fails := map[int]int{}, map[int]int{}
	next, bisect := lo, false
	for iter := 0; iter < aiperfMaxIterations; iter++ {
		value := next
		sum := 0.0
		for range n {
			t, err := p.next(value)
			if err != nil {
				return 0, err
			}
			sum += t.p95
		}
		if sum/float64(n) < p.s.thresholdMs {
			passes[value]++
		} else {
			fails[value]++
		}
		var verdict, latched bool
		switch {
		case passes[value] >= need:
			verdict, latched = true, true
		case fails[value] >= need:
			verdict, latched = false, true
		}
		if !latched {
			continue // the stability window asks the same point again
		}
		if verdict {
			if (feasMax == 0 || value > feasMax) && (infMin == 0 || value < infMin) {
				feasMax = value
			}
		} else if (infMin == 0 || value < infMin) && (feasMax == 0 || value > feasMax) {
			infMin = value
		}
		if !bisect {
			if !verdict {
				if feasMax == 0 {
					return minC - 1, nil
				}
				bisect = true
			} else {
				if value*2 >= hi {
					if value >= hi {
						return hi, nil
					}
					next = hi
				} else {
					next = value * 2
				}
				continue
			}
		}
		if feasMax == 0 || infMin == 0 {
			return max(feasMax, minC-1), nil
		}
		gap := infMin - feasMax
		if gap <= 1 || float64(gap)/float64(max(infMin, 1)) < precision {
			return feasMax, nil
		}
		next = min(max(feasMax+gap/2, feasMax+1), infMin-1)
	}
	return max(feasMax, minC-1), nil
}

// guidellmGoodput is guidellm's goodput profile (profiles/goodput.py, with the
// GoodputProfileArgs defaults: initial_streams 4, tolerance 0.1, max_probes 15, target
// attainment 0.95, which its documentation calls equivalent to the p95 of each objective
// within its threshold): one run per probe, passing when at least 95 % of the requests met
// the TTFT threshold; double from 4 until a level fails (walking down by halves when 4
// already fails), then bisect until worst - best <= max(1, 0.1 * best). max_streams is the
// benchmark's upper bound. The answer is the highest passing level.
func guidellmGoodput(p *peerRun, tolerance float64) (int, error) {
	const initial, maxProbes, target = 4, 15, 0.95
	best, worst := 0, 0
	next := initial
	for probes := 0; probes < maxProbes; probes++ {
		t, err := p.next(next)
		if err != nil {
			return 0, err
		}
		if t.attainment >= target {
			if best == 0 || next > best {
				best = next
			}
		} else if worst == 0 || next < worst {
			worst = next
		}
		switch {
		case worst == 0:
			current := initial
			if best != 0 {
				current = best
			}
			if current >= maxC {
				return max(best, minC-1), nil
			}
			next = min(current*2, maxC)
		case best == 0:
			if worst <= 1 {
				return minC - 1, nil
			}
			next = worst / 2
		case float64(worst-best) <= math.Max(1, tolerance*float64(best)):
			return best, nil
		default:
			next = (best + worst) / 2
		}
	}
	return max(best, minC-1), nil
}

// isotonic is AIPerf's SmoothIsotonicSLAPlanner, phase by phase as its sources have it, with
// one SLO (so the binding constraint is that SLO) and one run per probe (the default
// --num-profile-runs). The margin of a probe is p95 - threshold (negative: feasible).
type isotonic struct {
	p                *peerRun
	feasMax, infMin  int // 0: none yet
	raw              map[int][]float64
	phase            string // bracket, fit, replicate, cliff_bisect
	next             int
	queue            []int
	candidate        int
	fitCount         int
	done             bool
	bootstrapSampler *rand.Rand
}

func aiperfSmoothIsotonic(p *peerRun) (int, error) {
	pl := &isotonic{p: p, raw: map[int][]float64{}, phase: "bracket", next: minC,
		bootstrapSampler: rand.New(rand.NewPCG(1, 2))}
	for iter := 0; iter < aiperfMaxIterations && !pl.done; iter++ {
		if len(pl.queue) > 0 {
			pl.next, pl.queue = pl.queue[0], pl.queue[1:]
		}
		value := pl.next
		t, err := p.next(value)
		if err != nil {
			return 0, err
		}
		pl.tell(value, t.p95 < p.s.thresholdMs, t.p95-p.s.thresholdMs)
	}
	return max(pl.feasMax, minC-1), nil
}

func (pl *isotonic) tell(value int, feasible bool, margin float64) {
	pl.raw[value] = append(pl.raw[value], margin)
	// The bracket update ignores a verdict that contradicts it (a non-monotone note).
	if feasible {
		if !(pl.infMin != 0 && value >= pl.infMin) && (pl.feasMax == 0 || value > pl.feasMax) {
			pl.feasMax = value
		}
	} else if !(pl.feasMax != 0 && value <= pl.feasMax) && (pl.infMin == 0 || value < pl.infMin) {
		pl.infMin = value
	}
	switch pl.phase {
	case "bracket":
		switch {
		case !feasible && pl.feasMax == 0:
			pl.done = true // smooth_isotonic_no_pass_in_range
		case !feasible:
			pl.phase = "fit"
			pl.queueInternal(3) // _FIT_INTERNAL_PROBES
		case value*2 >= maxC && value >= maxC:
			pl.feasMax, pl.done = maxC, true // smooth_isotonic_no_failure_in_range
		case value*2 >= maxC:
			pl.next = maxC
		default:
			pl.next = value * 2
		}
	case "fit":
		pl.planFit()
	case "cliff_bisect":
		if len(pl.queue) > 0 {
			return
		}
		if pl.precisionReached() {
			pl.done = true
			return
		}
		if mid, ok := pl.midpoint(); ok {
			pl.queue = append(pl.queue, mid)
			return
		}
		pl.done = true
	case "replicate":
		pl.planReplicate()
	}
}

// roundHalfEven is Python's round().
func roundHalfEven(x float64) int { return int(math.RoundToEven(x)) }

func (pl *isotonic) inside(frac float64) int {
	gap := pl.infMin - pl.feasMax
	x := pl.feasMax + max(1, roundHalfEven(float64(gap)*frac))
	return max(min(x, pl.infMin-1), pl.feasMax+1)
}

func (pl *isotonic) queueInternal(count int) {
	if pl.feasMax == 0 || pl.infMin == 0 || pl.infMin-pl.feasMax <= 1 {
		return
	}
	for k := 1; k <= count; k++ {
		x := pl.inside(float64(k) / float64(count+1))
		if _, seen := pl.raw[x]; !seen && !slices.Contains(pl.queue, x) {
			pl.queue = append(pl.queue, x)
		}
	}
}

func (pl *isotonic) queueRefit() {
	if pl.feasMax == 0 || pl.infMin == 0 || pl.infMin-pl.feasMax <= 1 {
		return
	}
	for _, frac := range []float64{0.125, 0.625} {
		x := pl.inside(frac)
		if _, seen := pl.raw[x]; !seen && !slices.Contains(pl.queue, x) {
			pl.queue = append(pl.queue, x)
		}
	}
}

// points are the probed levels, ascending, with each one's mean margin.
func (pl *isotonic) points() (xs []int, ys []float64) {
	for x := range pl.raw {
		xs = append(xs, x)
	}
	slices.Sort(xs)
	for _, x := range xs {
		ys = append(ys, mean(pl.raw[x]))
	}
	return xs, ys
}

func (pl *isotonic) planFit() {
	if len(pl.queue) > 0 {
		return
	}
	pl.fitCount++
	cand, ok := pl.fitAndSolve()
	if !ok {
		if pl.infMin-pl.feasMax <= 1 || pl.feasMax == 0 || pl.infMin == 0 {
			pl.done = true // smooth_isotonic_pchip_fallback_bisection
			return
		}
		cand = pl.feasMax + (pl.infMin-pl.feasMax)/2
	}
	if pl.needsMoreFitData() && pl.fitCount < 3 { // _MAX_REFIT_CYCLES
		pl.queueRefit()
		return
	}
	pl.candidate = cand
	pl.enterReplicateOrTerminate(cand)
}

func (pl *isotonic) fitAndSolve() (int, bool) {
	xs, ys := pl.points()
	if len(xs) < 2 || pl.feasMax == 0 || pl.infMin == 0 {
		return 0, false
	}
	curve := smoothIsotonicFit(xs, ys)
	root, ok := curve.root(float64(pl.feasMax), float64(pl.infMin))
	if !ok {
		return 0, false
	}
	c := roundHalfEven(root)
	if c <= pl.feasMax {
		c = pl.feasMax + 1
	}
	if c >= pl.infMin {
		c = pl.infMin - 1
	}
	return c, true
}

func (pl *isotonic) needsMoreFitData() bool {
	_, ys := pl.points()
	if len(ys) < 4 {
		return true
	}
	distinct := map[float64]bool{}
	for _, v := range pava(ys) {
		distinct[math.Round(v*1e9)/1e9] = true
	}
	return len(distinct) < 3 // _FIT_MIN_DISTINCT
}

func (pl *isotonic) precisionReached() bool {
	if pl.feasMax == 0 || pl.infMin == 0 {
		return false
	}
	gap := pl.infMin - pl.feasMax
	return gap <= 1 || float64(gap)/float64(pl.infMin) < aiperfPrecision
}

func (pl *isotonic) midpoint() (int, bool) {
	gap := pl.infMin - pl.feasMax
	if pl.feasMax == 0 || pl.infMin == 0 || gap <= 1 {
		return 0, false
	}
	return pl.feasMax + gap/2, true
}

func (pl *isotonic) enterReplicateOrTerminate(cand int) {
	if pl.cliff() {
		if pl.precisionReached() {
			pl.done = true
			return
		}
		mid, ok := pl.midpoint()
		if !ok {
			pl.done = true
			return
		}
		pl.queue = append(pl.queue, mid)
		pl.phase = "cliff_bisect"
		return
	}
	if pl.precisionReached() {
		pl.done = true // smooth_isotonic_precision_reached
		return
	}
	budget := pl.replicateBudget()
	if budget <= 0 {
		if _, seen := pl.raw[cand]; !seen {
			pl.queue = append(pl.queue, cand)
			pl.phase = "fit"
			return
		}
		pl.done = true
		return
	}
	for range budget {
		pl.queue = append(pl.queue, cand)
	}
	pl.phase = "replicate"
}

// cliff is the PAVA-residual guard (_cliff_detect.py): the highest probed level's margin sits
// more than 3 sigma (of the last three margins) off the fit while the bracket is wider than
// 5 % of hi.
func (pl *isotonic) cliff() bool {
	xs, ys := pl.points()
	if len(ys) < 3 {
		return false
	}
	recent := ys[len(ys)-3:]
	m := mean(recent)
	sigma := 0.0
	for _, v := range recent {
		sigma += (v - m) * (v - m)
	}
	sigma = math.Sqrt(sigma / 3)
	if sigma == 0 {
		return false
	}
	curve := smoothIsotonicFit(xs, ys)
	last := len(xs) - 1
	if math.Abs(ys[last]-curve.at(float64(xs[last]))) <= 3*sigma {
		return false
	}
	gap := 0
	if pl.feasMax != 0 && pl.infMin != 0 {
		gap = pl.infMin - pl.feasMax
	}
	return float64(gap) > aiperfPrecision*maxC
}

// replicateBudget is _replicate_budget's auto formula, min(20, max(3, ceil(4 (sigma /
// threshold)^2))), over the margins at the highest probed level, or 0 with fewer than two.
func (pl *isotonic) replicateBudget() int {
	xs, _ := pl.points()
	if len(xs) == 0 {
		return 0
	}
	samples := pl.raw[xs[len(xs)-1]]
	if len(samples) < 2 {
		return 0
	}
	sigma := stddev(samples)
	return min(20, max(3, int(math.Ceil(4*math.Pow(sigma/pl.p.s.thresholdMs, 2)))))
}

// planReplicate ends the search unless a 95 % bootstrap interval of the mean margin at the
// candidate straddles zero, in which case it refits with two more probes. AIPerf calls
// scipy.stats.bootstrap (BCa); this is the percentile bootstrap, seeded.
func (pl *isotonic) planReplicate() {
	if len(pl.queue) > 0 {
		return
	}
	margins := pl.raw[pl.candidate]
	if pl.candidate == 0 || len(margins) < 2 {
		pl.done = true
		return
	}
	means := make([]float64, 2000)
	for i := range means {
		sum := 0.0
		for range margins {
			sum += margins[pl.bootstrapSampler.IntN(len(margins))]
		}
		means[i] = sum / float64(len(margins))
	}
	slices.Sort(means)
	lo, hi := means[len(means)*25/1000], means[len(means)*975/1000]
	if lo <= 0 && 0 <= hi {
		pl.queueRefit()
		pl.phase = "fit"
		return
	}
	pl.done = true
}

// pava is isotonic (non-decreasing) regression with unit weights, by pooling adjacent
// violators, as scipy.optimize.isotonic_regression.
func pava(ys []float64) []float64 {
	type block struct {
		sum float64
		n   int
	}
	var blocks []block
	for _, y := range ys {
		blocks = append(blocks, block{y, 1})
		for len(blocks) > 1 {
			a, b := blocks[len(blocks)-2], blocks[len(blocks)-1]
			if a.sum/float64(a.n) <= b.sum/float64(b.n) {
				break
			}
			blocks = append(blocks[:len(blocks)-2], block{a.sum + b.sum, a.n + b.n})
		}
	}
	var out []float64
	for _, b := range blocks {
		for range b.n {
			out = append(out, b.sum/float64(b.n))
		}
	}
	return out
}

// pchip is scipy's PchipInterpolator: piecewise cubic Hermite with Fritsch-Butland interior
// slopes and the three-point, shape-preserving end slopes.
type pchip struct{ x, y, d []float64 }

// smoothIsotonicFit is _smooth_isotonic_fit.smooth_isotonic_fit: PAVA, then a ramp of
// 1e-9 of the span per index so flat runs stay strictly increasing, then PCHIP.
func smoothIsotonicFit(xs []int, ys []float64) pchip {
	yh := pava(ys)
	span := yh[len(yh)-1] - yh[0]
	eps := 1e-9
	if span > 0 {
		eps = 1e-9 * span
	}
	p := pchip{}
	for i, x := range xs {
		p.x = append(p.x, float64(x))
		p.y = append(p.y, yh[i]+float64(i)*eps)
	}
	n := len(p.x)
	h := make([]float64, n-1)
	m := make([]float64, n-1)
	for i := range h {
		h[i] = p.x[i+1] - p.x[i]
		m[i] = (p.y[i+1] - p.y[i]) / h[i]
	}
	p.d = make([]float64, n)
	if n == 2 {
		p.d[0], p.d[1] = m[0], m[0]
		return p
	}
	for k := 1; k < n-1; k++ {
		if m[k-1] == 0 || m[k] == 0 || sign(m[k-1]) != sign(m[k]) {
			continue
		}
		w1, w2 := 2*h[k]+h[k-1], h[k]+2*h[k-1]
		p.d[k] = (w1 + w2) / (w1/m[k-1] + w2/m[k])
	}
	edge := func(h0, h1, m0, m1 float64) float64 {
		d := ((2*h0+h1)*m0 - h0*m1) / (h0 + h1)
		switch {
		case sign(d) != sign(m0):
			return 0
		case sign(m0) != sign(m1) && math.Abs(d) > 3*math.Abs(m0):
			return 3 * m0
		}
		return d
	}
	p.d[0] = edge(h[0], h[1], m[0], m[1])
	p.d[n-1] = edge(h[n-2], h[n-3], m[n-2], m[n-3])
	return p
}

func sign(v float64) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

func (p pchip) at(x float64) float64 {
	i, _ := slices.BinarySearch(p.x, x)
	i = min(max(i-1, 0), len(p.x)-2)
	h := p.x[i+1] - p.x[i]
	t := (x - p.x[i]) / h
	h00, h10 := 2*t*t*t-3*t*t+1, t*t*t-2*t*t+t
	h01, h11 := -2*t*t*t+3*t*t, t*t*t-t*t
	return h00*p.y[i] + h10*h*p.d[i] + h01*p.y[i+1] + h11*h*p.d[i+1]
}

// root is the zero of the (monotone) curve in [lo, hi], which AIPerf takes from
// PchipInterpolator.solve within the data's range.
func (p pchip) root(lo, hi float64) (float64, bool) {
	lo, hi = max(lo, p.x[0]), min(hi, p.x[len(p.x)-1])
	flo, fhi := p.at(lo), p.at(hi)
	if lo > hi || flo > 0 || fhi < 0 {
		return 0, false
	}
	for range 100 {
		mid := (lo + hi) / 2
		if p.at(mid) < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2, true
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func stddev(v []float64) float64 {
	m := mean(v)
	s := 0.0
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return math.Sqrt(s / float64(len(v)-1))
}

// peerFigures is one procedure's showing on a set of scenarios.
type peerFigures struct {
	agree, scenarios int
	cost, gridCost   float64
	worst            float64 // the highest share of its grid any scenario cost
	trials           int
}

func (f peerFigures) row(name string) string {
	return fmt.Sprintf("| %-46s | %5.1f %% | %5.1f %% | %6.0f | %6.1f %% | %5.1f |", name,
		100*float64(f.agree)/float64(f.scenarios), 100*f.cost/f.gridCost,
		f.cost/float64(f.scenarios), 100*f.worst, float64(f.trials)/float64(f.scenarios))
}

// sideBySide runs ours and every peer on each set's 120 scenarios and returns the figures per
// procedure (ours first) over all of them.
func sideBySide(sets []uint64) ([]peerFigures, error) {
	out := make([]peerFigures, len(peers)+1)
	for _, set := range sets {
		ss, err := scenarios(set, 120)
		if err != nil {
			return nil, err
		}
		for i, s := range ss {
			gridMax, gridCost, err := s.grid()
			if err != nil {
				return nil, err
			}
			res, err := s.search(guardBand)
			if err != nil {
				return nil, fmt.Errorf("set %d scenario %d: %w", set, i, err)
			}
			got := minC - 1
			if res.MaximumPassing != nil {
				got = *res.MaximumPassing
			}
			out[0].add(got == gridMax, res.Cost, gridCost, len(res.All))
			for j, pe := range peers {
				run := newPeerRun(s)
				got, err := pe.run(run)
				if err != nil {
					return nil, fmt.Errorf("%s, set %d scenario %d: %w", pe.name, set, i, err)
				}
				out[j+1].add(got == gridMax, run.cost, gridCost, run.trials)
			}
		}
	}
	return out, nil
}

func (f *peerFigures) add(agree bool, cost, gridCost float64, trials int) {
	f.scenarios++
	if agree {
		f.agree++
	}
	f.cost += cost
	f.gridCost += gridCost
	f.worst = max(f.worst, cost/gridCost)
	f.trials += trials
}

// peerTable states, for the set and the nine more, each procedure's agreement with the
// grid's boundary, its request-seconds as a share of the grid's and per scenario, its worst
// scenario and its trials per scenario.
func peerTable() (string, [][]peerFigures, error) {
	var b strings.Builder
	var all [][]peerFigures
	for _, part := range []struct {
		title string
		sets  []uint64
	}{{"the issue's 120 scenarios (set 2)", []uint64{benchmarkSet}}, {"1 080 further scenarios (sets 3-11)", moreSets}} {
		figs, err := sideBySide(part.sets)
		if err != nil {
			return "", nil, err
		}
		all = append(all, figs)
		fmt.Fprintf(&b, "\nSide by side on %s, same trials and noise:\n", part.title)
		b.WriteString("| procedure                                      | agrees  | cost    | req-s  | worst    | trials |\n")
		b.WriteString("|------------------------------------------------|---------|---------|--------|----------|--------|\n")
		b.WriteString(figs[0].row("ours (llmserve search)") + "\n")
		for j, pe := range peers {
			b.WriteString(figs[j+1].row(pe.name) + "\n")
		}
	}
	b.WriteString("agrees: same maximum passing concurrency as the exhaustive grid; cost: request-seconds as a share of the grid's, pooled; " +
		"req-s: mean request-seconds per scenario; worst: the highest share of its own grid any scenario cost; trials: per scenario.\n")
	for _, pe := range peers {
		fmt.Fprintf(&b, "%s: %s\n", pe.name, pe.source)
	}
	return b.String(), all, nil
}

// TestSideBySide keeps what the table shows true on the benchmark's fixed seeds: on the
// issue's set and on the nine more, our search reports the grid's boundary more often than
// every peer procedure, and costs less than AIPerf's monotonic planner with the reference's
// three trials per probe.
func TestSideBySide(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("simulates every procedure on 1 200 scenarios")
	}
	table, all, err := peerTable()
	if err != nil {
		t.Fatal(err)
	}
	t.Log(table)
	for _, figs := range all {
		ours := figs[0]
		for j, pe := range peers {
			f := figs[j+1]
			if f.agree >= ours.agree {
				t.Errorf("%s agrees with the grid in %d of %d scenarios, ours in %d", pe.name, f.agree, f.scenarios, ours.agree)
			}
			if strings.Contains(pe.name, "N=3") && f.cost/f.gridCost <= ours.cost/ours.gridCost {
				t.Errorf("%s costs %.1f%% of the grid, ours %.1f%%", pe.name, 100*f.cost/f.gridCost, 100*ours.cost/ours.gridCost)
			}
		}
	}
}

// TestPeerFits checks the smooth-isotonic planner's curve against values worked by hand:
// PAVA pools the violating pair of [-2, -0.9, -1.1, 1, 2] into -1, -1; PCHIP through (0, 0),
// (1, 1), (2, 4) has slopes 0 (the end formula, ((2+1)*1 - 3)/2), 1.5 (the weighted harmonic
// mean of the secants 1 and 3) and 4 (the end formula, ((2+1)*3 - 1)/2), so at 0.5
// it is 0.5 - 0.125*1.5 = 0.3125, and the curve through margins -1, 0, 3 crosses zero at 1.
func TestPeerFits(t *testing.T) {
	t.Parallel()
	if got, want := pava([]float64{-2, -0.9, -1.1, 1, 2}), []float64{-2, -1, -1, 1, 2}; !slices.EqualFunc(got, want, func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }) {
		t.Errorf("pava = %v, want %v", got, want)
	}
	p := smoothIsotonicFit([]int{0, 1, 2}, []float64{0, 1, 4})
	if !slices.EqualFunc(p.d, []float64{0, 1.5, 4}, func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }) {
		t.Errorf("slopes = %v, want 0, 1.5, 4", p.d)
	}
	if got := p.at(0.5); math.Abs(got-0.3125) > 1e-6 {
		t.Errorf("curve at 0.5 = %v, want 0.3125", got)
	}
	q := smoothIsotonicFit([]int{0, 1, 2}, []float64{-1, 0, 3})
	if x, ok := q.root(0, 2); !ok || math.Abs(x-1) > 1e-6 {
		t.Errorf("root = %v, %v; want 1", x, ok)
	}
	if _, ok := q.root(1.5, 2); ok {
		t.Error("root found where the curve stays above zero")
	}
}
