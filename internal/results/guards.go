package results

import "fmt"

// The guards an open-loop trial may miss, as OpenLoopTrial.Missed and bound_by name them
// (metrics.MissedCompletionRate, metrics.MissedBacklog).
const (
	GuardCompletionRate = "completion_rate"
	GuardBacklog        = "backlog"
)

// MissedGuards says, one phrase per guard the trial missed, why the server did not keep up
// with its rate, with the figures behind it: "completions 5.12/s < 7.32/s offered",
// "backlog grew by 3.1 requests (allowed 2)". Empty when it kept up or is not open-loop.
func (o *OpenLoopTrial) MissedGuards() []string {
	if o == nil {
		return nil
	}
	var out []string
	for _, m := range o.Missed {
		out = append(out, guardPhrase(m, o))
	}
	return out
}

func guardPhrase(key string, o *OpenLoopTrial) string {
	switch key {
	case GuardCompletionRate:
		return fmt.Sprintf("completions %s/s < %s/s offered", significant(o.CompletionRate, 3), significant(o.OfferedRate, 3))
	case GuardBacklog:
		return fmt.Sprintf("backlog grew by %s requests (allowed %s)", significant(o.BacklogGrowth, 2), significant(o.BacklogAllowance, 2))
	}
	return key + " missed"
}

// guardName is a guard's bound_by key as a reader says it; "" for a key that is no guard.
func guardName(key string) string {
	switch key {
	case GuardCompletionRate:
		return "completion rate (did not keep up)"
	case GuardBacklog:
		return "backlog growth (did not keep up)"
	}
	return ""
}
