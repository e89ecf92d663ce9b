package capacity

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/degenerate"
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/metrics"
	"github.com/llmserve/terraform-provider-llmserve/internal/prompt"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/telemetry"
)

// guardBand makes the search confirm the level below the boundary too when the boundary's
// trials came within 7 % of a threshold, where the exhaustive grid could have seen a
// noisy failure lower down. The search sees each trial's closeness (the largest objective
// value relative to its threshold), so its threshold is 1.
const guardBand = 0.07

// ErrServerFailing means every measured request of a full trial at the minimum concurrency
// failed: the server, not the load, is the problem, and there is no capacity to report.
var ErrServerFailing = errors.New("every measured request failed")

// ErrDegenerateOutput means most outputs of a full trial at the minimum concurrency were
// degenerate (metrics.JudgeOutputs: empty, one code point repeated, the same for different
// prompts): the server answers, but what it generates is broken, and its speed is no capacity.
var ErrDegenerateOutput = errors.New("most outputs are degenerate")

// Run measures every workload and returns the results document. On error it returns what
// was finished so far (nil workloads are left out) together with the error; every finished
// trial has also been passed to cfg.Progress. Resume wraps it with the progress files.
func Run(ctx context.Context, cfg Config) (*results.Document, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	doc, _, err := run(ctx, cfg)
	return doc, err
}

// runStats is what a run counted, for the caller's report.
type runStats struct {
	start    time.Time
	measured int
	reused   int
	reusedBy []string
}

// run runs a configuration Check passed (Config.check).
func run(ctx context.Context, cfg Config) (*results.Document, runStats, error) {
	tracker := newRunTracker(cfg, sessionSLOs(cfg), cfg.ProgressLine)
	stats := func() runStats {
		tracker.mu.Lock()
		defer tracker.mu.Unlock()
		return runStats{start: tracker.start, measured: tracker.measured, reused: tracker.reused, reusedBy: slices.Clone(tracker.reusedBy)}
	}
	tracker.current, tracker.step = "the connection check", stepNone
	s, err := connect(ctx, cfg)
	if err != nil {
		return nil, stats(), tracker.explain(ctx, err)
	}
	tracker.current, tracker.axis = "", s.axis
	s.tracker = tracker
	doc := s.skeleton()
	for i, w := range cfg.Workloads {
		r := &trialRunner{s: s, w: w, index: i}
		wr, err := r.measureWorkload(ctx, doc)
		if r.warmupNote != "" {
			wr.Notes = append(wr.Notes, r.warmupNote)
		}
		if err != nil {
			doc.CorrectnessTotal = totals(doc.Workloads)
			err = tracker.explain(ctx, err)
			if _, stopped := err.(*StoppedError); !stopped { // a stopped run's text names the workload
				err = fmt.Errorf("workload %q: %w", w.Label, err)
			}
			return doc, stats(), err
		}
		doc.Workloads = append(doc.Workloads, wr)
		tracker.sayf("%s  workload %q done: %s", time.Now().UTC().Format("15:04:05"), w.Label, workloadLine(wr))
	}
	doc.CorrectnessTotal = totals(doc.Workloads)
	return doc, stats(), nil
}

// workloadLine reads "maximum passing concurrency 4, first failing 5 (bound by p95 time_to_first_token)".
func workloadLine(w results.Workload) string {
	mp, ff := w.BoundaryText()
	s := fmt.Sprintf("maximum passing %s %s, first failing %s", w.Axis().Name(), mp, ff)
	if len(w.BoundBy) > 0 {
		s += " (bound by " + strings.Join(w.BoundBy, ", ") + ")"
	}
	return s
}

