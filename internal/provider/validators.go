package provider

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	"github.com/llmserve/terraform-provider-llmserve/internal/localfile"
)

// A rule is one plan-time check of a known value: what it accepts (for the docs and
// `terraform validate`) and, for a value it refuses, the diagnostic's summary and detail
// ("" when the value is fine). stringRule and float64Rule turn a rule into the framework's
// validator, so the skeleton is written once: null and unknown values are left alone (apply
// checks them once known) and the Markdown description is the plain one. Each validator below
// is an alias, so a schema writes printableValidator{} as for any other validator type.
type rule[T any] interface {
	description() string
	check(p path.Path, v T) (summary, detail string)
}

type stringRule[R rule[string]] struct{ rule R }

func (v stringRule[R]) Description(context.Context) string         { return v.rule.description() }
func (v stringRule[R]) MarkdownDescription(context.Context) string { return v.rule.description() }

func (v stringRule[R]) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if summary, detail := v.rule.check(req.Path, req.ConfigValue.ValueString()); summary != "" {
		resp.Diagnostics.AddAttributeError(req.Path, summary, detail)
	}
}

type float64Rule[R rule[float64]] struct{ rule R }

func (v float64Rule[R]) Description(context.Context) string         { return v.rule.description() }
func (v float64Rule[R]) MarkdownDescription(context.Context) string { return v.rule.description() }

func (v float64Rule[R]) ValidateFloat64(_ context.Context, req validator.Float64Request, resp *validator.Float64Response) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if summary, detail := v.rule.check(req.Path, req.ConfigValue.ValueFloat64()); summary != "" {
		resp.Diagnostics.AddAttributeError(req.Path, summary, detail)
	}
}

// fractionValidator accepts (0, 1]: a share of accelerator memory.
type fractionValidator = float64Rule[fractionRule]
type fractionRule struct{}

func (fractionRule) description() string { return "must be greater than 0 and at most 1" }
func (fractionRule) check(p path.Path, v float64) (string, string) {
	if v <= 0 || v > 1 {
		return "Fraction out of range", fmt.Sprintf("%s must be greater than 0 and at most 1, got %g; give a share such as 0.85, or omit it for the engine's default.", p, v)
	}
	return "", ""
}

// printableValidator refuses control characters (C0, DEL, C1): they would reach a
// container's command line or environment, and plan output on a terminal, where an escape
// sequence can rewrite what the operator sees.
type printableValidator = stringRule[printableRule]
type printableRule struct{}

func (printableRule) description() string { return "must not contain control characters" }
func (printableRule) check(p path.Path, s string) (string, string) {
	if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		fix := "Remove it."
		if t := strings.TrimRight(s, "\r\n"); t != s && !strings.ContainsFunc(t, unicode.IsControl) {
			fix = "It is a trailing line break, as file() reads one: use trimspace(file(...))."
		}
		return "Control character in value", fmt.Sprintf("%s contains the control character %U at byte %d; control characters reach containers and terminals (an escape sequence can rewrite what a terminal shows). %s", p, r, i, fix)
	}
	return "", ""
}

// pemTextValidator is printableValidator for PEM and other multi-line text (certificates,
// private keys): line breaks and tabs are part of it, every other control character is
// refused.
type pemTextValidator = stringRule[pemTextRule]
type pemTextRule struct{}

func (pemTextRule) description() string {
	return "must not contain control characters other than line breaks and tabs"
}
func (pemTextRule) check(p path.Path, s string) (string, string) {
	if i := strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\r' && r != '\t' }); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return "Control character in value", fmt.Sprintf("%s contains the control character %U at byte %d; only line breaks and tabs belong in PEM text. Remove it.", p, r, i)
	}
	return "", ""
}

// ipAddressValidator demands an IP literal. A host name is resolved by the engine host,
// which publishes the port on every address it resolves to: "localhost" would publish on
// 0.0.0.0 and [::] while state said 127.0.0.1.
type ipAddressValidator = stringRule[ipAddressRule]
type ipAddressRule struct{}

func (ipAddressRule) description() string {
	return "must be an IP address such as 127.0.0.1 or 0.0.0.0"
}
func (ipAddressRule) check(p path.Path, s string) (string, string) {
	if net.ParseIP(s) == nil {
		return "Not an IP address", fmt.Sprintf("%s must be an IP address literal, got %q. A host name is resolved by the engine host, which would publish the port on every address it resolves to (for \"localhost\" on all interfaces) while state said otherwise. Use \"127.0.0.1\" for this host only or \"0.0.0.0\" for every interface.", p, s)
	}
	return "", ""
}

// progressFileValidator refuses a path that could never be the journal: empty (omit the
// attribute instead) or an existing directory. Whether it can be written is found at apply.
type progressFileValidator = stringRule[progressFileRule]
type progressFileRule struct{}

func (progressFileRule) description() string {
	return "must be a file path, not empty and not a directory"
}
func (progressFileRule) check(p path.Path, s string) (string, string) {
	example, none := "capacity.progress.jsonl", "keep no journal"
	if strings.HasSuffix(p.String(), "progress_log") {
		example, none = "capacity.progress.log", "write no progress log"
	}
	if strings.TrimSpace(s) == "" {
		return "Empty progress file path", fmt.Sprintf("%s is empty; give a file path such as %q, or omit it to %s.", p, example, none)
	}
	if fi, err := os.Stat(s); err == nil && fi.IsDir() {
		return "Progress file is a directory", fmt.Sprintf("%s %q is a directory; give a file path inside it, e.g. %q.", p, s, filepath.Join(s, example))
	}
	return "", ""
}

