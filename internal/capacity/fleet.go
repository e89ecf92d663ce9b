package capacity

// A trial spread over several load generators (runner.kubernetes.pods). The generator that
// runs the search (pod 0) splits each trial (split.go), hands every other generator its
// share, and starts them all together behind a barrier: no generator sends before every one
// holds its share and has said so, and then all leave at one instant set a margin ahead. It
// sends its own share meanwhile, and merges every generator's per-request records into the
// one trial the one judge reads: percentiles over all requests, never averaged across pods.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// Fleet is the load generators beside this one that carry a share of every trial: set as
// Config.Fleet by the runner pod that runs the search when Config.Pods is above 1.
type Fleet interface {
	// Peers are the other generators, peer i carrying share i+1 (Config.Pods − 1 of them),
	// once every one answers; an error when they do not within the fleet's own bound.
	Peers(ctx context.Context) ([]Peer, error)
}

// Peer is one other load generator: a Worker in another runner pod (reached over the pod
// network), or in this process (tests).
type Peer interface {
	// Prepare hands the peer its share of trial id; it returns once the peer holds it, ready
	// to send, with the peer's clock as it answered.
	Prepare(ctx context.Context, id string, s Share) (time.Time, error)
	// Release starts the share at at, a time on the peer's own clock.
	Release(ctx context.Context, id string, at time.Time) error
	// Result waits for the share's end.
	Result(ctx context.Context, id string) (ShareResult, error)
	// Stop ends the share now (a probe decided); its result holds what was sent.
	Stop(ctx context.Context, id string) error
}

// MaxPods bounds Config.Pods (runner.kubernetes.pods).
const MaxPods = 64

// Share is one load generator's part of a trial: one of Closed, Open and Users.
type Share struct {
	Closed *ClosedShare `json:"closed,omitempty"`
	Open   *OpenShare   `json:"open,omitempty"`
	Users  *UsersShare  `json:"users,omitempty"`
	// ExtraBody is what every request carries beyond the prompt (an engine's cache switch).
	ExtraBody map[string]any `json:"extra_body,omitempty"`

	// warmup and measured are the places of the share's prompts among the whole trial's
	// (closed and open loop), which the merge gives its records back.
	warmup, measured []int
}

func (s Share) empty() bool { return s.Closed == nil && s.Open == nil && s.Users == nil }

// ClosedShare is a share of a closed-loop trial (load.TrialSpec).
type ClosedShare struct {
	Concurrency          int      `json:"concurrency"`
	Warmup               []string `json:"warmup"`
	Measured             []string `json:"measured"`
	OutputTokens         int      `json:"output_tokens"`
	WarmupOutputTokens   []int    `json:"warmup_output_tokens,omitempty"`
	MeasuredOutputTokens []int    `json:"measured_output_tokens,omitempty"`
}

// OpenShare is a share of an open-loop trial (load.OpenSpec): its arrivals at their offsets
// from the common start.
type OpenShare struct {
	Schedule             []time.Duration `json:"schedule"`
	Warmup               []string        `json:"warmup"`
	Measured             []string        `json:"measured"`
	OutputTokens         int             `json:"output_tokens"`
	WarmupOutputTokens   []int           `json:"warmup_output_tokens,omitempty"`
	MeasuredOutputTokens []int           `json:"measured_output_tokens,omitempty"`
	MaxInFlight          int             `json:"max_in_flight,omitempty"`
}

// UsersShare is a share of a users trial (load.UsersSpec): its users, the turns they
// measure, and the messages their conversations are made of.
type UsersShare struct {
	Users               int        `json:"users"`
	Measured            int        `json:"measured"`
	WarmupConversations int        `json:"warmup_conversations"`
	Think               load.Think `json:"think"`
	Seed                uint64     `json:"seed"`
	System              string     `json:"system,omitempty"`
	Turns               int        `json:"turns"`
	MaxTokens           int        `json:"max_tokens"`
	Warm                []string   `json:"warm"`
	MeasuredPool        []string   `json:"measured_pool"`
}