// session is one benchmark's connection to the server.
type session struct {
	cfg     Config
	control *engine.Client
	client  *load.Client
	flush   engine.CacheFlush
	engine  engine.Name // sglang | vllm | llamacpp, or empty when the server did not say
	info    engine.ServerInfo
	axis    axis // what the run varies: picked once, from the validated configuration
	prompts *prompt.Generator
	blocks  blockTexts // a replayed trace's hash_ids blocks, fitted once per run
	// cacheReport: whether a response without a cached-token field means 0 (coldcache.go).
	cacheReport cacheReporting
	tracker     *runTracker // nil-safe: counts trials, names the running one, writes human lines
	// telemetry are the accelerators' exporters, scraped over every trial; none without
	// telemetry_endpoints.
	telemetry []telemetry.Endpoint
	// replicas are the deployment's replicas behind the endpoint (replica_endpoints), each
	// settled and read on its own before and during every trial; none without them.
	replicas []replica
	// fleet sends every trial from several load generators (Config.Pods); nil: from here.
	fleet *fleet
}

// loadClient is the client every load generator of a run measures with (each runner pod of
// a fleet its own): extra is what every request carries beyond the prompt.
func loadClient(cfg Config, extra map[string]any) (*load.Client, error) {
	return load.NewClient(load.ClientConfig{
		BaseURL: cfg.Endpoint, Model: cfg.Model, API: cfg.API, APIKey: cfg.APIKey,
		ExtraBody:    extra,
		StallTimeout: cfg.StallTimeout, RequestTimeout: cfg.RequestTimeout,
		RecordChunkTimes: cfg.RecordChunkTimes,
	})
}

// connect checks that the endpoint is usable before any load is sent: reachable, the model
// served, credentials accepted, streaming with usage.
func connect(ctx context.Context, cfg Config) (*session, error) {
	s := &session{cfg: cfg, axis: cfg.runAxis()}
	control, err := engine.NewClient(engine.ClientConfig{BaseURL: cfg.Endpoint, Model: cfg.Model, APIKey: cfg.APIKey, AdminAPIKey: cfg.AdminAPIKey, IdleTimeout: cfg.IdleTimeout})
	if err != nil {
		return nil, err
	}
	s.control = control
	if err := control.VerifyModel(ctx); err != nil {
		return nil, err
	}
	s.info, _ = control.ServerInfo(ctx) // only enriches the experiment block

	s.flush, err = control.FlushCache(ctx, cfg.CacheFlush)
	if err != nil {
		return nil, err
	}
	s.engine = s.flush.Engine
	if s.engine == "" {
		s.engine, _ = control.Engine(ctx) // only for the idle check; unknown servers skip it
	}
	if s.replicas, err = connectReplicas(cfg, s.engine); err != nil {
		return nil, err
	}
	s.client, err = loadClient(cfg, s.flush.RequestFields)
	if err != nil {
		return nil, err
	}
	if cfg.Pods > 1 {
		if cfg.Fleet == nil {
			return nil, fmt.Errorf("%d load generators (runner.kubernetes.pods) need the Kubernetes runner's pods to send from; this run has none", cfg.Pods)
		}
		s.fleet = &fleet{f: cfg.Fleet, pods: cfg.Pods, body: s.flush.RequestFields}
	}
	if err := s.checkStreaming(ctx); err != nil {
		return nil, err
	}
	s.learnCacheReporting(ctx)
	for i, raw := range cfg.TelemetryEndpoints {
		u, err := telemetry.ParseEndpoint(raw)
		if err != nil {
			return nil, fmt.Errorf("telemetry_endpoints[%d]: %w", i, err)
		}
		s.telemetry = append(s.telemetry, telemetry.Endpoint{Name: fmt.Sprintf("telemetry_endpoints[%d] (%s%s)", i, u.Host, u.EscapedPath()), Source: telemetry.NewHTTPSource(u, nil)})
	}

	s.prompts = &prompt.Generator{Seed: cfg.Seed}
	if _, err := control.CountTokens(ctx, "hello world"); err == nil {
		s.prompts.Counter = control
	} else if errors.Is(err, engine.ErrNoTokenizer) {
		s.prompts.Probe = s.usageProbe
	} else {
		return nil, fmt.Errorf("prompt calibration: %w", err)
	}
	return s, nil
}

