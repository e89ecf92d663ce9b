package engine

import (
	"slices"
	"strings"
	"unicode"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
)

// secretFlags are engine flags that take a secret on the command line, which is stored in
// state (command) and shown by docker inspect.
var secretFlags = []string{"--api-key", "--admin-api-key", "--hf-token"}

// CheckStrings reports spec strings that would carry control characters into the container's
// command line (and into plan output, where escape sequences reach a terminal), and engine
// flags in extra_args that would put a secret on the command line.
func (s Spec) CheckStrings() []problem.Problem {
	var out []problem.Problem
	add := func(p attrpath.Path, format string, args ...any) {
		out = append(out, problem.At(p, format, args...))
	}
	for field, v := range map[string]string{"model": s.Model, "revision": s.Revision, "served_model_name": s.ServedModelName} {
		if strings.ContainsFunc(v, unicode.IsControl) {
			add(attrpath.Root(field), "contains control characters; use printable text")
		}
	}
	if sp := s.Speculative; sp != nil {
		for field, v := range map[string]string{"algorithm": sp.Algorithm, "draft_model": sp.DraftModel} {
			if strings.ContainsFunc(v, unicode.IsControl) {
				add(attrpath.Root("speculative").At(field), "contains control characters; use printable text")
			}
		}
	}
	for name, list := range map[string][]string{"extra_args": s.ExtraArgs, "entrypoint": s.Entrypoint} {
		for i, a := range list {
			f := attrpath.Root(name).Index(i)
			if strings.ContainsFunc(a, unicode.IsControl) {
				add(f, "contains control characters; use printable text")
			}
			if name == "entrypoint" && strings.TrimSpace(a) == "" {
				add(f, "must not be empty")
			}
			flag, _, _ := strings.Cut(a, "=")
			if name == "extra_args" && slices.Contains(secretFlags, flag) {
				add(f, "%s puts a secret on the command line, which is stored in state (command) and shown by docker inspect; remove it and set api_key_wo or hub_token_wo (write-only)", flag)
			}
		}
	}
	slices.SortFunc(out, func(a, b problem.Problem) int { return strings.Compare(a.Path.String(), b.Path.String()) })
	return out
}

// CheckSecrets reports a write-only secret the engine has no use for: only SGLang has an
// admin key (--admin-api-key, which guards /flush_cache). Given to vLLM or llama.cpp it would
// be dropped without a word, while the benchmark's admin_api_key suggested it protected
// something.
func (s Spec) CheckSecrets(sec Secrets) []problem.Problem {
	if sec.AdminAPIKey == "" || s.Engine == SGLang {
		return nil
	}
	return []problem.Problem{problem.At(attrpath.Root("admin_api_key_wo"),
		"engine %q has no admin API key (only SGLang's --admin-api-key guards its admin endpoints), so this key would be dropped; remove admin_api_key_wo, and use api_key_wo for the key %s checks", s.Engine, s.Engine)}
}
