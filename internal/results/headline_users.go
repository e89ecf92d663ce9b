package results

// byUsers reports whether w was searched by users holding conversations: it states a users
// boundary or its trials state their users.
func (w Workload) byUsers() bool {
	if w.MaximumPassingUsers != nil || w.FirstFailingUsers != nil {
		return true
	}
	for _, ts := range [][]Trial{w.AllTrials, w.PassingTrials, w.FailingTrials} {
		for _, t := range ts {
			if t.Users > 0 {
				return true
			}
		}
	}
	return false
}

// deriveUsers is DeriveHeadline's rule over users instead of concurrencies: the same
// confirmation rules, levels being the trials' users.
func (h *Headline) deriveUsers(objectives []SLO, trials []headlineTrial) {
	h.MaximumPassingUsers, h.FirstFailingUsers, h.ClientBound = boundary(trials, func(ht headlineTrial) (int, bool) { return ht.users, ht.users >= 1 })
	h.Bound = Workload{MaximumPassingUsers: h.MaximumPassingUsers, FirstFailingUsers: h.FirstFailingUsers}.SearchBound()
	if ff := h.FirstFailingUsers; ff != nil {
		h.BoundBy = boundBy(objectives, trials, func(ht headlineTrial) bool { return ht.users == *ff })
	}
}