// preflightAttempts and preflightBackoff let the first streamed request ride out a server
// that is briefly busy (429, 5xx, a reset connection): it is not measured, so unlike
// measured requests it may be retried.
var (
	preflightAttempts = 3
	preflightBackoff  = time.Second
)

// checkStreaming sends one small request and says plainly what is missing if the server
// cannot be measured: every metric depends on streamed chunks and on usage.
func (s *session) checkStreaming(ctx context.Context) error {
	var r load.RequestResult
	for attempt := 1; ; attempt++ {
		r = s.client.Do(ctx, "Say hello.", 2)
		if attempt == preflightAttempts || !transient(r) {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("preflight request: %w", ctx.Err())
		case <-time.After(preflightBackoff << (attempt - 1)):
		}
	}
	switch {
	case r.Cancelled:
		return fmt.Errorf("preflight request: %w", ctx.Err())
	case r.HTTPStatus == 401 || r.HTTPStatus == 403:
		return fmt.Errorf("preflight request: HTTP %d: %w", r.HTTPStatus, engine.ErrUnauthorized)
	case r.HTTPStatus == 404:
		return fmt.Errorf("preflight request: HTTP 404: the server has no %s endpoint or does not serve model %q; check api and model", s.cfg.API, s.cfg.Model)
	case !r.OK():
		return fmt.Errorf("preflight request failed (HTTP %d): %s", r.HTTPStatus, r.Err)
	case r.FirstContent.IsZero() && r.UsageReported && r.CompletionTokens > 0:
		// It streams, and says it generated: its text is what is broken, not its streaming.
		return fmt.Errorf("preflight request: degenerate output (%s): the server streams and counts tokens but sends no text; "+
			"its model or kernels are broken (see correctness.degenerate_outputs in the results schema guide), so it has no capacity to measure; check its logs",
			degenerate.Output{}.Describe(degenerate.Empty, r.CompletionTokens))
	case r.FirstContent.IsZero():
		return errors.New("preflight request: the server streamed no content chunk; it must support \"stream\": true")
	case !r.UsageReported:
		return errors.New("preflight request: the server sent no usage; it must honour stream_options.include_usage so token counts come from the server")
	}
	return nil
}

// transient reports whether a failed request is worth sending again: the server shed load
// or dropped the connection. A stall or timeout already waited its full bound.
func transient(r load.RequestResult) bool {
	switch r.Failure {
	case load.FailReset:
		return true
	case load.FailHTTPStatus:
		return r.HTTPStatus == 429 || r.HTTPStatus >= 500
	}
	return false
}

// usageProbe measures a prompt's server token count with a 1-token request; used to fit
// prompt lengths when the server has no tokenize endpoint. It is a control call, retried on
// transient failures.
func (s *session) usageProbe(ctx context.Context, text string) (int, error) {
	return s.control.PromptTokens(ctx, s.cfg.API == APIChat, text, s.flush.RequestFields)
}

func (s *session) skeleton() *results.Document {
	cfg := s.cfg
	exp := results.Experiment{Model: cfg.Model, ContextLength: s.info.MaxContext}
	if cfg.Experiment != nil {
		exp = *cfg.Experiment
	}
	if exp.PhysicalTokenPool == nil && s.info.TokenPool != 0 {
		pool := s.info.TokenPool
		exp.PhysicalTokenPool = &pool
	}
	return &results.Document{
		SchemaVersion: results.SchemaVersion,
		Experiment:    exp,
		AIPerf: results.Protocol{
			Version:                          strings.TrimSpace("terraform-provider-llmserve " + cfg.ToolVersion),
			ArrivalPattern:                   s.axis.pattern(),
			Streaming:                        true,
			ServerTokenCount:                 true,
			Temperature:                      0,
			IgnoreEOS:                        true,
			WarmupsPerTrial:                  cfg.WarmupRequests,
			MeasuredRequestsPerTrial:         cfg.MeasuredRequests,
			IndependentTrialsPerBoundarySide: cfg.ConfirmationTrials,
			CachePolicy:                      s.flush.Policy(),
			ComparisonBudget:                 comparisonBudget(cfg),
			EngineWarmupRequests:             cfg.EngineWarmupRequests,
		},
		SLOs:      s.slos(),
		Workloads: []results.Workload{},
	}
}

