package results

import (
	"encoding/csv"
	"math"
	"regexp"
	"strings"
	"testing"
)

// longNumber finds a number of 20 or more digits: no coordinate of a chart needs one.
var longNumber = regexp.MustCompile(`[0-9]{20,}`)

func svgIsSafe(t testing.TB, svg string) {
	t.Helper()
	for _, bad := range []string{"NaN", "Inf"} {
		if strings.Contains(svg, bad) {
			t.Fatalf("SVG carries %s", bad)
		}
	}
	if m := longNumber.FindString(svg); m != "" {
		t.Fatalf("SVG carries a %d-digit number", len(m))
	}
}

// Whatever the values, the chart's coordinates stay short and finite.
func TestSVGExtremeValues(t *testing.T) {
	t.Parallel()
	for _, v := range []float64{1e300, math.MaxFloat64, 1e-300, 0, math.Inf(1), math.NaN()} {
		d := parseReference(t)
		d.Workloads[0].PassingTrials[0].TTFTMs.P95 = v
		d.Workloads[0].FailingTrials[1].TTFTMs.P95 = -v
		c := math.MaxInt32
		d.Workloads[1].FirstFailingConcurrency = &c
		svgIsSafe(t, SVG(d))
	}
}

// Labels reach spreadsheets and pages as text only.
func TestRenderingsNeutraliseLabels(t *testing.T) {
	t.Parallel()
	labels := []string{"=HYPERLINK(\"http://evil\")", "+1", "-2+3", "@SUM(A1)", "\tx", "\rx", "a\x1b[31mred\x1b[0m\u202eb\nc"}
	d := parseReference(t)
	for i := range d.Workloads {
		d.Workloads[i].Label = labels[i]
	}
	d.Workloads = append(d.Workloads, d.Workloads[0])
	for i := len(d.Workloads); i < len(labels); i++ {
		w := d.Workloads[0]
		w.Label = labels[i]
		d.Workloads = append(d.Workloads, w)
	}
	for i := range d.Workloads {
		d.Workloads[i].Label = labels[i%len(labels)]
	}
	rows, err := csv.NewReader(strings.NewReader(CSV(d))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows[1:] {
		if strings.ContainsRune("=+-@\t\r", rune(row[0][0])) {
			t.Errorf("CSV cell %q would run as a formula", row[0])
		}
		if !strings.HasPrefix(row[0], "'") && strings.ContainsAny(row[0][:1], "=+-@") {
			t.Errorf("CSV cell %q not neutralised", row[0])
		}
	}
	md := Markdown(d)
	for _, r := range md {
		if r != '\n' && (r < 0x20 || r == 0x7f || r == '\u202e') {
			t.Fatalf("Markdown carries control character %U", r)
		}
	}
}
