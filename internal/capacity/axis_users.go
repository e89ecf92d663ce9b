package capacity

// The users axis: virtual users holding multi-turn conversations with think time, each
// turn sending the whole history back (load.RunUsers), searched over the number of users
// with the concurrency search's rules. It is the closed loop in users: concurrencyAxis's
// search, bounds and progress, with its own load, prompts and place in the document.

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/metrics"
	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
	"github.com/llmserve/terraform-provider-llmserve/internal/records"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/search"
)

type usersAxis struct{ concurrencyAxis }

func (usersAxis) pattern() string {
	return "closed-loop users in multi-turn conversations with think time"
}

// measure runs the concurrency search over users and states the boundary in users.
func (a usersAxis) measure(ctx context.Context, r *trialRunner) (results.Workload, error) {
	s, w := r.s, r.w
	if v, ok := s.flush.RequestFields["cache_prompt"]; ok && v == false {
		return results.Workload{}, errors.New(llamaCppFlushWithConversations("the cache flush (" + s.flush.Policy() + ")"))
	}
	if err := fitsContext(w, r.index, s.info.MaxContext); err != nil {
		return results.Workload{}, err
	}
	res, out, err := a.search(ctx, r)
	if err != nil {
		return results.Workload{}, err
	}
	out.MaximumPassingUsers, out.FirstFailingUsers = res.MaximumPassing, res.FirstFailing
	for i := range out.AllTrials {
		out.AllTrials[i].Concurrency = 0 // the search's level; the trial's users say what it held
	}
	if err := s.applyHeadline(&out); err != nil {
		return results.Workload{}, err
	}
	closedLoopNotes(&out, res, len(a.levels) > 0, func(level int) string { return fmt.Sprintf("%d users", level) })
	return out, nil
}

// llamaCppFlushWithConversations is why llama.cpp's flush, chosen as chosen says, and a
// conversation cannot go together, and what to set instead: plan says it for an explicit
// cache_flush = "llamacpp", the run for one "auto" picked once the server said what it is.
func llamaCppFlushWithConversations(chosen string) string {
	return fmt.Sprintf("%s turns llama.cpp's prompt cache off on every request, which is how its cache is flushed, and a conversation needs that cache: its later turns "+
		"send their history back for it to serve. Set trial.cache_flush = \"none\": conversations are unique, so what an earlier trial left in the cache "+
		"can serve a turn nothing beyond the shared system prompt, and each trial's warm-cache proof counts any turn it did", chosen)
}

// fitsContext refuses a conversation whose last turn cannot fit the server's context per
// request (maxContext; 0: the server did not say): the system prompt, every turn's message
// and answer before it, its own message and the answer it asks for. The chat template's
// tokens come on top, so a conversation that fits here may still be refused by the server
// by a few tokens per message.
func fitsContext(w Workload, index int, maxContext int) error {
	c := w.Conversation
	last := c.SystemPromptTokens + c.Turns*(w.InputTokens+w.OutputTokens)
	if maxContext <= 0 || last <= maxContext {
		return nil
	}
	fit := (maxContext - c.SystemPromptTokens) / (w.InputTokens + w.OutputTokens)
	return fmt.Errorf("workload %q: a conversation's last turn needs %d tokens (system prompt %d, then %d turns of %d in and %d out), more than the %d tokens "+
		"the server gives one request: set workloads[%d].conversation.turns to %d or fewer, shorten input_tokens or output_tokens, or raise the server's context length",
		w.Label, last, c.SystemPromptTokens, c.Turns, w.InputTokens, w.OutputTokens, maxContext, index, max(fit, 0))
}

func (usersAxis) where(at trialAt) string { return fmt.Sprintf("%d users", at.Level) }

func (usersAxis) stream(workload string, at trialAt) string {
	return fmt.Sprintf("%s users=%d %s t=%d", workload, at.Level, at.kindName(), at.Index)
}

// prompts fits the shared system prompt and measures the calibration; a trial's messages
// are fitted in drive, which knows how many users it holds.
func (usersAxis) prompts(ctx context.Context, s *session, w Workload, stream string) (trialPhases, error) {
	var out trialPhases
	_, cal, err := s.prompts.Prompts(ctx, stream+" calibration", 1, w.InputTokens)
	if err != nil {
		return out, err
	}
	out.measured.calibration = cal
	if n := w.Conversation.SystemPromptTokens; n > 0 {
		sys, _, err := s.prompts.Prompts(ctx, w.Label+" system prompt", 1, n)
		if err != nil {
			return out, fmt.Errorf("system prompt: %w", err)
		}
		out.warmup.texts = sys
	}
	return out, nil
}

