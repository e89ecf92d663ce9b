package main_test

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// The README's development install, run as written, builds a binary that can be the
// benchmark's runner: static (no ELF interpreter), since the runner image is FROM scratch.
// A plain `go install .` links with cgo wherever gcc is present, and the runner then refused
// it only at plan.
func TestReadmeInstallBuildsARunnerBinary(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the runner image is Linux; the check reads an ELF binary")
	}
	if testing.Short() {
		t.Skip("builds the provider (about a minute on 2 cores); -short leaves it out")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^\s*((?:[A-Z_]+=\S+ )*go install \.)\s`).FindSubmatch(readme)
	if line == nil {
		t.Fatal("README.md has no `go install .` line")
	}
	bin := t.TempDir()
	cmd := exec.Command("sh", "-c", string(line[1]))
	// The user's environment as it is (CGO_ENABLED unset, gcc present or not), with the
	// binary landing here.
	cmd.Env = append(withoutCgoSetting(os.Environ()), "GOBIN="+bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", line[1], err, out)
	}
	f, err := elf.Open(filepath.Join(bin, "terraform-provider-llmserve"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatalf("%q builds a dynamically linked binary, which the FROM scratch runner image cannot start", line[1])
		}
	}
}

func withoutCgoSetting(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "CGO_ENABLED=") {
			out = append(out, kv)
		}
	}
	return out
}
