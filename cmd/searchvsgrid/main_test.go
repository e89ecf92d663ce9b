package main

import (
	"slices"
	"strings"
	"testing"
)

func TestPlan(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sequence string
		runs     int
		want     []string
		err      string
	}{
		{"", 2, []string{"search", "grid", "grid", "search"}, ""}, // pairs alternate which goes first
		{"search,grid,search", 3, []string{"search", "grid", "search"}, ""},
		{"grid", 3, []string{"grid"}, ""},
		{"search,,grid", 1, nil, `"" is neither search nor grid`},
		{"search,Grid", 1, nil, `"Grid" is neither search nor grid`},
	} {
		got, err := plan(tc.sequence, tc.runs)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("plan(%q): %v, want %q", tc.sequence, err, tc.err)
			}
		case err != nil || !slices.Equal(got, tc.want):
			t.Errorf("plan(%q, %d) = %v, %v; want %v", tc.sequence, tc.runs, got, err, tc.want)
		}
	}
}