// ShareResult is what one generator's share produced, on its own clock.
type ShareResult struct {
	Requests      []load.RequestResult `json:"requests"`
	Stopped       bool                 `json:"stopped,omitempty"`
	Unsent        int                  `json:"unsent,omitempty"`
	MeasuredStart time.Time            `json:"measured_start"`
	MeasuredEnd   time.Time            `json:"measured_end"`
	// Released is when the generator left the start barrier.
	Released time.Time `json:"released"`
	// CPU is the generator's own CPU over its share (a worker's; the search's own pod reads
	// its own around the whole load): a trial is as client-bound as its most starved pod.
	CPU *results.ClientCPU `json:"cpu,omitempty"`
	// Err is why the share could not be sent to its end (a stop asked for is none).
	Err string `json:"error,omitempty"`
}

// shareHooks are what the generator that runs the search watches its own share with.
type shareHooks struct {
	observe        func(load.Event) bool
	tick           time.Duration
	beforeMeasured func()
}

// runShare sends one share from this generator.
func runShare(ctx context.Context, st load.Streamer, s Share, h shareHooks) (ShareResult, error) {
	of := func(r load.TrialResult) ShareResult {
		return ShareResult{Requests: r.Requests, Stopped: r.Stopped, Unsent: r.Unsent, MeasuredStart: r.MeasuredStart, MeasuredEnd: r.MeasuredEnd}
	}
	switch {
	case s.Closed != nil:
		c := s.Closed
		res, err := load.RunTrial(ctx, st, load.TrialSpec{Concurrency: c.Concurrency, Warmup: c.Warmup, Measured: c.Measured, OutputTokens: c.OutputTokens,
			WarmupOutputTokens: c.WarmupOutputTokens, MeasuredOutputTokens: c.MeasuredOutputTokens, Observe: h.observe, Tick: h.tick, BeforeMeasured: h.beforeMeasured})
		return of(res), err
	case s.Open != nil:
		o := s.Open
		res, err := load.RunOpenTrial(ctx, st, load.OpenSpec{Schedule: o.Schedule, Warmup: o.Warmup, Measured: o.Measured, OutputTokens: o.OutputTokens,
			WarmupOutputTokens: o.WarmupOutputTokens, MeasuredOutputTokens: o.MeasuredOutputTokens, MaxInFlight: o.MaxInFlight, Observe: h.observe, Tick: h.tick})
		return of(res.TrialResult), err
	case s.Users != nil:
		u := s.Users
		res, err := load.RunUsers(ctx, st, load.UsersSpec{Users: u.Users, Measured: u.Measured, WarmupConversations: u.WarmupConversations, Think: u.Think, Seed: u.Seed,
			Next: conversationSource(u.System, u.Warm, u.MeasuredPool, u.Turns, u.WarmupConversations, u.MaxTokens), Observe: h.observe})
		return of(res), err
	}
	return ShareResult{}, errors.New("an empty share")
}

// conversationSource deals a users trial's conversations from its pools: a user's first
// warmupConversations conversations from warm, the rest from measured, each the next turns
// messages of its pool (wrapping around one that runs out), so no two conversations of a
// trial share a message.
func conversationSource(system string, warm, measured []string, turns, warmupConversations, maxTokens int) func(user, n int) load.Conversation {
	var warmTaken, measTaken atomic.Int64
	return func(_, n int) load.Conversation {
		texts, taken := measured, &measTaken
		if n < warmupConversations {
			texts, taken = warm, &warmTaken
		}
		first := int(taken.Add(1)-1) * turns
		c := load.Conversation{System: system, Turns: make([]load.Turn, turns)}
		for k := range c.Turns {
			c.Turns[k] = load.Turn{Message: texts[(first+k)%len(texts)], MaxTokens: maxTokens}
		}
		return c
	}
}

// PeerLostError is a load generator of the fleet lost during a trial (its pod restarted or
// replaced, the pod network between them broken): that trial is measured again.
type PeerLostError struct {
	Pod int
	Err error
}

