package deploy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// A Status holds the launch API key in memory; no way of printing or encoding the Status
// (a failing test's %+v, a log line, JSON) may write it.
func TestStatusNeverPrintsAPIKey(t *testing.T) {
	t.Parallel()
	const key = "sk-launch-0123456789abcdef"
	st := Status{ID: "abc123", Name: "qwen", Running: true, APIKey: Secret(key)}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%T %v", "%10v", "%-12s"} {
		for _, v := range []any{st, &st, st.APIKey} {
			if out := fmt.Sprintf(verb, v); strings.Contains(out, key) || strings.Contains(out, fmt.Sprintf("%x", key)) || strings.Contains(out, fmt.Sprintf("%X", key)) {
				t.Errorf("Sprintf(%q) printed the key: %s", verb, out)
			}
		}
	}
	if out := fmt.Sprintf("%+v", st); !strings.Contains(out, "APIKey:[redacted]") || !strings.Contains(out, "Name:qwen") {
		t.Errorf("%%+v = %s, want the other fields and APIKey:[redacted]", out)
	}
	if out := fmt.Sprintf("%#v", st.APIKey); out != `"[redacted]"` {
		t.Errorf("%%#v = %s, want \"[redacted]\"", out)
	}
	raw, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), key) || !strings.Contains(string(raw), `"APIKey":"[redacted]"`) {
		t.Errorf("JSON = %s, want APIKey redacted", raw)
	}
	if out := fmt.Sprintf("%+v", Status{}); !strings.Contains(out, "APIKey:}") {
		t.Errorf("an unset key must print as unset: %s", out)
	}
	if st.APIKey.Reveal() != key {
		t.Errorf("Reveal() = %q, want the key", st.APIKey.Reveal())
	}
}
