// Package problem is the one shape every domain package reports a setting to fix in: the
// setting's path as the user writes it, what is wrong and what to do. The Terraform glue
// maps problems onto diagnostics with one function, so the same problem reads the same at
// plan and at apply.
package problem

import (
	"fmt"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
)

// Problem is one thing wrong with a configuration, or, as a warning, one valid value that
// is almost certainly not what was meant.
type Problem struct {
	Path    attrpath.Path // the setting to fix; empty for the run as a whole
	Summary string        // a short title; empty leaves the title to the caller's default
	Detail  string        // names the setting, what is wrong and what to do
	Warning bool
	// Reads are the other settings the rule compared Path with (input_tokens for a shared
	// prefix): a caller that does not know one of them yet cannot judge the rule.
	Reads []attrpath.Path
}

// At is an error at path, its detail formatted after the path ("speculative.draft_tokens:
// must be at least 2").
func At(path attrpath.Path, format string, args ...any) Problem {
	return Problem{Path: path, Detail: path.String() + ": " + fmt.Sprintf(format, args...)}
}

// Error is the detail, which names the setting.
func (p Problem) Error() string { return p.Detail }
