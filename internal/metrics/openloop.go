package metrics

import (
	"math"
	"slices"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
)

// OpenLoopRule says whether the server kept up with an open-loop trial's rate: a trial at a
// rate passes only if every objective holds and the server kept up. Latency alone cannot
// tell: a rate just above capacity builds its backlog slowly, and a trial may end before the
// queue has grown enough to lift a percentile past its threshold. Two guards say whether the server kept up; both must hold.
//
// Completion guard: the completion rate, (k − 1) over the span from the first to the last
// successful measured response (k of them), is at least (1 − ε) times the offered rate,
// (n − 1) over the span of the n measured requests' due times on the schedule. A server that
// keeps up finishes requests as fast as they arrive (each one its latency after it was sent);
// one that does not finishes them at its own capacity, and failed requests do not count.
//
// Backlog guard: the backlog must not grow over the trial. The in-flight count (requests due
// and not yet finished, warmups included) is sampled at each measured request's due time from
// the trial's first response on (before that the count only ramps up from an idle server to
// its level), and fitted against time by least squares; the fitted line's rise over the
// sampled span is the backlog growth. It must not exceed the allowance: the largest of
// 2 requests, β × the mean sampled in-flight count, and twice the samples' scatter (root
// mean square) about the fitted line. A stable server's in-flight count wanders around its
// level (Little's law: rate × latency), by as much as its scatter under random arrivals;
// past capacity it grows by (rate − capacity) per second: a rate 5 % above capacity gains
// n × 4.8 % requests over n sends, which passes the completion guard at ε = 5 % but not this
// one once n is over about five times the level (constant arrivals; Poisson arrivals need
// far more, their own randomness being of the order of √n).
//
// A trial with fewer than MinBacklogSamples samples is not judged by the backlog guard
// (KeepUp.BacklogJudged is false, and the trial says so): a fit through a handful of points
// tells nothing, and failing the trial for it would fail a server that kept up for lack of
// samples the trial could never give. Eight measured requests without warmups give at most
// seven (the first is sent before any response can come back), and a rate whose requests
// are all sent before the first response gives none. Such a trial is judged by the
// completion guard alone; more measured requests let both judge.
type OpenLoopRule struct {
	Epsilon float64 // ε: the completion rate may fall short of the offered rate by this share
	Backlog float64 // β: the backlog growth allowed, as a share of the mean in-flight count
}

// DefaultOpenLoopRule is ε = 5 % and β = 25 %.
func DefaultOpenLoopRule() OpenLoopRule { return OpenLoopRule{Epsilon: 0.05, Backlog: 0.25} }

// MinBacklogSamples is the fewest in-flight samples the backlog guard judges on; with fewer
// it does not judge.
const MinBacklogSamples = 8

// minBacklogAllowance is the backlog growth always allowed, in requests: a count that moves
// by one or two between sends is the granularity of the count, not a trend.
const minBacklogAllowance = 2.0

// backlogNoiseZ is how many times the in-flight count's scatter about its fitted line the
// fitted rise must exceed to count as growth: a stable queue under random arrivals wanders,
// and its wanders are as large as its scatter.
const backlogNoiseZ = 2.0

// Guards missed, as KeepUp.Missed lists them.
const (
	MissedCompletionRate = "completion_rate"
	MissedBacklog        = "backlog"
)

// KeepUp is whether the server kept up with an open-loop trial's rate, and the figures behind
// the verdict.
type KeepUp struct {
	OfferedRate    float64 // measured requests per second on the schedule
	CompletionRate float64 // successful measured responses per second
	// BacklogGrowth is the fitted rise of the in-flight count over the sampled span, in
	// requests; BacklogAllowance the most it may rise; InFlightMean the mean sampled count.
	BacklogGrowth    float64
	BacklogAllowance float64
	InFlightMean     float64
	BacklogSamples   int
	// BacklogJudged is whether the backlog guard judged the trial: false with fewer than
	// MinBacklogSamples samples, when only the completion guard did.
	BacklogJudged bool
	ResidualSD    float64  // the samples' root-mean-square distance from the fitted line
	Missed        []string // MissedCompletionRate, MissedBacklog; empty when it kept up
}

// Pass reports whether both guards held.
func (k KeepUp) Pass() bool { return len(k.Missed) == 0 }

