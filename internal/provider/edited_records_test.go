package provider

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// editedRecords is the recorded run (document and records directory) with its first trial's
// records file edited by edit, which returns the file's new text and whether the document
// restates the file's SHA-256 to match it.
func editedRecords(t *testing.T, edit func(string) (string, bool)) (doc, dir string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(recordedPath(t, "records"))); err != nil {
		t.Fatal(err)
	}
	d := recordedDoc(t, "")
	tr := &d.Workloads[0].AllTrials[0]
	file := filepath.Join(dir, filepath.FromSlash(tr.RecordsFile))
	body, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	text, restate := edit(string(body))
	if text == "" {
		err = os.Remove(file)
	} else {
		err = os.WriteFile(file, []byte(text), 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
	if restate {
		sum := sha256.Sum256([]byte(text))
		tr.RecordsSHA256 = hex.EncodeToString(sum[:])
	}
	raw, err := results.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	doc = filepath.Join(t.TempDir(), "result.json")
	if err := os.WriteFile(doc, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return doc, dir
}

// A records file edited after its run is refused through the real CLI whether it is the
// report's own (records_directory) or its baseline's (baseline_records_directory): the same
// check (records.Verify, and records.VerifyPresent for a baseline, where a missing file only
// leaves the trial without samples). Before issue 39 the baseline's edited file was compared
// without a word (its samples silently dropped). A new kind of edit joins by adding a row.
func TestAccEditedRecordsRefused(t *testing.T) {
	t.Parallel()
	current := recordedPath(t, "result.json")
	readers := []struct {
		name   string
		config func(doc, dir string) string
	}{
		{"records_directory", func(doc, dir string) string {
			return fmt.Sprintf("data \"llmserve_capacity_report\" \"r\" {\n  path = %q\n  records_directory = %q\n}\n", doc, dir)
		}},
		{"baseline_records_directory", func(doc, dir string) string {
			return fmt.Sprintf("data \"llmserve_capacity_report\" \"r\" {\n  path = %q\n  baseline = file(%q)\n  baseline_records_directory = %q\n}\n", current, doc, dir)
		}},
	}
	edits := []struct {
		name string
		edit func(string) (string, bool)
		want string
	}{
		{"a byte changed", func(s string) (string, bool) {
			return strings.Replace(s, `"first_token_ns":`, `"first_token_ns": `, 1), false
		}, "has SHA-256"},
		{"a time changed, the checksum restated", func(s string) (string, bool) {
			m := regexp.MustCompile(`"kind":"measured",.*?"first_token_ns":(\d+)`).FindStringSubmatchIndex(s)
			if m == nil {
				t.Fatal("no measured line")
			}
			return s[:m[2]+12] + "9" + s[m[2]+13:], true // a measured first token 1 ms later
		}, "differs from what the records files under"},
	}
	for _, e := range edits {
		doc, dir := editedRecords(t, e.edit)
		for _, r := range readers {
			t.Run(e.name+"/"+r.name, func(t *testing.T) {
				t.Parallel()
				resource.Test(t, resource.TestCase{
					ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
					TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)},
					Steps:                    []resource.TestStep{{Config: r.config(doc, dir), ExpectError: errorPattern(e.want)}},
				})
			})
		}
	}
	// A baseline's records file that is missing is no edit: the comparison runs on.
	t.Run("a baseline's file missing", func(t *testing.T) {
		t.Parallel()
		doc, dir := editedRecords(t, func(string) (string, bool) { return "", false })
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
			TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)},
			Steps: []resource.TestStep{{
				Config: readers[1].config(doc, dir),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.llmserve_capacity_report.r", tfjsonpath.New("comparison").AtMapKey("comparable"), knownvalue.Bool(true)),
				},
			}},
		})
	})
}
