// Package attrpath names a setting as a user writes it: attribute names, list indexes and
// map keys from the top, e.g. workloads[0].input_tokens or environment["HF_TOKEN"]. Domain
// packages report problems with such paths; the Terraform glue maps them onto its own
// attribute paths, so no domain package imports Terraform and no path is parsed back from
// text.
package attrpath

import (
	"slices"
	"strconv"
	"strings"
)

// Path is a sequence of steps from a top-level attribute.
type Path []Step

// Step is one attribute name, list index or map key.
type Step struct {
	Kind  Kind
	Name  string // the attribute name, or the map key
	Index int    // the list index
}

// Kind says what a Step steps into.
type Kind uint8

// The kinds of step: into an attribute (Name), a list element (Index) or a map element
// (Name is the key).
const (
	Attribute Kind = iota
	ListIndex
	MapKey
)

// Root is the path of a top-level attribute.
func Root(name string) Path { return Path{{Kind: Attribute, Name: name}} }

// At is the path of the attribute name inside p.
func (p Path) At(name string) Path { return p.with(Step{Kind: Attribute, Name: name}) }

// Index is the path of the list element i of p.
func (p Path) Index(i int) Path { return p.with(Step{Kind: ListIndex, Index: i}) }

// Key is the path of the map element key of p.
func (p Path) Key(key string) Path { return p.with(Step{Kind: MapKey, Name: key}) }

// with never shares p's backing array, so paths built from one parent stay apart.
func (p Path) with(s Step) Path { return append(p[:len(p):len(p)], s) }

// String is the path as a user writes it: workloads[0].input_tokens, labels["team"].
func (p Path) String() string {
	var b strings.Builder
	for _, s := range p {
		switch s.Kind {
		case ListIndex:
			b.WriteString("[" + strconv.Itoa(s.Index) + "]")
		case MapKey:
			b.WriteString("[" + strconv.Quote(s.Name) + "]")
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.Name)
		}
	}
	return b.String()
}

// Within reports whether p is q or inside it (workloads[0].label is within workloads).
func (p Path) Within(q Path) bool {
	return len(q) <= len(p) && slices.Equal(p[:len(q)], q)
}
