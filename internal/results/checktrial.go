package results

// CheckTrial lists what one trial's figures cannot mean, the checks a document's reader
// makes of every trial it holds (more failed requests than measured ones, statistics out of
// order, a warm cache under a pass, unknown metrics, unprintable names), plus a negative
// figure among its statistics or objective values, which no measurement gives. A caller
// holding a trial outside a document (the progress journal) checks it with this before
// trusting it. Each problem names the trial's JSON field.
func CheckTrial(objectives []SLO, t Trial) []error {
	var r reader
	r.checkTrialFace("trial", objectives, t)
	for _, st := range []struct {
		key string
		s   *Stats
	}{{"ttft_ms", &t.TTFTMs}, {"request_latency_ms", &t.RequestLatencyMs}, {"itl_ms", &t.ITLMs}, {"per_user_output_throughput_tps", &t.PerUserOutputThroughputTPS},
		{"ttst_ms", t.TTSTMs}, {"inter_chunk_latency_ms", t.InterChunkLatencyMs}, {"connection_setup_ms", t.ConnectionSetupMs}} {
		if st.s == nil {
			continue
		}
		for i, key := range StatKeys {
			if st.s.Has(key) && *st.s.field(i) < 0 {
				r.fail(joinKey(joinKey("trial", st.key), key), "%s is negative", formatFloat(*st.s.field(i)))
			}
		}
	}
	for k, s := range t.SLOs {
		if s.Value < 0 {
			r.fail(joinKey(joinIndex(joinKey("trial", "slos"), k), "value"), "%s is negative", formatFloat(s.Value))
		}
	}
	return r.errs
}
