package deploy

import (
	"slices"
	"strings"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

// referenceSpec is the B70 deployment behind shared/reference/b70-qwen-sglang-aiperf.json.
func referenceSpec() engine.Spec {
	return engine.Spec{
		Engine:         engine.SGLang,
		Model:          "ulkaa/Qwen3.8-27B-AWQ-INT4",
		Revision:       "2bf7f1646dc0875cff4404fdfef976cfb0ff2199",
		TensorParallel: 4,
		ContextLength:  262144,
		Speculative:    &engine.Speculative{Algorithm: "EAGLE", Steps: 7, TopK: 1, DraftTokens: 8},
		Accelerator:    engine.XPU,
		Port:           30000,
	}
}

func TestSecretsStayOutOfCommandAndLabel(t *testing.T) {
	sec := engine.Secrets{HubToken: "hf_secret", APIKey: "sk-secret"}
	for _, e := range engine.Names {
		s := referenceSpec()
		s.Engine = e
		c, err := NewContainer(s, Placement{Name: "x", Image: "img"}, sec)
		if err != nil {
			t.Fatal(err)
		}
		all := strings.Join(s.Command(), " ") + c.Labels[SpecLabel]
		if strings.Contains(all, "secret") {
			t.Errorf("%s: secret in command or label: %s", e, all)
		}
		if c.Env["HF_TOKEN"] != "hf_secret" {
			t.Errorf("%s: hub token not delivered: %v", e, c.Env)
		}
		// The key reaches the engine one way or the other.
		if !strings.Contains(strings.Join(c.Args, " "), "sk-secret") && !slices.ContainsFunc(mapValues(c.Env), func(v string) bool { return v == "sk-secret" }) {
			t.Errorf("%s: api key not delivered", e)
		}
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func TestRecordRoundTrip(t *testing.T) {
	s := referenceSpec()
	s.ExtraArgs = []string{"--log-level", "debug"}
	c, err := NewContainer(s, Placement{Name: "n", Image: "i", Env: map[string]string{"A": "1"}, HostPort: 31000}, engine.Secrets{HubToken: "hf_x"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseRecord(c.Labels[SpecLabel])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Spec.Command(), s.Command()) || *got.Spec.Speculative != *s.Speculative {
		t.Errorf("round trip changed the spec: %+v", got.Spec)
	}
	if got.Placement.HostPort != 31000 || got.Placement.Env["A"] != "1" || len(got.Placement.Env) != 1 {
		t.Errorf("round trip changed the placement: %+v", got.Placement)
	}
}
