package provider

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"golang.org/x/crypto/ssh"

	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/docker"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/kubernetes"
	"github.com/llmserve/terraform-provider-llmserve/internal/localfile"
	"github.com/llmserve/terraform-provider-llmserve/internal/records"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/trace"
)

// fileReader is one attribute or document field through which the provider reads a file a
// user names, driven through its real entry point. A new file-bearing attribute joins the
// sweep by adding a row.
type fileReader struct {
	name string         // the attribute or field; every refusal must name it
	kind localfile.Kind // the bound the row's "too large" case exceeds by one byte
	// read reads the file at p (a path the user gives), or, for a confined row, the file
	// named p inside dir (a document's records_file under a directory attribute).
	read     func(t *testing.T, dir, p string) error
	confined bool
}

// recordedDoc is the recorded result with its first trial's records_file set to name ("":
// as recorded).
func recordedDoc(t *testing.T, name string) *results.Document {
	t.Helper()
	raw, err := os.ReadFile(recordedPath(t, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := results.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if name != "" {
		doc.Workloads[0].AllTrials[0].RecordsFile, doc.Workloads[0].AllTrials[0].RecordsSHA256 = name, ""
	}
	return doc
}

func fileReaders(t *testing.T) []fileReader {
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(edKey, "")
	if err != nil {
		t.Fatal(err)
	}
	sshKey := string(pem.EncodeToMemory(block))
	return []fileReader{
		{name: "workloads[0].trace.file", kind: trace.File, read: func(t *testing.T, _, p string) error {
			c := capacity.Config{Workloads: []capacity.Workload{{Label: "a", TraceFile: p}}}
			c.LoadTraces()
			for _, pr := range c.Validate() {
				if pr.Path.String() == "workloads[0].trace.file" {
					return errors.New(pr.Detail)
				}
			}
			return nil
		}},
		{name: "progress_file", kind: capacity.JournalFile, read: func(t *testing.T, _, p string) error {
			j, err := capacity.OpenJournal(p, capacity.Config{})
			if err == nil {
				j.Close()
			}
			return err
		}},
		{name: "results document", kind: results.File, read: func(t *testing.T, _, p string) error {
			_, err := results.ReadFile(p) // the report data source's path, llmserve-recompute -results
			return err
		}},
		{name: "cert_path", kind: docker.PEMFile, read: func(t *testing.T, _, p string) error {
			dir := t.TempDir()
			for _, f := range []string{"ca.pem", "cert.pem", "key.pem"} {
				if err := os.Symlink(p, filepath.Join(dir, f)); err != nil {
					t.Fatal(err)
				}
			}
			_, err := docker.NewClient(docker.Config{Host: "tcp://127.0.0.1:1", CertPath: dir})
			return err
		}},
		{name: "ssh_known_hosts_file", kind: docker.KnownHostsFile, read: func(t *testing.T, _, p string) error {
			_, err := docker.NewClient(docker.Config{Host: "ssh://root@127.0.0.1", SSHPrivateKeyPEM: sshKey, SSHKnownHostsFile: p})
			return err
		}},
		{name: "config_path", kind: kubernetes.KubeconfigFile, read: func(t *testing.T, _, p string) error {
			_, err := kubernetes.Config{ConfigPath: p}.RESTConfig()
			return err
		}},
		{name: "records_file", kind: records.File, confined: true, read: func(t *testing.T, dir, p string) error {
			_, err := records.Verify(recordedDoc(t, p), dir) // the report data source's records_directory, llmserve-recompute -records
			return err
		}},
		{name: "baseline_records_directory", kind: records.File, confined: true, read: func(t *testing.T, dir, p string) error {
			base, err := results.Marshal(recordedDoc(t, p))
			if err != nil {
				t.Fatal(err)
			}
			m := capacityReportModel{Baseline: types.StringValue(string(base)), BaselineRecordsDirectory: types.StringValue(dir)}
			diags := m.compareWithBaseline(context.Background(), recordedDoc(t, ""))
			errs := diags.Errors()
			if len(errs) == 0 {
				return nil
			}
			d := errs[0]
			if wp, ok := d.(interface{ Path() path.Path }); !ok || !wp.Path().Equal(path.Root("baseline_records_directory")) {
				t.Errorf("the refusal is not at baseline_records_directory: %v", d)
			}
			return fmt.Errorf("%s: %s", d.Summary(), d.Detail())
		}},
	}
}

// TestFileReadersRefuseHostileFiles sweeps every file the provider reads × every hostile
// file: each is refused by name, naming the attribute or field, within a bound that proves
// no read hangs (a FIFO) or runs away (a symlink to /dev/zero).
func TestFileReadersRefuseHostileFiles(t *testing.T) {
	type hostile struct {
		name string
		// place puts the hostile file at dir/name (or returns another name), given the row
		confinedOnly bool
		place        func(t *testing.T, r fileReader, dir, name string) string
		want         string
		wantConfined string // where a confined row says it otherwise
	}
	realRecords := recordedPath(t, "records")
	firstRecords := recordedDoc(t, "").Workloads[0].AllTrials[0].RecordsFile
	cases := []hostile{
		{name: "FIFO", want: "is a named pipe (FIFO), not a regular file", place: func(t *testing.T, _ fileReader, dir, name string) string {
			if err := syscall.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
				t.Fatal(err)
			}
			return name
		}},
		{name: "symlink to /dev/zero", want: "is a character device, not a regular file (through a symbolic link)",
			wantConfined: "resolves through a symbolic link to /dev/zero, outside the directory", place: func(t *testing.T, _ fileReader, dir, name string) string {
				if err := os.Symlink("/dev/zero", filepath.Join(dir, name)); err != nil {
					t.Fatal(err)
				}
				return name
			}},
		{name: "directory", want: "is a directory, not a regular file", place: func(t *testing.T, _ fileReader, dir, name string) string {
			if err := os.Mkdir(filepath.Join(dir, name), 0o700); err != nil {
				t.Fatal(err)
			}
			return name
		}},
		{name: "too large", want: "is larger than", place: func(t *testing.T, r fileReader, dir, name string) string {
			f, err := os.Create(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(r.kind.MaxBytes + 1); err != nil { // sparse: no disk used
				t.Fatal(err)
			}
			return name
		}},
		{name: "traversal", confinedOnly: true, want: "is not a relative path inside the directory", place: func(t *testing.T, _ fileReader, dir, name string) string {
			return strings.Repeat("../", 12) + "etc/passwd"
		}},
		{name: "symlink escaping the directory", confinedOnly: true, want: "outside the directory", place: func(t *testing.T, _ fileReader, dir, name string) string {
			// The real records, only elsewhere: the location alone is wrong.
			if err := os.Symlink(filepath.Join(realRecords, filepath.FromSlash(firstRecords)), filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
			return name
		}},
	}
	for _, r := range fileReaders(t) {
		for _, h := range cases {
			if h.confinedOnly && !r.confined {
				continue
			}
			t.Run(r.name+"/"+h.name, func(t *testing.T) {
				dir := t.TempDir()
				name := "hostile"
				if r.confined { // the recorded run's directory, one file made hostile
					if err := os.CopyFS(dir, os.DirFS(realRecords)); err != nil {
						t.Fatal(err)
					}
					name = firstRecords
					if err := os.Remove(filepath.Join(dir, filepath.FromSlash(name))); err != nil {
						t.Fatal(err)
					}
				}
				got := h.place(t, r, dir, filepath.FromSlash(name))
				arg := filepath.Join(dir, got)
				if r.confined {
					arg = filepath.ToSlash(got)
				}
				done := make(chan error, 1)
				go func() { done <- r.read(t, dir, arg) }()
				select {
				case err := <-done:
					want := h.want
					if r.confined && h.wantConfined != "" {
						want = h.wantConfined
					}
					if err == nil {
						t.Fatalf("accepted; want an error saying %q", want)
					}
					msg := strings.Join(strings.Fields(err.Error()), " ")
					if !strings.Contains(msg, want) || !strings.Contains(msg, r.name) {
						t.Errorf("error %q\nwant it to say %q and name %s", msg, want, r.name)
					}
				case <-time.After(10 * time.Second): // generous for a loaded machine; a hang never returns
					t.Fatal("the read did not return in 10 s: it hangs")
				}
			})
		}
	}
}

// Through the real CLI: a trace that is a FIFO or a symlink to /dev/zero fails plan with an
// error at trace.file (before: plan hung, or the plugin died of out-of-memory), and a
// baseline whose records_file climbs out of baseline_records_directory is refused by name
// (before: /etc/passwd was read and the failure swallowed).
func TestAccFileReaders_hostileFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "trace.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "trace.jsonl")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	bench := func(file string) string {
		return fmt.Sprintf(`resource "llmserve_capacity_benchmark" "test" {
  endpoint  = "http://127.0.0.1:1"
  model     = "m"
  slos      = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 150 }]
  workloads = [{ label = "a", trace = { file = %q } }]
  search    = { speedup = { min = 1, max = 4 } }
}`, file)
	}
	doc, recs := recordedPath(t, "result.json"), recordedPath(t, "records")
	for _, tc := range []struct{ name, config, want string }{
		{"trace FIFO", bench(fifo), `workloads[0].trace.file cannot be replayed: read trace: ` + fifo + ` is a named pipe (FIFO), not a regular file`},
		{"trace symlink to /dev/zero", bench(zero), `workloads[0].trace.file cannot be replayed: read trace: ` + zero + ` is a character device, not a regular file (through a symbolic link)`},
		{"baseline records_file traversal", fmt.Sprintf(`data "llmserve_capacity_report" "test" {
  path                       = %q
  baseline                   = replace(file(%q), "\"records_file\": \"01-64-8/confirmation-c004-1.jsonl\"", "\"records_file\": \"../../../../../../../../etc/passwd\"")
  baseline_records_directory = %q
}`, doc, doc, recs), `records_file ../../../../../../../../etc/passwd is not a relative path inside the directory`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			step := resource.TestStep{Config: tc.config, ExpectError: regexp.MustCompile(words(tc.want))}
			if strings.HasPrefix(tc.name, "trace") {
				step.PlanOnly = true
			}
			resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: testAccProtoV6ProviderFactories, Steps: []resource.TestStep{step}})
		})
	}
}
