package trace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	// Two lines of Mooncake's own README (FAST25-release), then one at the same time with no
	// hash_ids and a float timestamp, as AIPerf's files sometimes have.
	in := `{"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 2353, 2354]}
{"timestamp": 30535, "input_length": 6472, "output_length": 26, "hash_ids": [46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 2366], "session": "ignored"}

{"timestamp": 30535.5, "input_length": 10, "output_length": 1}
`
	tr, err := Parse(strings.NewReader(in), MooncakeBlockTokens)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Requests) != 3 {
		t.Fatalf("%d requests, want 3", len(tr.Requests))
	}
	r := tr.Requests
	if r[0].Offset != 0 || r[1].Offset != 3053*time.Millisecond || r[2].Offset != 3053500*time.Microsecond {
		t.Errorf("offsets %v %v %v, want 0, 3.053s, 3.0535s", r[0].Offset, r[1].Offset, r[2].Offset)
	}
	if r[2].Line != 4 {
		t.Errorf("third request on line %d, want 4 (blank line counted)", r[2].Line)
	}
	if r[0].InputTokens != 6955 || r[1].OutputTokens != 26 || len(r[0].HashIDs) != 14 || r[1].HashIDs[12] != 2366 || len(r[2].HashIDs) != 0 {
		t.Errorf("requests %+v", r)
	}
	// (3 − 1) requests over 3.0535 s.
	if got, want := tr.Rate(), 2/3.0535; got < want*0.999999 || got > want*1.000001 {
		t.Errorf("rate %g, want %g", got, want)
	}
	sched, err := tr.Schedule(2)
	if err != nil {
		t.Fatal(err)
	}
	if sched[1] != 1526500*time.Microsecond || sched[2] != 1526750*time.Microsecond {
		t.Errorf("schedule at 2x %v", sched)
	}
	in0, out0 := tr.MeanLengths()
	if in0 != (6955+6472+10+1)/3 || out0 != 26 { // 4479 (13437/3), (52+26+1)/3 = 26.3
		t.Errorf("mean lengths %d / %d", in0, out0)
	}
}

func TestParseRefuses(t *testing.T) {
	ok := `{"timestamp": 0, "input_length": 10, "output_length": 5}` + "\n"
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "\n\n", "no requests"},
		{"not json", ok + "timestamp=3\n", "trace line 2: not a JSON object"},
		{"array", ok + "[1, 2]\n", "trace line 2: not a JSON object"},
		{"two values", ok + `{"timestamp": 1, "input_length": 1, "output_length": 1} {}` + "\n", "trace line 2: more than one JSON value"},
		{"no timestamp", `{"input_length": 10, "output_length": 5}`, "trace line 1: timestamp: missing"},
		{"string timestamp", `{"timestamp": "0", "input_length": 10, "output_length": 5}`, "trace line 1: timestamp: expected a number, got string"},
		{"negative timestamp", `{"timestamp": -1, "input_length": 10, "output_length": 5}`, "trace line 1: timestamp: must be a non-negative number"},
		{"back in time", `{"timestamp": 5, "input_length": 10, "output_length": 5}` + "\n" + ok, "trace line 2: timestamp: 0 ms is before the previous request's 5 ms (line 1)"},
		{"no input", ok + `{"timestamp": 1, "output_length": 5}`, "trace line 2: input_length: missing"},
		{"zero output", ok + `{"timestamp": 1, "input_length": 3, "output_length": 0}`, "trace line 2: output_length: must be a positive whole number of tokens, got 0"},
		{"fractional input", `{"timestamp": 1, "input_length": 2.5, "output_length": 1}`, "trace line 1: input_length: must be a positive whole number of tokens, got 2.5"},
		{"negative hash", `{"timestamp": 1, "input_length": 600, "output_length": 1, "hash_ids": [1, -2]}`, "trace line 1: hash_ids[1]: must be a non-negative whole number, got -2"},
		{"hash not a number", `{"timestamp": 1, "input_length": 600, "output_length": 1, "hash_ids": ["a"]}`, "trace line 1: hash_ids: expected a numbers list, got string"},
		// 600 tokens are two blocks of 512; three hash_ids cannot fit.
		// Issue 33: 1e13 ms (317 years) overflowed time.Duration and read as "every request
		// has the same timestamp".
		{"317-year span", ok + `{"timestamp": 1e13, "input_length": 3, "output_length": 1}`,
			"trace line 2: timestamp: 1e+13 ms is 1.157e+05 days after the first request's 0 ms (line 1); a trace may span at most 366 days (31622400000 ms)"},
		{"a millisecond past a year", ok + `{"timestamp": 31622400001, "input_length": 3, "output_length": 1}`, "a trace may span at most 366 days"},
		{"too many blocks", `{"timestamp": 1, "input_length": 600, "output_length": 1, "hash_ids": [1, 2, 3]}`, "trace line 1: hash_ids: 3 blocks of 512 tokens, but input_length 600 holds at most 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.in), MooncakeBlockTokens)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, []byte(`{"timestamp": 0, "input_length": 1, "output_length": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tr, err := ReadFile(path, 512)
	if err != nil {
		t.Fatal(err)
	}
	// sha256 of the file's bytes, computed with sha256sum.
	if tr.File != path || tr.SHA256 != "05293277ec87b340a1278ba5b3525661ea41d7d3c1f984a43e44721c33292dc6" {
		t.Errorf("file %q sha %q", tr.File, tr.SHA256)
	}
	if tr.Rate() != 0 {
		t.Errorf("one request has no rate, got %g", tr.Rate())
	}
	if _, err := tr.Schedule(0); err == nil {
		t.Error("speedup 0 accepted")
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing.jsonl"), 512); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
}

// A span of exactly MaxSpan is a trace, kept to the millisecond.
func TestParseLongestSpan(t *testing.T) {
	in := `{"timestamp": 5, "input_length": 3, "output_length": 1}` + "\n" + `{"timestamp": 31622400005, "input_length": 3, "output_length": 1}`
	tr, err := Parse(strings.NewReader(in), MooncakeBlockTokens)
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.Requests[1].Offset; got != 366*24*time.Hour {
		t.Errorf("offset %v, want 8784h (366 days)", got)
	}
}
