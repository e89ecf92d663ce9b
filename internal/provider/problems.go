package provider

import (
	"cmp"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
)

// The titles of problems that carry none, one per resource: a setting is invalid under the
// same title at plan and at apply.
const (
	serverProblem     = "Invalid inference server setting"
	deploymentProblem = "Invalid inference deployment setting"
	benchmarkProblem  = "Invalid capacity benchmark setting"
	dockerProblem     = "Invalid Docker Engine connection setting"
)

// problemDiagnostics maps the domain's problems onto diagnostics; every resource goes through
// it. summary titles the problems without a title of their own. A problem about a setting
// within unknown, or reading one, is left out: it is judged once the value is known.
// Warnings are reported only with withWarnings: at apply they were already shown at plan.
func problemDiagnostics(problems []problem.Problem, summary string, unknown []attrpath.Path, withWarnings bool) diag.Diagnostics {
	var diags diag.Diagnostics
	for _, p := range problems {
		if readsUnknown(p, unknown) || (p.Warning && !withWarnings) {
			continue
		}
		title, detail := cmp.Or(p.Summary, summary), sentence(p.Detail)
		switch {
		case len(p.Path) == 0 && p.Warning: // about the whole run, no one setting
			diags.AddWarning(title, detail)
		case len(p.Path) == 0:
			diags.AddError(title, detail)
		case p.Warning:
			diags.AddAttributeWarning(attributePath(p.Path), title, detail)
		default:
			diags.AddAttributeError(attributePath(p.Path), title, detail)
		}
	}
	return diags
}

func readsUnknown(p problem.Problem, unknown []attrpath.Path) bool {
	for _, u := range unknown {
		for _, read := range append([]attrpath.Path{p.Path}, p.Reads...) {
			if read.Within(u) || u.Within(read) {
				return true
			}
		}
	}
	return false
}

// sentence ends a message with a full stop unless it already ends a sentence.
func sentence(s string) string {
	if s == "" || strings.ContainsAny(s[len(s)-1:], ".!?") {
		return s
	}
	return s + "."
}
