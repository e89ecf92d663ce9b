package capacity

// Whether a run can finish inside the time its caller gives it (timeouts.create), judged
// from the configuration alone: the time a trial spends waiting on its own schedule (an
// open-loop trial's arrivals, a replay's recorded offsets) or on its users' think time
// passes however fast the server answers, so it is a floor under every trial that sends all
// its measured requests (every passing one; a probe may stop early only once it has
// failed), which plan can know.

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
)

// trialFloor is the least time one trial of a workload waits on its own schedule or its
// users, however fast the server answers.
type trialFloor struct {
	seconds float64
	// sure: every trial waits this long (constant pauses or a recorded schedule); otherwise
	// it is the mean of random pauses, which one trial may undercut.
	sure bool
	// how is the arithmetic, for people: "1000h × (1 × 4 + ⌈64 / 64⌉ − 1)".
	how string
	// at is the setting that makes the wait, the one to lower.
	at attrpath.Path
	// fix says which settings shorten it.
	fix string
}

// Budget is the time a run is given: Limit, its caller's bound (timeouts.create), and
// Detached, whether the run outlives it (a runner measures on, and the next apply attaches
// to it) or is stopped by it (a run in the caller's process).
type Budget struct {
	Limit    time.Duration
	Detached bool
}

// CheckTime reports a configuration that cannot finish inside b.Limit however fast the
// server is: an error when one trial waits longer than the limit on constant pauses, in the
// caller's process (a trial cut short keeps nothing, so no apply ever finishes it); a
// warning when random pauses make that likely, when a runner is left to finish after the
// limit, or when the fewest trials the search can ask for wait longer than it together
// (with progress_file, a later apply resumes them). c must have passed Validate.
func (c Config) CheckTime(b Budget) []problem.Problem {
	if b.Limit <= 0 {
		return nil
	}
	limit := b.Limit.Seconds()
	ax := c.runAxis()
	var out []problem.Problem
	total, fewest := 0.0, 0
	var sums []string
	lo, _ := ax.remaining(c, nil) // the same search on every workload
	lo = max(lo, 1)
	for i, w := range c.Workloads {
		f := ax.leastTrial(c, i, w)
		if f.seconds <= 0 {
			continue
		}
		if f.seconds > limit {
			what := "waits at least"
			if !f.sure {
				what = "waits on average at least"
			}
			detail := fmt.Sprintf("%s: a passing trial of workload %q %s %s = %s on its own pauses, however fast the server answers, which is longer than timeouts.create (%s)",
				f.at, w.Label, what, f.how, humanSeconds(f.seconds), b.Limit)
			switch {
			case b.Detached:
				detail += "; the runner measures on past it, and each later apply attaches to it until it finishes"
			default:
				detail += ", and a trial cut short keeps nothing"
			}
			out = append(out, problem.Problem{Path: f.at, Summary: "Trial longer than timeouts.create", Warning: !f.sure || b.Detached,
				Reads:  []attrpath.Path{attrpath.Root("timeouts").At("create")},
				Detail: detail + fmt.Sprintf(". %s, or raise timeouts.create above %s", f.fix, humanSeconds(f.seconds))})
			continue
		}
		total += float64(lo) * f.seconds
		fewest += lo
		sums = append(sums, fmt.Sprintf("%d × %s (%q)", lo, humanSeconds(f.seconds), w.Label))
	}
	if len(out) == 0 && total > limit {
		then := "set progress_file so that the next apply resumes from the trials this one finished"
		if b.Detached {
			then = "the runner measures on past it, and each later apply attaches to it until it finishes"
		}
		out = append(out, problem.Problem{Path: attrpath.Root("timeouts").At("create"), Summary: "Run longer than timeouts.create", Warning: true,
			Detail: fmt.Sprintf("timeouts.create (%s) is shorter than the pauses of the fewest trials the search can ask for, however fast the server answers: %s = %s over %d trials; "+
				"%s, or raise timeouts.create above %s", b.Limit, strings.Join(sums, " + "), humanSeconds(total), fewest, then, humanSeconds(total))})
	}
	return out
}