// comparisonBudget is the document's aiperf.comparison_budget: the run's budget when it
// measures against a baseline, else absent.
func comparisonBudget(cfg Config) int {
	if cfg.Baseline == nil {
		return 0
	}
	return cfg.ComparisonBudget
}

// slos are the configured objectives with their defaults filled in, as documents state them.
func (s *session) slos() []results.SLO { return sessionSLOs(s.cfg) }

func sessionSLOs(cfg Config) []results.SLO {
	out := make([]results.SLO, len(cfg.SLOs))
	for i, o := range cfg.SLOs {
		out[i] = o.WithDefaults()
	}
	return out
}

// workloadResult is what both searches report alike for a workload: what it was configured
// with, the trials at the boundary and every trial used, and the prompt lengths the server
// counted. The caller adds its boundary (a concurrency or a rate) and then the headline.
func workloadResult(w Workload, passing, failing, all []outcome) results.Workload {
	out := results.Workload{
		Label:              w.Label,
		ConfiguredISL:      w.InputTokens,
		ConfiguredOSL:      w.OutputTokens,
		InputTokensStddev:  w.InputTokensStddev,
		OutputTokensStddev: w.OutputTokensStddev,
		SharedPrefixTokens: w.SharedPrefixTokens,
		PassingTrials:      trialsOf(passing),
		FailingTrials:      trialsOf(failing),
	}
	out.ServerPromptTokens = promptTokenRange(append(append([]results.Trial{}, out.PassingTrials...), out.FailingTrials...))
	out.AllTrials = everyTrial(all)
	return out
}

// applyHeadline derives the headline and the verdicts every reader of the document derives.
func (s *session) applyHeadline(out *results.Workload) error {
	h, err := results.DeriveHeadline(s.slos(), *out)
	if err != nil {
		return fmt.Errorf("workload %q: %w", out.Label, err)
	}
	h.Apply(out)
	out.TrialDisagreements = results.Disagreements(s.slos(), *out)
	return nil
}

// everyTrial is every trial the search used, in order, each saying its kind and whether it
// was stopped early. Resumed trials of an older journal without metrics are left out.
func everyTrial(outcomes []outcome) []results.Trial {
	out := make([]results.Trial, 0, len(outcomes))
	for _, o := range outcomes {
		t := o.Detail
		if t == nil {
			continue
		}
		tr := *t
		tr.Kind = o.Kind.String()
		tr.StoppedEarly = o.DecidedEarly
		tr.Concurrency = o.Concurrency
		switch {
		case o.Pass:
			tr.Verdict = "pass"
		case o.Failed > 0:
			// Requests failed: the server's failure, not an objective's miss.
			tr.Verdict = "error"
		default:
			tr.Verdict = "fail"
		}
		out = append(out, tr)
	}
	return out
}

func trialsOf(outcomes []outcome) []results.Trial {
	out := make([]results.Trial, 0, len(outcomes))
	for _, o := range outcomes {
		if t := o.Detail; t != nil {
			out = append(out, *t)
		}
	}
	return out
}

func promptTokenRange(trials []results.Trial) results.MinMax {
	var mm results.MinMax
	for i, t := range trials {
		if i == 0 || t.ServerPromptTokens.Min < mm.Min {
			mm.Min = t.ServerPromptTokens.Min
		}
		if i == 0 || t.ServerPromptTokens.Max > mm.Max {
			mm.Max = t.ServerPromptTokens.Max
		}
	}
	return mm
}

func totals(ws []results.Workload) results.Correctness {
	var trials []results.Trial
	for _, w := range ws {
		trials = append(trials, w.PassingTrials...)
		trials = append(trials, w.FailingTrials...)
	}
	return metrics.Totals(trials...)
}
