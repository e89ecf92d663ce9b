package localfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Within accepts what stays inside the directory, links included, and refuses by name what
// leaves it; a missing file is the resolver's not-exist error, not a refusal.
func TestWithin(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "records")
	for _, d := range []string{filepath.Join(dir, "w"), filepath.Join(root, "elsewhere")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(dir, "w", "a.jsonl"), filepath.Join(root, "elsewhere", "b.jsonl")} {
		if err := os.WriteFile(f, []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mustLink := func(target, link string) {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	mustLink("w/a.jsonl", filepath.Join(dir, "inside.jsonl"))                      // a link that stays
	mustLink(filepath.Join(root, "elsewhere"), filepath.Join(dir, "out"))          // a directory link that leaves
	mustLink(dir, filepath.Join(root, "via-link"))                                 // the directory itself behind a link
	mustLink(filepath.Join(root, "elsewhere", "b.jsonl"), filepath.Join(dir, "b")) // a file link that leaves
	for _, tc := range []struct {
		dir, name, want string // want: "" accepted, else a refusal saying it
	}{
		{dir, "w/a.jsonl", ""},
		{dir, "w/../w/a.jsonl", ""},
		{dir, "inside.jsonl", ""},
		{filepath.Join(root, "via-link"), "w/a.jsonl", ""},
		{dir, "../elsewhere/b.jsonl", "is not a relative path inside the directory"},
		{dir, "/etc/passwd", "is not a relative path inside the directory"},
		{dir, "", "names no file in the directory"},
		{dir, "w/..", "names no file in the directory"},
		{dir, "out/b.jsonl", "outside the directory"},
		{dir, "b", "outside the directory"},
	} {
		_, err := Within(tc.dir, tc.name)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (!IsRefused(err) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want a refusal saying %q", tc.name, err, tc.want)
		}
	}
	if _, err := Within(dir, "w/missing.jsonl"); !errors.Is(err, fs.ErrNotExist) || IsRefused(err) {
		t.Errorf("missing file: %v, want not-exist and no refusal", err)
	}
}

// OpenAppend creates a missing file and reads one within the bound; ReadFile returns it whole.
func TestOpenAppendAndReadFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "journal")
	k := Kind{Noun: "journal", MaxBytes: 8}
	f, err := OpenAppend(p, k)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("12345678"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got, err := ReadFile(p, k); err != nil || string(got) != "12345678" {
		t.Fatalf("ReadFile = %q, %v", got, err)
	}
	if err := os.WriteFile(p, []byte("123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(p, k); !IsRefused(err) || !strings.Contains(err.Error(), "is larger than 8 bytes (9 bytes), more than any journal") {
		t.Fatalf("9 bytes under an 8-byte bound: %v", err)
	}
}
