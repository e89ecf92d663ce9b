package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// PathError is a problem with one value of a document, located by its JSON path
// (for example workloads[1].passing_trials[0].ttft_ms.p95).
type PathError struct {
	Path string
	Msg  string
}

func (e *PathError) Error() string {
	if e.Path == "" {
		return "document: " + e.Msg
	}
	return e.Path + ": " + e.Msg
}

// member is one key of an object that this version of the schema does not know.
type member struct {
	key string
	val *node
}

// extras holds, by the JSON path of the object they sit in, the keys Parse did not map onto
// a struct field, so that Marshal writes them back and newer or hand-annotated documents
// survive a pass through this provider. Positions follow array indices: a caller who
// reorders workloads or trials moves the typed values but not their unknown keys.
type extras map[string][]member

// maxErrors caps how many problems Parse reports, so a document of the wrong kind
// altogether gives a readable message instead of thousands of lines.
const maxErrors = 20

// Parse reads a schema v1 document. Every problem it finds is reported with its JSON path;
// keys it does not know are kept and written back by Marshal.
func Parse(data []byte) (*Document, error) {
	root, err := parseTree(data)
	if pe := (*PathError)(nil); errors.As(err, &pe) {
		return nil, fmt.Errorf("invalid results document: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("results document is not valid JSON: %w", err)
	}
	r := &reader{extras: extras{}}
	doc := r.document(root)
	if doc != nil && len(r.errs) == 0 {
		r.check(doc, root)
		r.checkFace(doc)
		for i, w := range doc.Workloads {
			for _, c := range CheckHeadline(doc.Objectives(), i, w) {
				r.fail(c.Path, "workload %q: %s states %s, but its trials give %s", c.Workload, c.Field, c.Stated, c.Derived)
			}
		}
	}
	if len(r.errs) > 0 {
		if len(r.errs) > maxErrors {
			more := len(r.errs) - maxErrors
			r.errs = append(r.errs[:maxErrors], fmt.Errorf("... and %d more problems", more))
		}
		return nil, fmt.Errorf("invalid results document: %w", errors.Join(r.errs...))
	}
	if len(r.extras) > 0 {
		doc.extras = r.extras
	}
	return doc, nil
}

// Marshal writes d as indented schema v1 JSON, including any unknown keys Parse kept.
// It does not modify d.
func Marshal(d *Document) ([]byte, error) {
	if d == nil {
		return nil, errors.New("cannot write a nil results document")
	}
	out := *d
	switch out.SchemaVersion {
	case 0:
		// A document built in code rarely sets the version; there is only one to write.
		out.SchemaVersion = SchemaVersion
	case SchemaVersion:
	default:
		return nil, fmt.Errorf("cannot write schema_version %d: this provider writes version %d", d.SchemaVersion, SchemaVersion)
	}
	// nil slices would be written as null, which the schema (and Parse) reject.
	out.Workloads = make([]Workload, len(d.Workloads))
	for i, w := range d.Workloads {
		if w.PassingTrials == nil {
			w.PassingTrials = []Trial{}
		}
		if w.FailingTrials == nil {
			w.FailingTrials = []Trial{}
		}
		out.Workloads[i] = w
	}
	var typed bytes.Buffer
	enc := json.NewEncoder(&typed)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&out); err != nil {
		return nil, fmt.Errorf("writing results document: %w", err)
	}
	root, err := parseTree(typed.Bytes())
	if err != nil {
		return nil, fmt.Errorf("writing results document: %w", err)
	}
	d.extras.restore("", root)
	if ct, ok := root.get("correctness_total"); ok {
		if _, has := ct.get("uniqueness_scope"); !has {
			// The reference always states the scope of its totals; the counters a trial
			// records (unique prompts and outputs) are counted within that trial.
			ct.keys = append(ct.keys, "uniqueness_scope")
			ct.vals = append(ct.vals, &node{kind: kindString, text: "within_each_trial"})
		}
	}
	if ws, ok := root.get("workloads"); ok {
		for _, w := range ws.items {
			if ts, ok := w.get("trials"); ok {
				for _, t := range ts.items {
					if _, has := t.get("stopped_early"); t.kind == kindObject && !has {
						// Every entry of a workload's trials says whether it was stopped early.
						t.keys = append(t.keys, "stopped_early")
						t.vals = append(t.vals, &node{kind: kindBool, boolean: false})
					}
				}
			}
		}
	}
	var compact bytes.Buffer
	if err := writeNode(&compact, root); err != nil {
		return nil, fmt.Errorf("writing results document: %w", err)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, compact.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("writing results document: %w", err)
	}
	indented.WriteByte('\n')
	return indented.Bytes(), nil
}

