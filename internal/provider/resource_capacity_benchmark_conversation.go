package provider

// A workload's conversation: virtual users holding multi-turn chats with think time
// (capacity's users axis).

import (
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
	"github.com/llmserve/terraform-provider-llmserve/internal/load"
)

// conversationAttribute is a workload's `conversation`. The names follow the peers' where
// they have one (AIPerf's conversation turns and turn delay; "think time" is the queueing
// term for the pause of a user between an answer and the next request).
func conversationAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Optional: true,
		MarkdownDescription: "Make the workload multi-turn conversations held by virtual users, and search the number of users " +
			"(`maximum_passing_users`) instead of requests in flight. Each turn sends the system prompt, every earlier user message and " +
			"the text the server actually returned, then a new message of `input_tokens`, and asks for `output_tokens`; after " +
			"`think_time` the user sends the next turn, and a finished conversation is followed by a new one for the same user. " +
			"The search's `min_concurrency`, `max_concurrency` and `concurrency_levels` then count users; `trial.measured_requests` " +
			"counts measured turns. Every workload of a benchmark or none; needs `api = \"chat\"`; no spreads or `shared_prefix_tokens` " +
			"(use `system_prompt_tokens`). The cache is flushed before every trial as always; later turns are expected to hit it, and a " +
			"turn that found more cached than its own conversation holds is reported as a measurement fault.",
		Attributes: map[string]schema.Attribute{
			"turns": schema.Int64Attribute{
				Required:            true,
				MarkdownDescription: "User messages per conversation, 1 or more.",
			},
			"system_prompt_tokens": schema.Int64Attribute{
				Optional:            true,
				MarkdownDescription: "A system prompt of this many tokens that every conversation shares (served from the prefix cache after its first use in a trial). Default 0: none.",
			},
			"warmup_conversations": schema.Int64Attribute{
				Optional: true,
				MarkdownDescription: "Conversations each user holds before its turns are measured, so the cache holds histories and the " +
					"users' phases settle. Default 1.",
			},
			"think_time": schema.SingleNestedAttribute{
				Required:            true,
				MarkdownDescription: "The pause between an answer and the user's next message (and between conversations).",
				Attributes: map[string]schema.Attribute{
					"distribution": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "`exponential` (default: users who pause at random, a Poisson user) or `constant` (every pause lasts the mean).",
					},
					"mean": schema.StringAttribute{
						CustomType:          durationType{},
						Required:            true,
						MarkdownDescription: "The mean pause, a Go duration such as `10s`; `0s` for users who answer at once.",
					},
				},
			},
		},
	}
}

// conversation reads a workload's `conversation` into w.
func (r *valueReader) conversation(p attrpath.Path, v attr.Value, w *capacity.Workload) {
	f := r.fields(p, v)
	if f == nil {
		return
	}
	c := &capacity.Conversation{
		Turns:               r.int(p.At("turns"), f["turns"], 0),
		SystemPromptTokens:  r.int(p.At("system_prompt_tokens"), f["system_prompt_tokens"], 0),
		WarmupConversations: r.int(p.At("warmup_conversations"), f["warmup_conversations"], 1),
		Think:               load.Think{Distribution: load.ThinkExponential},
	}
	think := p.At("think_time")
	if tf := r.fields(think, f["think_time"]); tf != nil {
		c.Think.Distribution = r.str(think.At("distribution"), tf["distribution"], load.ThinkExponential)
		c.Think.Mean = r.duration(think.At("mean"), tf["mean"], 0)
	}
	w.Conversation = c
}