func (e *PeerLostError) Error() string {
	return fmt.Sprintf("runner pod %d was lost during the trial: %v", e.Pod, e.Err)
}
func (e *PeerLostError) Unwrap() error { return e.Err }

// fleetAttempts is how often a trial is sent when a generator is lost during it: a runner
// pod that restarts loses the trial it was in, never the run.
const fleetAttempts = 3

// minStartMargin is the least time between the barrier's last "ready" and the common start;
// the margin is four times the slowest round trip of the barrier when that is longer, so
// the start reaches every generator before it is due.
const minStartMargin = 50 * time.Millisecond

// fleet sends trials over the session's generators (Config.Fleet).
type fleet struct {
	f    Fleet
	pods int
	body map[string]any
}

// send sends one trial's shares, shares[0] from here with hooks, shares[i] from peer i,
// all started together, and returns their records merged into one trial and how it was
// spread. open says the shares are arrivals on one schedule, whose origin the merged
// result keeps; users that they are users' conversations.
// spread is how a trial was spread over the fleet: the document's account of it, and each
// other pod's CPU over its share.
type spread struct {
	pods *results.PodsTrial
	cpu  []*results.ClientCPU
}

func (f *fleet) send(ctx context.Context, st load.Streamer, shares []Share, hooks shareHooks, nWarmup int) (load.TrialResult, spread, error) {
	peers, err := f.f.Peers(ctx)
	if err != nil {
		return load.TrialResult{}, spread{}, err
	}
	if len(peers) != len(shares)-1 {
		return load.TrialResult{}, spread{}, fmt.Errorf("the fleet has %d other runner pods, the trial was split for %d", len(peers), len(shares)-1)
	}
	var idb [8]byte
	_, _ = rand.Read(idb[:])
	id := hex.EncodeToString(idb[:])
	for i := range shares {
		shares[i].ExtraBody = f.body
	}

	// The barrier: every peer holds its share (its clock read against ours meanwhile).
	offsets := make([]time.Duration, len(shares))
	rtts := make([]time.Duration, len(shares))
	errs := make([]error, len(shares))
	var wg sync.WaitGroup
	for i, p := range peers {
		if shares[i+1].empty() {
			continue
		}
		wg.Go(func() {
			t0 := time.Now()
			peerNow, err := p.Prepare(ctx, id, shares[i+1])
			t1 := time.Now()
			rtts[i+1], errs[i+1] = t1.Sub(t0), err
			offsets[i+1] = peerNow.Round(0).Sub(t0.Round(0).Add(t1.Sub(t0) / 2))
		})
	}
	wg.Wait()
	stopPeers := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		var sw sync.WaitGroup
		for i, p := range peers {
			if !shares[i+1].empty() {
				sw.Go(func() { _ = p.Stop(sctx, id) })
			}
		}
		sw.Wait()
	}
	if err := lost(errs); err != nil {
		stopPeers()
		return load.TrialResult{}, spread{}, err
	}
	margin := minStartMargin
	for _, d := range rtts {
		margin = max(margin, 4*d)
	}
	at := time.Now().Add(margin)
	for i, p := range peers {
		if shares[i+1].empty() {
			continue
		}
		wg.Go(func() { errs[i+1] = p.Release(ctx, id, at.Add(offsets[i+1])) })
	}
	wg.Wait()
	if err := lost(errs); err != nil {
		stopPeers()
		return load.TrialResult{}, spread{}, err
	}

	// Every generator sends; a peer lost ends the trial everywhere, a stop here stops all.
	res := make([]ShareResult, len(shares))
	localCtx, cancelLocal := context.WithCancel(ctx)
	defer cancelLocal()
	var haltOnce sync.Once
	halt := func() { haltOnce.Do(func() { cancelLocal(); stopPeers() }) }
	for i, p := range peers {
		if shares[i+1].empty() {
			continue
		}
		wg.Go(func() {
			r, err := p.Result(ctx, id)
			if err == nil && r.Err != "" {
				err = errors.New(r.Err)
			}
			res[i+1], errs[i+1] = r, err
			if err != nil {
				halt()
			}
		})
	}
	var localErr error
	if !shares[0].empty() {
		if err := sleepUntil(localCtx, at); err == nil {
			released := time.Now()
			res[0], localErr = runShare(localCtx, st, shares[0], hooks)
			res[0].Released = released
		} else {
			localErr = err
		}
		if res[0].Stopped || localErr != nil {
			halt()
		}
	}
	wg.Wait()
	if err := lost(errs); err != nil {
		return load.TrialResult{}, spread{}, err
	}
	if localErr != nil && ctx.Err() != nil {
		return load.TrialResult{}, spread{}, localErr
	}
	merged := merge(shares, res, offsets, nWarmup)
	out := spread{pods: f.spreadOf(shares, res, offsets, rtts)}
	for _, r := range res[1:] {
		out.cpu = append(out.cpu, r.CPU)
	}
	return merged, out, localErr
}

