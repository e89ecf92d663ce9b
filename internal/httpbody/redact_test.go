package httpbody

import (
	"strings"
	"testing"
)

func TestRedactorString(t *testing.T) {
	for _, tc := range []struct {
		name    string
		secrets []string
		in      string
		want    string
	}{
		{"no secrets", nil, "key sk-1", "key sk-1"},
		{"empty secrets ignored", []string{"", ""}, "key sk-1", "key sk-1"},
		{"every occurrence", []string{"sk-1"}, "sk-1 and sk-1", "[redacted] and [redacted]"},
		{"each secret", []string{"sk-1", "hf_x"}, "api sk-1 hub hf_x", "api [redacted] hub [redacted]"},
		{"one contains another, short first", []string{"abc", "abcdef"}, "key=abcdef;", "key=[redacted];"},
		{"one contains another, long first", []string{"abcdef", "abc"}, "key=abcdef; abc", "key=[redacted]; [redacted]"},
		{"overlapping secrets", []string{"abcXY", "XYZsecret"}, "abcXYZsecret!", "[redacted]!"},
		{"overlapping occurrences", []string{"aa"}, "baaab", "b[redacted]b"},
		{"secret inside the mark", []string{"act"}, "act [redacted]", "[redacted] [red[redacted]ed]"},
		{"duplicate secrets", []string{"k", "k"}, "kk", "[redacted]"},
		{"absent", []string{"sk-1"}, "nothing here", "nothing here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRedactor(tc.secrets...)
			if got := r.String(tc.in); got != tc.want {
				t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if got := string(r.Bytes([]byte(tc.in))); got != tc.want {
				t.Errorf("Bytes(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestRedactorBytesKeepsCleanSlice(t *testing.T) {
	b := []byte("data: {\"content\":\"hi\"}")
	if got := NewRedactor("sk-1").Bytes(b); &got[0] != &b[0] {
		t.Error("Bytes copied a slice that holds no secret")
	}
}

// A secret that straddles MaxLen must not leave its first characters at the cut, and one
// spelt with JSON escapes is hidden once decoded.
func TestRedactorOneLine(t *testing.T) {
	const key = "sk-live-0123456789"
	straddle := strings.Repeat("x", MaxLen-5) + " " + key + " tail"
	for _, tc := range []struct {
		name, body, want string
	}{
		{"straddles the cut", straddle, strings.Repeat("x", MaxLen-5) + " [red..."}, // 195 + 1 + 4 bytes
		{"escaped in json", `{"error":{"message":"bad key \u0073k-live-0123456789"}}`, "bad key [redacted]"},
		{"html title", "<html><head><title>denied sk-live-0123456789</title></head></html>", "denied [redacted]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := NewRedactor(key).OneLine([]byte(tc.body))
			if got != tc.want {
				t.Errorf("OneLine = %q, want %q", got, tc.want)
			}
			if strings.Contains(got, "sk-") {
				t.Errorf("OneLine leaks part of the key: %q", got)
			}
		})
	}
	if got := (*Redactor)(nil).OneLine([]byte(`{"detail":"Not Found"}`)); got != "Not Found" {
		t.Errorf("nil Redactor OneLine = %q, want %q", got, "Not Found")
	}
}

// Bytes runs on every stream event of a benchmark with an API key: an event without the key
// must cost no allocation.
func TestRedactorBytesAllocs(t *testing.T) {
	r := NewRedactor("sk-live-0123456789abcdef0123456789abcdef", "hf_0123456789abcdef0123456789abcdef")
	b := []byte(`{"choices":[{"index":0,"delta":{"content":"token"}}]}`)
	if n := testing.AllocsPerRun(100, func() { r.Bytes(b) }); n != 0 {
		t.Errorf("Bytes allocates %v times per clean event, want 0", n)
	}
}

// A token read with file() keeps its newline; the body is redacted as it came too, before its
// whitespace is collapsed into a form the secret no longer matches.
func TestRedactorOneLineSecretWithNewline(t *testing.T) {
	got := NewRedactor("hf_token-123\n").OneLine([]byte("bad token hf_token-123\nretry"))
	if want := "bad token [redacted]retry"; got != want {
		t.Errorf("OneLine = %q, want %q", got, want)
	}
}
