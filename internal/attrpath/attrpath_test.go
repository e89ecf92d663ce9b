package attrpath

import "testing"

func TestString(t *testing.T) {
	for _, tc := range []struct {
		p    Path
		want string
	}{
		{Root("endpoint"), "endpoint"},
		{Root("workloads").Index(0).At("input_tokens"), "workloads[0].input_tokens"},
		{Root("search").At("concurrency_levels").Index(12), "search.concurrency_levels[12]"},
		{Root("environment").Key("HF_TOKEN"), `environment["HF_TOKEN"]`},
		{Root("labels").Key("a\"b\u0085"), `labels["a\"b\u0085"]`},
		{Root("mounts").Index(1).At("target"), "mounts[1].target"},
		{nil, ""},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

func TestSiblingsAndWithin(t *testing.T) {
	// At, Index and Key never write into a shared parent.
	base := Root("workloads").Index(1)
	a, b := base.At("label"), base.At("input_tokens")
	if a.String() != "workloads[1].label" || b.String() != "workloads[1].input_tokens" {
		t.Errorf("siblings %s, %s", a, b)
	}
	if !a.Within(base) || !a.Within(a) || base.Within(a) || a.Within(b) {
		t.Error("Within is not prefix containment")
	}
	// A list index and a map key with the same spelling are different steps.
	if Root("x").Index(0).Within(Root("x").Key("0")) {
		t.Error("x[0] is within x[\"0\"]")
	}
}