// restore puts the unknown keys back into the written tree at the paths they were read from.
func (x extras) restore(path string, n *node) {
	if len(x) == 0 {
		return
	}
	switch n.kind {
	case kindObject:
		for _, m := range x[path] {
			if _, has := n.get(m.key); !has {
				n.keys = append(n.keys, m.key)
				n.vals = append(n.vals, m.val)
			}
		}
		for i, k := range n.keys {
			x.restore(joinKey(path, k), n.vals[i])
		}
	case kindArray:
		for i, it := range n.items {
			x.restore(joinIndex(path, i), it)
		}
	}
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func joinIndex(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// reader walks the tree into the typed document, collecting every problem it meets.
type reader struct {
	errs   []error
	extras extras
}

func (r *reader) fail(path, format string, args ...any) {
	r.errs = append(r.errs, &PathError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// object is one JSON object being read; it remembers which keys were consumed so the rest
// can be kept as extras.
type object struct {
	r    *reader
	path string
	n    *node
	used map[string]bool
}

// asObject returns nil (and reports why) when n is not an object; all object methods accept
// a nil receiver so that a broken parent still lets siblings be checked.
func (r *reader) asObject(path string, n *node) *object {
	if n.kind != kindObject {
		r.fail(path, "expected object, got %s", n.kind)
		return nil
	}
	return &object{r: r, path: path, n: n, used: map[string]bool{}}
}

// field returns the value of a required key, reporting it when missing.
func (o *object) field(key string) (*node, string) {
	if o == nil {
		return nil, ""
	}
	p := joinKey(o.path, key)
	v, ok := o.n.get(key)
	if !ok {
		o.r.fail(p, "missing required key")
		return nil, p
	}
	o.used[key] = true
	return v, p
}

// optional returns the value of an optional key, or nil when it is absent. A null optional
// key is left to the extras so that it is written back as null.
func (o *object) optional(key string) (*node, string) {
	if o == nil {
		return nil, ""
	}
	v, ok := o.n.get(key)
	if !ok || v.kind == kindNull {
		return nil, ""
	}
	o.used[key] = true
	return v, joinKey(o.path, key)
}

// keepAsWritten hands a present optional key whose value is the Go zero value (which the
// typed writer omits) to the extras, so it is written back exactly as it was read.
func (o *object) keepAsWritten(key string) {
	if o != nil {
		delete(o.used, key)
	}
}

// finish records the keys nobody asked for.
func (o *object) finish() {
	if o == nil {
		return
	}
	var rest []member
	seen := map[string]bool{}
	for _, k := range o.n.keys {
		if o.used[k] || seen[k] {
			continue
		}
		seen[k] = true
		v, _ := o.n.get(k)
		rest = append(rest, member{key: k, val: v})
	}
	if len(rest) > 0 {
		o.r.extras[o.path] = rest
	}
}

func (o *object) child(key string) *object {
	v, p := o.field(key)
	if v == nil {
		return nil
	}
	return o.r.asObject(p, v)
}

func (o *object) str(key string) string {
	v, p := o.field(key)
	return o.r.str(p, v)
}

func (o *object) boolean(key string) bool {
	v, p := o.field(key)
	if v == nil {
		return false
	}
	if v.kind != kindBool {
		o.r.fail(p, "expected boolean, got %s", v.kind)
		return false
	}
	return v.boolean
}

func (o *object) num(key string) float64 {
	v, p := o.field(key)
	return o.r.num(p, v)
}

func (o *object) integer(key string) int {
	v, p := o.field(key)
	return o.r.integer(p, v)
}

// nullableInt reads a required key whose null means "none" (a boundary not found).
func (o *object) nullableInt(key string) *int {
	v, p := o.field(key)
	if v == nil || v.kind == kindNull {
		return nil
	}
	i := o.r.integer(p, v)
	return &i
}

// plain reads every key the struct v points at declares without omitempty whose Go type is
// a string, bool, int or float64, in declaration order: a block of plain required keys is
// read by its type, not by one line per key. Other fields are left to the caller.
func (o *object) plain(v any) {
	rv := reflect.ValueOf(v).Elem()
	for i := range rv.NumField() {
		name, opts, _ := strings.Cut(rv.Type().Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" || opts == "omitempty" {
			continue
		}
		switch f := rv.Field(i); f.Kind() {
		case reflect.String:
			f.SetString(o.str(name))
		case reflect.Bool:
			f.SetBool(o.boolean(name))
		case reflect.Int:
			f.SetInt(int64(o.integer(name)))
		case reflect.Float64:
			f.SetFloat(o.num(name))
		}
	}
}

// plainBlock reads a block whose keys are all plain and required (see plain); the zero
// value when the block is missing.
func plainBlock[T any](o *object) T {
	var v T
	if o != nil {
		o.plain(&v)
		o.finish()
	}
	return v
}

// optionalValue reads an additive key into dst (a *string, *int or *float64) when it is
// there. A zero value is kept as written: the struct's omitempty would drop it, and a
// document must round-trip as it was.
func (o *object) optionalValue(key string, dst any) {
	v, p := o.optional(key)
	if v == nil {
		return
	}
	zero := false
	switch d := dst.(type) {
	case *string:
		*d = o.r.str(p, v)
		zero = *d == ""
	case *int:
		*d = o.r.integer(p, v)
		zero = *d == 0
	case *float64:
		*d = o.r.num(p, v)
		zero = *d == 0
	}
	if zero {
		o.keepAsWritten(key)
	}
}

// optionalStrings reads an additive array of strings; an empty one is kept as written.
func (o *object) optionalStrings(key string) []string {
	v, p := o.optional(key)
	if v == nil {
		return nil
	}
	if v.kind != kindArray {
		o.r.fail(p, "expected array, got %s", v.kind)
	}
	var out []string
	for i, it := range v.items {
		out = append(out, o.r.str(joinIndex(p, i), it))
	}
	if len(out) == 0 {
		o.keepAsWritten(key)
	}
	return out
}

func (o *object) array(key string) ([]*node, string) {
	v, p := o.field(key)
	if v == nil {
		return nil, p
	}
	if v.kind != kindArray {
		o.r.fail(p, "expected array, got %s", v.kind)
		return nil, p
	}
	return v.items, p
}

func (r *reader) str(path string, v *node) string {
	if v == nil {
		return ""
	}
	if v.kind != kindString {
		r.fail(path, "expected string, got %s", v.kind)
		return ""
	}
	return v.text
}

// numberText is the text of v when it is a number; anything else is reported as not the
// kind wanted.
func (r *reader) numberText(path string, v *node, want string) (string, bool) {
	if v == nil {
		return "", false
	}
	if v.kind != kindNumber {
		r.fail(path, "expected %s, got %s", want, v.kind)
		return "", false
	}
	return v.text, true
}

func (r *reader) num(path string, v *node) float64 {
	text, ok := r.numberText(path, v, "number")
	if !ok {
		return 0
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) {
		r.fail(path, "number %s is out of range", text)
		return 0
	}
	return f
}

func (r *reader) integer(path string, v *node) int {
	text, ok := r.numberText(path, v, "integer")
	if !ok {
		return 0
	}
	if i, err := strconv.ParseInt(text, 10, 0); err == nil {
		return int(i)
	}
	// Python writers emit counts as 8.0; accept any number that is a whole value.
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		r.fail(path, "expected integer, got %s", text)
		return 0
	}
	return int(f)
}