// drive holds at.Level users in conversations until the trial's measured turns were sent:
// each user's first WarmupConversations conversations warm the cache up, then its turns
// count. Messages are fitted before the load starts, unique per trial: a warmup
// conversation takes its turns from the warmup pool, a measured one from the measured pool,
// each pool large enough for every conversation the trial can start.
func (a usersAxis) drive(ctx context.Context, r *trialRunner, at trialAt, p trialPhases, _ func()) (driven, error) {
	w, conv := r.w, r.w.Conversation
	stream := a.stream(w.Label, at)
	pool := func(name string, conversations int) ([]string, error) {
		if conversations == 0 {
			return nil, nil
		}
		texts, _, err := r.s.prompts.Prompts(ctx, stream+" "+name, conversations*conv.Turns, w.InputTokens)
		return texts, err
	}
	var out driven
	warm, err := pool("warmup", at.Level*conv.WarmupConversations)
	if err != nil {
		return out, fmt.Errorf("warmup messages: %w", err)
	}
	// Every measured conversation sends at least one measured turn, except the one each
	// user may start when the trial has all it measures.
	measured, err := pool("measured", r.s.cfg.MeasuredRequests+at.Level)
	if err != nil {
		return out, fmt.Errorf("measured messages: %w", err)
	}
	system := ""
	if len(p.warmup.texts) > 0 {
		system = p.warmup.texts[0]
	}
	next := conversationSource(system, warm, measured, conv.Turns, conv.WarmupConversations, w.OutputTokens)
	h := fnv.New64a()
	h.Write([]byte(stream))
	spec := load.UsersSpec{Users: at.Level, Next: next, WarmupConversations: conv.WarmupConversations,
		Measured: r.s.cfg.MeasuredRequests, Think: conv.Think, Seed: uint64(r.s.cfg.Seed) ^ h.Sum64()}
	if at.Kind == search.Probe {
		if out.stop, err = newProbeStop(r.s.slos(), r.s.cfg.MeasuredRequests, nil); err != nil {
			return out, err
		}
		spec.Observe = out.stop.observe
	}
	res, spread, err := r.s.sendUsers(ctx, spec, usersPools{system: system, warm: warm, measured: measured, turns: conv.Turns}, w.OutputTokens)
	out.res, out.measuredEnd, out.window, out.pods, out.podCPU = res, res.MeasuredEnd, res.Measured(), spread.pods, spread.cpu
	out.lowest = at.Level == a.min && !at.Comparison
	own, shared := a.cacheShape(w)
	c := metrics.Conversations(res.Requests, own, int(math.Ceil(p.measured.calibration.TemplateOverheadTokens))+shared)
	out.conversations = &c
	return out, err
}

func (usersAxis) place(t *results.Trial, _ Workload, at trialAt) { t.Users = at.Level }

// cacheShape: a turn's own tokens are its new message; what it shares is the system prompt
// (the cold-cache check also allows whatever lies before the message, its history).
func (usersAxis) cacheShape(w Workload) (own, shared int) {
	return w.InputTokens, w.Conversation.SystemPromptTokens
}

func (usersAxis) recordsFile(index int, w Workload, at trialAt) (string, records.Trial) {
	return records.FileName(index, w.Label, at.kindName(), at.Level, at.Index), records.Trial{Workload: w.Label, Concurrency: at.Level, Index: at.Index}
}

func (usersAxis) progressAt(e JournalEntry) string { return fmt.Sprintf("users=%d", e.Concurrency) }

// conversations checks conversation workloads: every workload or none, on the chat API,
// closed loop, with turns, a known think-time distribution and warmup conversations.
func (v *validation) conversations(c Config) {
	n := 0
	for _, w := range c.Workloads {
		if w.Conversation != nil {
			n++
		}
	}
	if n == 0 {
		return
	}
	root := attrpath.Root("workloads")
	if n != len(c.Workloads) {
		v.fail(root, "Conversations mixed with single requests", "either every workload is a conversation or none is: a run searches one axis (users or concurrency); put the others in another benchmark")
	}
	if c.API != APIChat {
		v.fail(attrpath.Root("api"), "Conversations need the chat API", "a conversation sends its history as chat messages; set api = %q, got %q", APIChat, c.API)
	}
	if c.CacheFlush == engine.FlushLlamaCpp {
		// cache_flush = "auto" picks the same method once the server says it is llama.cpp,
		// which only apply can know: measure refuses it then, with this message.
		v.add(problem.Problem{Path: attrpath.Root("trial").At("cache_flush"), Summary: "Conversations need the prefix cache", Reads: []attrpath.Path{root},
			Detail: llamaCppFlushWithConversations(`trial.cache_flush = "llamacpp"`)})
	}
	if c.OpenLoop != nil {
		v.fail(attrpath.Root("search"), "Conversations are a closed loop in users", "search a rate or a replay with single requests; conversations search users (search.min_concurrency and search.max_concurrency count users)")
	}
	for i, w := range c.Workloads {
		cv := w.Conversation
		if cv == nil {
			continue
		}
		p := root.Index(i).At("conversation")
		if w.InputTokensStddev != 0 || w.OutputTokensStddev != 0 || w.SharedPrefixTokens != 0 || w.TraceFile != "" {
			v.fail(p, "Conversations have fixed lengths", "a conversation's turns are input_tokens new and output_tokens out each, its shared part the system prompt: "+
				"leave input_tokens_stddev, output_tokens_stddev, shared_prefix_tokens and trace unset (use conversation.system_prompt_tokens)")
		}
		v.between(p.At("turns"), cv.Turns, 1, MaxRequests)
		v.between(p.At("system_prompt_tokens"), cv.SystemPromptTokens, 0, MaxTokens)
		v.between(p.At("warmup_conversations"), cv.WarmupConversations, 1, MaxRequests)
		if err := cv.Think.Validate(); err != nil {
			v.fail(p.At("think_time"), "Invalid think time", "%v: give a distribution (%q or %q) and a mean of 0 or more", err, load.ThinkConstant, load.ThinkExponential)
		}
	}
}

func (usersAxis) loadStep() trialStep { return stepUsers }