// KeptUp judges an open-loop trial's records (RunOpenTrial's, warmups included) by both guards.
func (r OpenLoopRule) KeptUp(records []load.RequestResult) KeepUp {
	var k KeepUp
	var measured []load.RequestResult
	var firstDone time.Time
	for _, rec := range records {
		if !rec.Done.IsZero() && (firstDone.IsZero() || rec.Done.Before(firstDone)) {
			firstDone = rec.Done
		}
		if !rec.Warmup && !rec.Due.IsZero() {
			measured = append(measured, rec)
		}
	}
	k.OfferedRate = OfferedRate(measured)

	var okDone []time.Time
	for _, rec := range measured {
		if Succeeded(rec) {
			okDone = append(okDone, rec.Done)
		}
	}
	if len(okDone) >= 2 {
		lo, hi := slices.MinFunc(okDone, time.Time.Compare), slices.MaxFunc(okDone, time.Time.Compare)
		if span := hi.Sub(lo).Seconds(); span > 0 {
			k.CompletionRate = float64(len(okDone)-1) / span
		}
	}
	if !(k.OfferedRate > 0) || k.CompletionRate < (1-r.Epsilon)*k.OfferedRate {
		k.Missed = append(k.Missed, MissedCompletionRate)
	}

	ts, ns := backlogSamples(records, measured, firstDone)
	k.BacklogSamples = len(ns)
	if len(ns) > 0 {
		sum := 0.0
		for _, n := range ns {
			sum += n
		}
		k.InFlightMean = sum / float64(len(ns))
	}
	if len(ns) >= 2 {
		b := slope(ts, ns)
		k.BacklogGrowth = b * (ts[len(ts)-1] - ts[0])
		mt := 0.0
		for _, x := range ts {
			mt += x
		}
		mt /= float64(len(ts))
		ss := 0.0
		for i := range ts {
			r := ns[i] - (k.InFlightMean + b*(ts[i]-mt))
			ss += r * r
		}
		k.ResidualSD = math.Sqrt(ss / float64(len(ts)))
	}
	k.BacklogAllowance = max(minBacklogAllowance, r.Backlog*k.InFlightMean, backlogNoiseZ*k.ResidualSD)
	k.BacklogJudged = len(ns) >= MinBacklogSamples
	if k.BacklogJudged && k.BacklogGrowth > k.BacklogAllowance {
		k.Missed = append(k.Missed, MissedBacklog)
	}
	return k
}

// OfferedRate is (n − 1) over the span of the measured requests' due times, in requests per
// second; 0 with fewer than two.
func OfferedRate(measured []load.RequestResult) float64 {
	var first, last time.Time
	n := 0
	for _, rec := range measured {
		if rec.Warmup || rec.Due.IsZero() {
			continue
		}
		if n == 0 || rec.Due.Before(first) {
			first = rec.Due
		}
		if n == 0 || rec.Due.After(last) {
			last = rec.Due
		}
		n++
	}
	if n < 2 || !last.After(first) {
		return 0
	}
	return float64(n-1) / last.Sub(first).Seconds()
}

// backlogSamples returns, for each measured request due at or after firstDone, its due time
// (seconds after the first sample) and the in-flight count then: requests due by then and not
// finished (a request never finished counts as in flight to the end).
func backlogSamples(all, measured []load.RequestResult, firstDone time.Time) (ts, ns []float64) {
	if firstDone.IsZero() {
		return nil, nil
	}
	dues := make([]time.Time, 0, len(all))
	dones := make([]time.Time, 0, len(all))
	for _, rec := range all {
		if rec.Due.IsZero() {
			continue
		}
		dues = append(dues, rec.Due)
		done := rec.Done
		if done.IsZero() {
			done = time.Unix(1<<40, 0) // never finished: in flight for ever
		}
		dones = append(dones, done)
	}
	slices.SortFunc(dues, time.Time.Compare)
	slices.SortFunc(dones, time.Time.Compare)
	var origin time.Time
	for _, rec := range measured {
		if rec.Due.Before(firstDone) {
			continue
		}
		// due ≤ t: sort.Search for the first due after t; done > t likewise.
		due, _ := slices.BinarySearchFunc(dues, rec.Due, func(a, t time.Time) int {
			if a.After(t) {
				return 1
			}
			return -1
		})
		done, _ := slices.BinarySearchFunc(dones, rec.Due, func(a, t time.Time) int {
			if a.After(t) {
				return 1
			}
			return -1
		})
		if origin.IsZero() {
			origin = rec.Due
		}
		ts = append(ts, rec.Due.Sub(origin).Seconds())
		ns = append(ns, float64(due-done))
	}
	return ts, ns
}

// slope is the least-squares slope of ys against xs; 0 when the xs do not vary.
func slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx, my = mx/n, my/n
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx == 0 {
		return 0
	}
	return sxy / sxx
}

// CannotKeepUp reports, during an open-loop trial, whether the completion guard is already
// certain to fail: requests are still outstanding at now, so the last successful response
// comes after now, and even if every measured request not yet failed succeeds the completion
// rate stays under (1 − ε) × offeredRate. The backlog has grown past what the remaining
// time can drain. firstDone is the first successful measured response (zero: none yet, and
// nothing is certain); measured counts the trial's measured requests, failed those already
// failed.
func (r OpenLoopRule) CannotKeepUp(now, firstDone time.Time, offeredRate float64, measured, failed int) bool {
	if firstDone.IsZero() || !now.After(firstDone) {
		return false
	}
	best := float64(measured-failed-1) / now.Sub(firstDone).Seconds()
	return best < (1-r.Epsilon)*offeredRate
}
