package engine

import (
	"strings"
	"testing"
)

func TestSpecCheckStrings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		spec  Spec
		field string
		want  string
	}{
		{"clean", Spec{Model: "org/m", ExtraArgs: []string{"--log-level", "debug"}}, "", ""},
		{"api key flag", Spec{Model: "m", ExtraArgs: []string{"--enable-metrics", "--api-key", "k"}}, "extra_args[1]", "--api-key puts a secret"},
		{"api key flag with value", Spec{Model: "m", ExtraArgs: []string{"--admin-api-key=k"}}, "extra_args[0]", "--admin-api-key puts a secret"},
		{"model newline", Spec{Model: "m\n--x"}, "model", "control characters"},
		{"entrypoint empty", Spec{Model: "m", Entrypoint: []string{"python3", " "}}, "entrypoint[1]", "must not be empty"},
		{"draft model escape", Spec{Model: "m", Speculative: &Speculative{DraftModel: "\x1b"}}, "speculative.draft_model", "control characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.spec.CheckStrings()
			if tt.field == "" {
				if len(got) != 0 {
					t.Fatalf("CheckStrings = %v, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].Path.String() != tt.field || !strings.Contains(got[0].Detail, tt.want) {
				t.Fatalf("CheckStrings = %v, want one problem on %s containing %q", got, tt.field, tt.want)
			}
		})
	}
}