// recordsDirectoryValidator refuses a records_directory that could never hold the records:
// an existing file, or a path below a file, which the first trial would only find after it
// was measured. Permissions are found at apply, as for progress_file.
type recordsDirectoryValidator = stringRule[recordsDirectoryRule]
type recordsDirectoryRule struct{}

func (recordsDirectoryRule) description() string {
	return "must be a directory path: not an existing file, and not below one"
}
func (recordsDirectoryRule) check(p path.Path, s string) (string, string) {
	if s == "" {
		return "", "" // the length validator says it
	}
	fi, err := os.Stat(s)
	if err == nil {
		if !fi.IsDir() {
			return "Records directory is a file", fmt.Sprintf("%s %q is an existing file, not a directory; give a directory path (created when missing), e.g. %q.", p, s, strings.TrimSuffix(s, filepath.Ext(s))+"-records")
		}
		return "", ""
	}
	// The nearest part of the path that exists decides whether the rest can be created.
	for dir := filepath.Dir(filepath.Clean(s)); ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		switch {
		case err == nil && !fi.IsDir():
			return "Records directory cannot be created", fmt.Sprintf("%s %q cannot be created: %q is a file, not a directory. Give a path whose parents are directories.", p, s, dir)
		case err == nil:
			return "", ""
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return "Records directory cannot be created", fmt.Sprintf("%s %q cannot be created: %v.", p, s, err)
		}
		if parent := filepath.Dir(dir); parent == dir {
			return "", ""
		}
	}
}

// nonEmptyString rejects "" so that an empty file() or variable is caught at plan time with
// a clear message instead of as a JSON syntax error.
type nonEmptyString = stringRule[nonEmptyRule]
type nonEmptyRule struct{}

func (nonEmptyRule) description() string { return "must not be empty" }
func (nonEmptyRule) check(p path.Path, s string) (string, string) {
	if s == "" {
		return "Empty value", p.String() + " is empty; leave it out or give a results document."
	}
	return "", ""
}

// durationValidator accepts positive Go durations ("90s", "30m"): zero or a negative bound
// would end the operation at once. On a durationType attribute it never sees a value
// that does not parse: the framework stops at the type's own error, so one bad value gets one
// error either way.
type durationValidator = stringRule[durationRule]
type durationRule struct{}

func (durationRule) description() string { return "a positive Go duration such as 90s or 30m" }
func (durationRule) check(p path.Path, s string) (string, string) {
	if d, err := time.ParseDuration(s); err != nil || d <= 0 {
		return "Invalid duration", fmt.Sprintf("%s must be a positive Go duration such as \"90s\" or \"30m\", got %q", p, s)
	}
	return "", ""
}

// intRange accepts min ≤ v ≤ max and says what to do otherwise. hint is the fix for a value
// below min (e.g. "omit it for the engine's default"); the upper bound is documented on the
// attribute, so its message points there.
type intRange struct {
	min, max int64
	hint     string
}

func (v intRange) Description(context.Context) string {
	if v.max == 0 {
		return fmt.Sprintf("must be at least %d", v.min)
	}
	return fmt.Sprintf("must be between %d and %d", v.min, v.max)
}
func (v intRange) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v intRange) ValidateInt64(_ context.Context, req validator.Int64Request, resp *validator.Int64Response) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	got := req.ConfigValue.ValueInt64()
	switch {
	case got < v.min:
		detail := fmt.Sprintf("%s must be at least %d, got %d.", req.Path, v.min, got)
		if v.hint != "" {
			detail += " " + v.hint
		}
		resp.Diagnostics.AddAttributeError(req.Path, "Value too small", detail)
	case v.max != 0 && got > v.max:
		resp.Diagnostics.AddAttributeError(req.Path, "Value too large",
			fmt.Sprintf("%s must be at most %d, got %d. The bound keeps a run's memory and time finite; no real server needs more.", req.Path, v.max, got))
	}
}

// positiveTimeouts is timeouts.Attributes with every duration required to be positive: the
// package accepts "0s" and "-5m", which would fail the operation at once with a bare
// "context deadline exceeded". durationValidator replaces the package's own syntax check
// rather than joining it, so a value that does not parse is one error, and one that names
// the attribute (Terraform points only at the resource for a value inside timeouts = {...}).
func positiveTimeouts(ctx context.Context, opts timeouts.Opts) schema.Attribute {
	attr := timeouts.Attributes(ctx, opts).(schema.SingleNestedAttribute)
	for name, a := range attr.Attributes {
		if s, ok := a.(schema.StringAttribute); ok {
			s.Validators = []validator.String{durationValidator{}}
			attr.Attributes[name] = s
		}
	}
	return attr
}

// fileRule states, for an attribute's docs, what a file the provider reads there may be
// (internal/localfile): the one sentence every file-bearing attribute carries.
func fileRule(k localfile.Kind) string {
	return "It must be a regular file of at most " + localfile.Size(k.MaxBytes) + " (a FIFO, device, socket or directory is refused by name before it is read)."
}
