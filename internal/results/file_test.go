package results

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, MaxFileBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	ok := filepath.Join(dir, "ok.json")
	if err := os.WriteFile(ok, []byte(`{"schema_version": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ path, wantErr string }{
		{fifo, "not a regular file"},
		{"/dev/zero", "not a regular file"},
		{dir, "not a regular file"},
		{big, "larger than 64 MiB"},
		{filepath.Join(dir, "missing.json"), "no such file"},
		{ok, ""},
	}
	for _, tc := range tests {
		done := make(chan error, 1)
		go func() { _, err := ReadFile(tc.path); done <- err }()
		select {
		case err := <-done:
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("%s: err = %v, want %q", tc.path, err, tc.wantErr)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: ReadFile did not return", tc.path)
		}
	}
}
