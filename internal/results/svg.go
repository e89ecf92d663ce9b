package results

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Chart geometry in SVG user units (px at 100 % zoom). Panels wrap after svgColumns so a
// document with many workloads stays readable on a page.
const (
	svgColumns   = 3
	svgMargin    = 24.0
	svgHeaderH   = 96.0
	svgPanelW    = 380.0
	svgPanelH    = 300.0
	svgPanelGap  = 20.0
	svgPlotLeft  = 62.0 // room for y tick labels and the axis title
	svgPlotRight = 18.0
	svgPlotTop   = 44.0 // room for the panel title and the boundary line
	svgPlotBot   = 50.0 // room for x tick labels and the axis title
	svgJitter    = 12.0 // horizontal spread of trials run at the same concurrency

	colorPassing   = "#1b7f3b"
	colorFailing   = "#c62828"
	colorThreshold = "#d35400"
	colorGrid      = "#e3e3e3"
	colorAxis      = "#444444"
	colorText      = "#222222"
	colorMuted     = "#666666"
)

// SVG renders, per workload, every confirmation trial's value of the first objective against
// the concurrency it ran at, with its threshold, passing and failing sides told apart by
// colour and by shape (so it reads in greyscale too), labelled axes and a legend.
func SVG(d *Document) string {
	objs := d.Objectives()
	primary := SLO{Metric: MetricTTFT, Percentile: 95}
	if len(objs) > 0 {
		primary = objs[0]
	}
	value := primary.Value
	metric := primary.MetricShort()
	if !primary.Info().PerTrial {
		metric += " p" + formatFloat(primary.Percentile)
	}
	threshold, hasThreshold, unit := primary.ThresholdMs, len(objs) > 0, primary.Unit()
	if !chartable(d, primary) {
		// An objective the recorded trials cannot express: chart what the design asks for
		// first (p95 TTFT) and draw no threshold rather than a misleading one.
		value = func(t Trial) (float64, error) { return t.TTFTMs.P95, nil }
		metric, hasThreshold, unit = "TTFT p95", false, "ms"
	}

	n := len(d.Workloads)
	cols := min(max(n, 1), svgColumns)
	rows := max((n+svgColumns-1)/svgColumns, 1)
	width := 2*svgMargin + float64(cols)*svgPanelW + float64(cols-1)*svgPanelGap
	height := svgHeaderH + float64(rows)*svgPanelH + float64(rows-1)*svgPanelGap + svgMargin

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12" fill="%s">`+"\n",
		num(width), num(height), num(width), num(height), colorText)
	title := metric + " against concurrency"
	if d.Experiment.Model != "" {
		title += " · " + d.Experiment.Model
	}
	fmt.Fprintf(&b, "<title>%s</title>\n", esc(title))
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="#ffffff"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%s" y="34" font-size="18" font-weight="bold">%s</text>`+"\n", num(svgMargin), esc(title))
	parts := make([]string, len(objs))
	for i, s := range objs {
		parts[i] = s.String()
	}
	sub := "SLO: " + strings.Join(parts, " and ") + " in every confirmation trial"
	if !hasThreshold {
		sub += " (not charted: the trials do not record it)"
	}
	fmt.Fprintf(&b, `<text x="%s" y="56" fill="%s">%s</text>`+"\n", num(svgMargin), colorMuted, esc(sub))
	allTrials := false
	for _, w := range d.Workloads {
		allTrials = allTrials || len(w.AllTrials) > 0
	}
	writeLegend(&b, svgMargin, 80, hasThreshold, allTrials)

	if n == 0 {
		fmt.Fprintf(&b, `<text x="%s" y="%s" fill="%s">No workloads in this document.</text>`+"\n", num(svgMargin), num(svgHeaderH+40), colorMuted)
	}
	for i, w := range d.Workloads {
		x := svgMargin + float64(i%svgColumns)*(svgPanelW+svgPanelGap)
		y := svgHeaderH + float64(i/svgColumns)*(svgPanelH+svgPanelGap)
		writePanel(&b, i, x, y, w, value, func(t Trial) string { return Verdict(objs, t) }, metric, unit, threshold, hasThreshold)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func writeLegend(b *strings.Builder, x, y float64, withThreshold, allTrials bool) {
	fmt.Fprintf(b, `<g id="legend" transform="translate(%s %s)">`+"\n", num(x), num(y))
	if allTrials {
		fmt.Fprintf(b, `%s<text x="12" y="4">confirmation trial met</text>`+"\n", passMarker(0, 0, ""))
		fmt.Fprintf(b, `%s<text x="172" y="4">missed</text>`+"\n", failMarker(160, 0, ""))
		fmt.Fprintf(b, `%s%s<text x="272" y="4">probe met / missed</text>`+"\n",
			probeMarker(240, 0, colorPassing, "passing probe", ""), probeMarker(256, 0, colorFailing, "failing probe", ""))
	} else {
		fmt.Fprintf(b, `%s<text x="12" y="4">passing side (max. passing concurrency)</text>`+"\n", passMarker(0, 0, ""))
		fmt.Fprintf(b, `%s<text x="282" y="4">failing side (first failing concurrency)</text>`+"\n", failMarker(270, 0, ""))
	}
	if withThreshold {
		fmt.Fprintf(b, `<line x1="530" y1="0" x2="558" y2="0" stroke="%s" stroke-width="2" stroke-dasharray="6 4"/><text x="566" y="4">SLO threshold</text>`+"\n", colorThreshold)
	}
	b.WriteString("</g>\n")
}

type point struct {
	c     int
	v     float64
	pass  bool
	label string // for the tooltip: "passing side, trial 2" or "probe"
	probe bool
	bound bool // a failed probe stopped early: the value is at least this
	dx    float64
}

// chartPoints are the workload's trials to draw: every trial the search ran when the
// document lists them (probes hollow), else the confirmation trials of both sides.
func chartPoints(w Workload, value func(Trial) (float64, error), verdict func(Trial) string, threshold float64, hasThreshold bool) []point {
	var pts []point
	if len(w.AllTrials) == 0 {
		for _, st := range w.Trials() {
			v, err := value(st.Trial)
			if err != nil || st.Concurrency == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			pts = append(pts, point{c: st.Concurrency, v: v, pass: st.Side == SidePassing,
				label: fmt.Sprintf("%s side, trial %d", st.Side, st.Trial.Trial)})
		}
		return pts
	}
	for _, t := range w.AllTrials {
		v, err := value(t)
		if err != nil || t.Concurrency == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		p := point{c: t.Concurrency, v: v, probe: t.Kind == "probe", label: fmt.Sprintf("%s %d", t.Kind, t.Trial)}
		switch t.Verdict {
		case "pass", "fail":
			p.pass = t.Verdict == "pass"
		default:
			p.pass = verdict(t) == "pass"
		}
		if t.StoppedEarly && !p.pass {
			// What finished before the stop understates the metric; the stop proved the
			// objective missed, so draw it no better than the threshold.
			p.bound, p.label = true, p.label+" (stopped early)"
			if hasThreshold {
				p.v = max(p.v, threshold)
			}
		}
		pts = append(pts, p)
	}
	return pts
}

// chartable reports whether the trials record s's value (a document always has some
// trials that do, or none at all).
func chartable(d *Document, s SLO) bool {
	for _, w := range d.Workloads {
		for _, st := range w.Trials() {
			if _, err := s.Value(st.Trial); err == nil {
				return true
			}
		}
	}
	_, err := s.Value(Trial{})
	return err == nil
}

func writePanel(b *strings.Builder, index int, x0, y0 float64, w Workload, value func(Trial) (float64, error), verdict func(Trial) string, metric, valueUnit string, threshold float64, hasThreshold bool) {
	pts := chartPoints(w, value, verdict, threshold, hasThreshold)
	maxC, maxV := 1, 0.0
	groups := map[[2]int][]int{} // (verdict, concurrency) -> indices into pts, for jitter
	for i, p := range pts {
		key := [2]int{boolCount(!p.pass), p.c}
		groups[key] = append(groups[key], i)
		maxC = max(maxC, p.c)
		maxV = max(maxV, p.v)
	}
	for _, idx := range groups {
		for k, i := range idx {
			pts[i].dx = (float64(k) - float64(len(idx)-1)/2) * svgJitter
		}
	}
	for _, c := range []*int{w.MaximumPassingConcurrency, w.FirstFailingConcurrency} {
		if c != nil {
			maxC = max(maxC, *c)
		}
	}
	if hasThreshold && !math.IsNaN(threshold) && !math.IsInf(threshold, 0) {
		maxV = max(maxV, threshold)
	}

	// Seconds read better than five-digit milliseconds; ITL SLOs stay in ms.
	scale, unit := 1.0, valueUnit
	if unit == "ms" && maxV >= 2000 {
		scale, unit = 1000, "s"
	}
	yStep := niceStep(maxV / scale * 1.1 / 5)
	yTicks := math.Ceil(maxV / scale * 1.1 / yStep)
	if !(yTicks >= 1 && yTicks <= 20) {
		// Nothing above zero, or a value so large the axis overflows: fall back to a unit axis
		// rather than loop over an unbounded number of ticks.
		yTicks, yStep = 5, 0.2
	}
	yMax := yTicks * yStep
	// One spare unit right of the highest concurrency keeps its markers off the frame; the
	// axis then ends on a whole tick so grid lines stay inside the plot.
	xStep := math.Max(1, math.Round(niceStep(float64(maxC+1)/8)))
	xTicks := math.Ceil(float64(maxC+1) / xStep)
	xMax := xTicks * xStep

	plotX, plotY := x0+svgPlotLeft, y0+svgPlotTop
	plotW, plotH := svgPanelW-svgPlotLeft-svgPlotRight, svgPanelH-svgPlotTop-svgPlotBot
	px := func(c float64) float64 { return plotX + c/xMax*plotW }
	py := func(v float64) float64 { return plotY + plotH - v/scale/yMax*plotH }

	fmt.Fprintf(b, `<g class="workload" id="%s">`+"\n", esc(svgID(index, w.Label)))
	heading := w.Label
	if w.ConfiguredISL > 0 || w.ConfiguredOSL > 0 {
		heading += fmt.Sprintf(" (ISL %d / OSL %d)", w.ConfiguredISL, w.ConfiguredOSL)
	}
	fmt.Fprintf(b, `<text x="%s" y="%s" font-size="14" font-weight="bold">%s</text>`+"\n", num(plotX), num(y0+16), esc(heading))
	fmt.Fprintf(b, `<text x="%s" y="%s" fill="%s">max. passing %s · first failing %s</text>`+"\n", num(plotX), num(y0+32), colorMuted,
		esc(boundaryText(w.MaximumPassingConcurrency, "none")), esc(boundaryText(w.FirstFailingConcurrency, "none")))

	// Grid and tick labels.
	for i := 0.0; i <= yTicks; i++ {
		v := i * yStep
		y := py(v * scale)
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`, num(plotX), num(y), num(plotX+plotW), num(y), colorGrid)
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="end" fill="%s">%s</text>`+"\n", num(plotX-6), num(y+4), colorMuted, tick(v, yStep))
	}
	for i := 0.0; i <= xTicks; i++ {
		c := i * xStep
		x := px(c)
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`, num(x), num(plotY), num(x), num(plotY+plotH), colorGrid)
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle" fill="%s">%s</text>`+"\n", num(x), num(plotY+plotH+16), colorMuted, tick(c, xStep))
	}
	fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s" fill="none" stroke="%s"/>`+"\n", num(plotX), num(plotY), num(plotW), num(plotH), colorAxis)
	fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle">Concurrency (users in flight)</text>`+"\n", num(plotX+plotW/2), num(plotY+plotH+38))
	ly := plotY + plotH/2
	fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle" transform="rotate(-90 %s %s)">%s (%s)</text>`+"\n",
		num(x0+16), num(ly), num(x0+16), num(ly), esc(metric), unit)

	if hasThreshold {
		y := py(threshold)
		fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s" fill-opacity="0.06"/>`+"\n", num(plotX), num(plotY), num(plotW), num(y-plotY), colorThreshold)
		fmt.Fprintf(b, `<line class="threshold" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2" stroke-dasharray="6 4"/>`+"\n",
			num(plotX), num(y), num(plotX+plotW), num(y), colorThreshold)
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="start" fill="%s">SLO %s %s</text>`+"\n",
			num(plotX+6), num(y-6), colorThreshold, formatFloat(threshold/scale), unit)
	}

	for _, p := range pts {
		at := ""
		if p.bound {
			at = "at least "
		}
		tip := fmt.Sprintf("%s at concurrency %d: %s %s%s %s", p.label, p.c, metric, at, fixed(p.v, 1), valueUnit)
		x, y := px(float64(p.c))+p.dx, py(p.v)
		switch {
		case p.probe && p.pass:
			b.WriteString(probeMarker(x, y, colorPassing, "passing probe", tip))
		case p.probe:
			b.WriteString(probeMarker(x, y, colorFailing, "failing probe", tip))
		case p.pass:
			b.WriteString(passMarker(x, y, tip))
		default:
			b.WriteString(failMarker(x, y, tip))
		}
		b.WriteString("\n")
	}
	b.WriteString("</g>\n")
}

// probeMarker is a hollow ring: a single probe trial, told apart from confirmation trials.
func probeMarker(x, y float64, color, class, tip string) string {
	return fmt.Sprintf(`<circle class="%s" cx="%s" cy="%s" r="4" fill="none" stroke="%s" stroke-width="1.5">%s</circle>`,
		class, num(x), num(y), color, tooltip(tip))
}

func passMarker(x, y float64, tip string) string {
	return fmt.Sprintf(`<circle class="passing" cx="%s" cy="%s" r="5" fill="%s" fill-opacity="0.85" stroke="#ffffff" stroke-width="1">%s</circle>`,
		num(x), num(y), colorPassing, tooltip(tip))
}

func failMarker(x, y float64, tip string) string {
	const r = 5
	return fmt.Sprintf(`<path class="failing" d="M%s %sL%s %sM%s %sL%s %s" stroke="%s" stroke-width="2.5" stroke-linecap="round">%s</path>`,
		num(x-r), num(y-r), num(x+r), num(y+r), num(x-r), num(y+r), num(x+r), num(y-r), colorFailing, tooltip(tip))
}

func tooltip(s string) string {
	if s == "" {
		return ""
	}
	return "<title>" + esc(s) + "</title>"
}

// niceStep rounds a raw step up to 1, 2 or 5 times a power of ten, so tick labels are round.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// tick writes v with as many decimals as the step needs (2 s steps: "4"; 0.5 s steps: "4.5").
func tick(v, step float64) string {
	if math.Abs(v) >= 1e15 {
		return strconv.FormatFloat(v, 'g', 3, 64) // no axis of real latencies gets here
	}
	decimals := 0
	if step < 1 {
		decimals = int(math.Ceil(-math.Log10(step)))
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

// num writes a coordinate with one decimal, enough at screen resolution and stable in goldens.
// Whatever the document holds, a coordinate stays a short finite number: a value far off the
// axis is drawn just outside the plot rather than written out with hundreds of digits.
func num(v float64) string {
	const limit = 1e5 // far outside any panel, well inside what viewers handle
	switch {
	case math.IsNaN(v):
		v = 0
	case v > limit:
		v = limit
	case v < -limit:
		v = -limit
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func esc(s string) string {
	var buf bytes.Buffer
	// EscapeText only fails when the writer does; a bytes.Buffer does not.
	_ = xml.EscapeText(&buf, []byte(s))
	return buf.String()
}

// svgID turns a workload label into a unique XML id for styling and linking: the first
// workload "2K / 512" becomes "workload-1-2K-512".
func svgID(index int, label string) string {
	var b strings.Builder
	b.WriteString("workload-" + strconv.Itoa(index+1))
	inWord := false
	for _, r := range label {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			if !inWord {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			inWord = true
			continue
		}
		inWord = false
	}
	return b.String()
}
