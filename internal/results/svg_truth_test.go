package results

import (
	"encoding/xml"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// svgText is one <text> element: where it starts, how it is anchored, its content and
// whether it is squeezed to a length.
type svgText struct {
	x       float64
	anchor  string
	size    float64
	bold    bool
	fitted  bool
	content string
}

func svgTexts(t *testing.T, svg string) (width float64, texts []svgText) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(svg))
	var cur *svgText
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return width, texts
		}
		if err != nil {
			t.Fatal(err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range e.Attr {
				attr[a.Name.Local] = a.Value
			}
			switch e.Name.Local {
			case "svg":
				width, _ = strconv.ParseFloat(attr["width"], 64)
			case "text":
				x, _ := strconv.ParseFloat(attr["x"], 64)
				size := 12.0
				if s, ok := attr["font-size"]; ok {
					size, _ = strconv.ParseFloat(s, 64)
				}
				_, rotated := attr["transform"]
				if rotated {
					continue
				}
				cur = &svgText{x: x, anchor: attr["text-anchor"], size: size, bold: attr["font-weight"] == "bold", fitted: attr["textLength"] != ""}
			}
		case xml.CharData:
			if cur != nil {
				cur.content += string(e)
			}
		case xml.EndElement:
			if e.Name.Local == "text" && cur != nil {
				texts = append(texts, *cur)
				cur = nil
			}
		}
	}
}

// Nothing is cut at any width: every line of text (titles, subtitles, the legend, panel
// headings) ends inside the chart, for one workload, several, several objectives and a long
// label (the one-workload chart cut its subtitle and legend).
func TestSVGCutsNothing(t *testing.T) {
	t.Parallel()
	one := parseReference(t)
	one.Workloads = one.Workloads[:1]
	long := readRecorded(t)
	long.Workloads[0].Label = strings.Repeat("a very long workload label ", 4)
	long.Experiment.Model = "organisation/a-model-with-a-rather-long-name-Instruct-2507-AWQ-INT4"
	for name, d := range map[string]*Document{"one workload": one, "reference": parseReference(t), "two objectives": readRecorded(t), "long names": long} {
		width, texts := svgTexts(t, SVG(d))
		for _, tx := range texts {
			if tx.anchor != "" || tx.fitted {
				continue // centred and end-anchored labels sit inside their panel; fitted ones are squeezed
			}
			if end := tx.x + textWidth(tx.content, tx.size, tx.bold); end > width {
				t.Errorf("%s: %q ends at %.0f, past the width %.0f", name, tx.content, end, width)
			}
		}
	}
}

// Every objective is drawn with its threshold, one panel each; trials at one concurrency
// share one x (no spread suggesting fractional concurrency); a probe stopped early is a
// lower bound at its value.
func TestSVGEveryObjectiveNoJitter(t *testing.T) {
	t.Parallel()
	d := readRecorded(t)
	svg := SVG(d)
	c := svgCounts(t, svg)
	if c["g.workload"] != 2 || c["line.threshold"] != 2 {
		t.Errorf("panels %d, thresholds %d; want one each per objective (2)", c["g.workload"], c["line.threshold"])
	}
	for _, want := range []string{"TTFT p95 (ms)", "ITL p95 (ms)", "SLO &lt; 300 ms", "SLO &lt; 1000 ms",
		"probe 1 (stopped early) at concurrency 8: TTFT p95 at least", "bound by p95 TTFT"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	// Markers' x: the recorded run has two confirmation trials at 2, 3, 4 and 5; within a
	// panel each concurrency's markers must share one x.
	marker := regexp.MustCompile(`<circle class="passing" cx="([0-9.]+)"[^>]*><title>[^<]* at concurrency (\d+):`)
	panels := strings.Split(svg, `<g class="workload"`)[1:]
	for i, panel := range panels {
		xs := map[string]map[string]bool{}
		for _, m := range marker.FindAllStringSubmatch(panel, -1) {
			if xs[m[2]] == nil {
				xs[m[2]] = map[string]bool{}
			}
			xs[m[2]][m[1]] = true
		}
		if len(xs) < 3 {
			t.Errorf("panel %d: markers at %d concurrencies, want at least 3", i, len(xs))
		}
		for conc, set := range xs {
			if len(set) != 1 {
				t.Errorf("panel %d: concurrency %s drawn at %d x positions %v", i, conc, len(set), set)
			}
		}
	}
}

// Markers that land on each other at one concurrency carry a count: the reference's 8K / 1K
// and 16K / 2K sides are three trials each within a few pixels.
func TestSVGCountsStackedMarkers(t *testing.T) {
	t.Parallel()
	svg := SVG(parseReference(t))
	if n := strings.Count(svg, `>×3</text>`); n != 4 {
		t.Errorf("%d stacks of three, want 4 (both sides of 8K / 1K and 16K / 2K)", n)
	}
}
