package problem

import (
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
)

func TestError(t *testing.T) {
	for _, tt := range []struct {
		p    Problem
		want string
	}{
		{At(attrpath.Root("speculative").At("draft_tokens"), "must be at least %d", 2), "speculative.draft_tokens: must be at least 2"},
	} {
		if got := tt.p.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}
