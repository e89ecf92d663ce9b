package degenerate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkTally is the cost the degenerate rules add to every streamed chunk: the recorded
// outputs (testdata/healthy and testdata/degenerate, and every token "<unk>") streamed
// through a Tally in chunks of 4 bytes, about a token each. B/s is output bytes tallied.
func BenchmarkTally(b *testing.B) {
	var healthy []string
	files, _ := filepath.Glob(filepath.Join("testdata", "*", "*.txt"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		healthy = append(healthy, string(raw))
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "healthy", "tiny-llama-greedy-256.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var o recorded
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			b.Fatal(err)
		}
		healthy = append(healthy, o.Text)
	}
	for _, c := range []struct {
		name  string
		texts []string
	}{
		{"recorded", healthy},
		{"unk", []string{strings.Repeat("<unk>", 512)}},
		{"pad-spaced", []string{strings.Repeat("[PAD] ", 512)}},
	} {
		total := 0
		for _, s := range c.texts {
			total += len(s)
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(total))
			b.ReportAllocs()
			for b.Loop() {
				for _, s := range c.texts {
					var t Tally
					for i := 0; i < len(s); i += 4 {
						t.WriteString(s[i:min(i+4, len(s))])
					}
					_ = t.Output()
				}
			}
		})
	}
}