// leastTrial of the closed loop: nothing waits but the server.
func (concurrencyAxis) leastTrial(Config, int, Workload) trialFloor { return trialFloor{} }

// leastTrial of conversations: before its first measured turn a user pauses a think time
// before every turn of its warm-up conversations and after each of them (turns × warm-up
// conversations pauses), then once between measured turns; at the most users the search
// tries, one of them sends at least ⌈measured turns / users⌉ of them. A turn that fails ends
// its conversation early, so the floor is a trial's whose turns are answered.
func (a usersAxis) leastTrial(c Config, i int, w Workload) trialFloor {
	cv := w.Conversation
	if cv == nil || cv.Think.Mean <= 0 {
		return trialFloor{}
	}
	users := a.max
	if len(a.levels) > 0 {
		users = 0
		for _, l := range a.levels {
			users = max(users, l)
		}
	}
	if users < 1 {
		return trialFloor{}
	}
	perUser := (c.MeasuredRequests + users - 1) / users
	pauses := float64(cv.WarmupConversations)*float64(cv.Turns) + float64(perUser) - 1
	p := attrpath.Root("workloads").Index(i).At("conversation")
	return trialFloor{
		seconds: cv.Think.Mean.Seconds() * pauses,
		sure:    cv.Think.Distribution == load.ThinkConstant,
		how: fmt.Sprintf("think_time.mean %s × (warmup_conversations %d × turns %d + ⌈trial.measured_requests %d / %d users⌉ − 1)",
			cv.Think.Mean, cv.WarmupConversations, cv.Turns, c.MeasuredRequests, users),
		at:  p.At("think_time").At("mean"),
		fix: "Lower think_time.mean (a user's pause, e.g. \"10s\"), conversation.warmup_conversations or turns, or raise the users searched",
	}
}

// leastTrial of a rate search: the trial at the highest rate spreads its warmups and
// measured requests over (requests − 1) gaps of 1 / rate on average (exactly, for constant
// arrivals).
func (a rateAxis) leastTrial(c Config, _ int, _ Workload) trialFloor {
	n := c.WarmupRequests + c.MeasuredRequests
	if n < 2 || !(a.ol.MaxRate > 0) {
		return trialFloor{}
	}
	return trialFloor{
		seconds: float64(n-1) / a.ol.MaxRate,
		sure:    a.ol.Arrival.Pattern == load.ArrivalConstant,
		how:     fmt.Sprintf("(%d warmups + %d measured requests − 1) / search.rate.max %g requests/s", c.WarmupRequests, c.MeasuredRequests, a.ol.MaxRate),
		at:      attrpath.Root("search").At("rate").At("max"),
		fix:     "Raise search.rate.max, or lower trial.measured_requests or trial.warmup_requests",
	}
}

// leastTrial of a replay: the trace's recorded span divided by the highest speedup.
func (a replayAxis) leastTrial(_ Config, i int, w Workload) trialFloor {
	if w.Trace == nil || w.Trace.Span() <= 0 || !(a.ol.MaxRate > 0) {
		return trialFloor{}
	}
	return trialFloor{
		seconds: w.Trace.Span().Seconds() / a.ol.MaxRate,
		sure:    true,
		how:     fmt.Sprintf("the trace's span %s / search.speedup.max %g", w.Trace.Span(), a.ol.MaxRate),
		at:      attrpath.Root("search").At("speedup").At("max"),
		fix:     fmt.Sprintf("Raise search.speedup.max, or replay a shorter part of workloads[%d].trace.file", i),
	}
}

// humanSeconds writes s seconds as a Go duration, rounded to the second, or in years beyond
// what a time.Duration holds.
func humanSeconds(s float64) string {
	if s >= math.MaxInt64/float64(time.Second) {
		return fmt.Sprintf("%.3g years", s/(365.25*24*3600))
	}
	return time.Duration(s * float64(time.Second)).Round(time.Second).String()
}