// busiest is the CPU figures nearest their limits among this generator's (own) and the
// other pods' over their shares: the client-bound check reads the most starved pod.
func busiest(own *results.ClientCPU, pods []*results.ClientCPU) *results.ClientCPU {
	nearness := func(c *results.ClientCPU) float64 {
		if c == nil {
			return -1
		}
		n := 0.0
		if c.BusyLimitPercent > 0 {
			n = c.BusyPercent / c.BusyLimitPercent
		}
		if t := c.Throttling; t != nil && t.LimitPercent > 0 {
			n = max(n, t.ThrottledPercent/t.LimitPercent)
		}
		return n
	}
	out := own
	for _, c := range pods {
		if nearness(c) > nearness(out) {
			out = c
		}
	}
	return out
}

// lost is the first peer's error as a *PeerLostError, nil when every peer answered.
func lost(errs []error) error {
	for i, err := range errs {
		if err != nil {
			return &PeerLostError{Pod: i, Err: err}
		}
	}
	return nil
}

func sleepUntil(ctx context.Context, at time.Time) error {
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// merge turns every generator's records into one trial on this generator's clock: each
// peer's times shifted by its clock's offset, each record given its place among the whole
// trial's prompts (a users trial: its users and conversations numbered after the lower
// pods', its requests in the order they were sent), warmups first.
func merge(shares []Share, res []ShareResult, offsets []time.Duration, nWarmup int) load.TrialResult {
	var out load.TrialResult
	users, conversations := 0, 0
	var recs []load.RequestResult
	for p, r := range res {
		s := shares[p]
		if s.empty() {
			continue
		}
		shift := func(t time.Time) time.Time {
			if t.IsZero() {
				return t
			}
			return t.Round(0).Add(-offsets[p])
		}
		lastConversation := 0
		for _, rec := range r.Requests {
			rec.Pod = p
			shiftTimes(&rec, shift)
			switch {
			case s.Users != nil:
				lastConversation = max(lastConversation, rec.Conversation)
				rec.User += users
				rec.Conversation += conversations
			case rec.Warmup:
				rec.Index = s.warmup[rec.Index]
			default:
				rec.Index = nWarmup + s.measured[rec.Index-len(s.warmup)]
			}
			recs = append(recs, rec)
		}
		if s.Users != nil {
			users += s.Users.Users
			conversations += lastConversation
		}
		out.Stopped = out.Stopped || r.Stopped
		out.Unsent += r.Unsent
		if ms := shift(r.MeasuredStart); !ms.IsZero() && (out.MeasuredStart.IsZero() || ms.Before(out.MeasuredStart)) {
			out.MeasuredStart = ms
		}
		if me := shift(r.MeasuredEnd); me.After(out.MeasuredEnd) {
			out.MeasuredEnd = me
		}
	}
	if usersShares(shares) {
		// Warmups first, then measured requests, each in the order they were sent.
		sort.SliceStable(recs, func(i, j int) bool {
			if recs[i].Warmup != recs[j].Warmup {
				return recs[i].Warmup
			}
			return recs[i].Sent.Before(recs[j].Sent)
		})
		for i := range recs {
			recs[i].Index = i
		}
	} else {
		sort.SliceStable(recs, func(i, j int) bool { return recs[i].Index < recs[j].Index })
	}
	out.Requests = recs
	return out
}

// recordTimes are the places of a load.RequestResult's instants (every time.Time field:
// each one a reading of the generator's own clock, which the merge moves onto pod 0's).
var recordTimes = func() []int {
	var out []int
	t := reflect.TypeFor[load.RequestResult]()
	for i := range t.NumField() {
		if t.Field(i).Type == reflect.TypeFor[time.Time]() {
			out = append(out, i)
		}
	}
	return out
}()

// shiftTimes applies shift to every instant of rec.
func shiftTimes(rec *load.RequestResult, shift func(time.Time) time.Time) {
	v := reflect.ValueOf(rec).Elem()
	for _, i := range recordTimes {
		f := v.Field(i).Addr().Interface().(*time.Time)
		*f = shift(*f)
	}
}

func usersShares(shares []Share) bool {
	for _, s := range shares {
		if s.Users != nil {
			return true
		}
	}
	return false
}

// spreadOf is what the document records of how a trial was spread.
func (f *fleet) spreadOf(shares []Share, res []ShareResult, offsets, rtts []time.Duration) *results.PodsTrial {
	pt := &results.PodsTrial{Pods: len(shares), Shares: make([]results.PodShare, len(shares))}
	var first, last time.Time
	for p, s := range shares {
		sh := results.PodShare{Pod: p, ClockOffsetMs: ms(offsets[p])}
		switch {
		case s.Closed != nil:
			sh.Concurrency, sh.WarmupRequests, sh.MeasuredRequests = s.Closed.Concurrency, len(s.Closed.Warmup), len(s.Closed.Measured)
		case s.Open != nil:
			sh.WarmupRequests, sh.MeasuredRequests = len(s.Open.Warmup), len(s.Open.Measured)
		case s.Users != nil:
			sh.Users, sh.WarmupRequests, sh.MeasuredRequests = s.Users.Users, s.Users.Users*s.Users.WarmupConversations, s.Users.Measured
		}
		pt.Shares[p] = sh
		pt.ClockUncertaintyMs = math.Max(pt.ClockUncertaintyMs, ms(rtts[p]/2))
		if s.empty() || res[p].Released.IsZero() {
			continue
		}
		released := res[p].Released.Round(0).Add(-offsets[p])
		if first.IsZero() || released.Before(first) {
			first = released
		}
		if released.After(last) {
			last = released
		}
	}
	pt.StartSkewMs = ms(last.Sub(first))
	return pt
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// Worker carries shares of trials for the generator that runs the search: the runner pods
// of a fleet other than pod 0 (runner serve), or a test's peers in process. It holds one
// share at a time; a share of a new trial ends an older one, which its coordinator has given
// up on.
type Worker struct {
	cfg Config

	mu      sync.Mutex
	clients map[string]*load.Client
	cur     *workerShare
}

type workerShare struct {
	id      string
	share   Share
	client  *load.Client
	cancel  context.CancelFunc // nil before Release
	stopped bool               // Stop was asked
	done    chan struct{}
	res     ShareResult
}

// ErrUnknownShare is a Release, Result or Stop for a trial the worker does not hold: it
// restarted since it took it, or took a later one.
var ErrUnknownShare = errors.New("no share of that trial here: the runner restarted or took a later trial")

// NewWorker makes a worker that sends to cfg's endpoint with cfg's credentials and bounds.
func NewWorker(cfg Config) *Worker {
	return &Worker{cfg: cfg, clients: map[string]*load.Client{}}
}

func (w *Worker) client(extra map[string]any) (*load.Client, error) {
	raw, _ := json.Marshal(extra) // plain values from JSON; cannot fail
	if c, ok := w.clients[string(raw)]; ok {
		return c, nil
	}
	c, err := loadClient(w.cfg, extra)
	if err != nil {
		return nil, err
	}
	w.clients[string(raw)] = c
	return c, nil
}

// Prepare takes the share of trial id and answers with this generator's clock.
func (w *Worker) Prepare(_ context.Context, id string, s Share) (time.Time, error) {
	kinds := 0
	for _, set := range []bool{s.Closed != nil, s.Open != nil, s.Users != nil} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return time.Time{}, fmt.Errorf("a share is one closed-loop, open-loop or users share, got %d", kinds)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	c, err := w.client(s.ExtraBody)
	if err != nil {
		return time.Time{}, err
	}
	switch old := w.cur; {
	case old == nil:
	case old.cancel != nil:
		old.cancel() // its goroutine ends it
	default:
		close(old.done) // never released: nothing runs it
	}
	w.cur = &workerShare{id: id, share: s, client: c, done: make(chan struct{})}
	return time.Now(), nil
}

func (w *Worker) held(id string) (*workerShare, error) {
	if w.cur == nil || w.cur.id != id {
		return nil, ErrUnknownShare
	}
	return w.cur, nil
}

// Release sends the share from at (this generator's clock) on.
func (w *Worker) Release(_ context.Context, id string, at time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	ws, err := w.held(id)
	if err != nil {
		return err
	}
	if ws.cancel != nil {
		return nil // released already
	}
	ctx, cancel := context.WithCancel(context.Background())
	ws.cancel = cancel
	stopped := ws.stopped
	go func() {
		defer close(ws.done)
		defer cancel()
		if stopped || sleepUntil(ctx, at) != nil {
			return
		}
		released, cpuStart := time.Now(), sampleCPU()
		r, err := runShare(ctx, ws.client, ws.share, shareHooks{})
		r.Released, r.CPU = released, clientCPU(cpuStart, sampleCPU())
		w.mu.Lock()
		if err != nil && !ws.stopped {
			r.Err = err.Error()
		}
		ws.res = r
		w.mu.Unlock()
	}()
	return nil
}

// Result waits for the share's end.
func (w *Worker) Result(ctx context.Context, id string) (ShareResult, error) {
	w.mu.Lock()
	ws, err := w.held(id)
	w.mu.Unlock()
	if err != nil {
		return ShareResult{}, err
	}
	select {
	case <-ws.done:
	case <-ctx.Done():
		return ShareResult{}, ctx.Err()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return ws.res, nil
}

// Stop ends the share now.
func (w *Worker) Stop(_ context.Context, id string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	ws, err := w.held(id)
	if err != nil {
		return err
	}
	ws.stopped = true
	if ws.cancel != nil {
		ws.cancel()
	}
	return nil
}

// Close ends whatever share the worker holds.
func (w *Worker) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cur != nil && w.cur.cancel != nil {
		w.cur.cancel()
	}
}

// sendClosed sends a closed-loop trial: from here, or split over the fleet.
func (s *session) sendClosed(ctx context.Context, spec load.TrialSpec) (load.TrialResult, spread, error) {
	if s.fleet == nil {
		res, err := load.RunTrial(ctx, s.client, spec)
		return res, spread{}, err
	}
	return s.fleet.send(ctx, s.client, splitClosed(spec, s.fleet.pods),
		shareHooks{observe: spec.Observe, tick: spec.Tick, beforeMeasured: spec.BeforeMeasured}, len(spec.Warmup))
}

// sendUsers sends a users trial: from here, or split over the fleet.
func (s *session) sendUsers(ctx context.Context, spec load.UsersSpec, pools usersPools, maxTokens int) (load.TrialResult, spread, error) {
	if s.fleet == nil {
		res, err := load.RunUsers(ctx, s.client, spec)
		return res, spread{}, err
	}
	return s.fleet.send(ctx, s.client, splitUsers(spec, pools, maxTokens, s.fleet.pods), shareHooks{observe: spec.Observe}, 0)
}
