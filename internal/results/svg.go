package results

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Chart geometry in SVG user units (px at 100 % zoom). Panels wrap after svgColumns so a
// document with many workloads stays readable on a page; with several objectives each
// workload is one row, one panel per objective.
const (
	svgColumns  = 3
	svgMargin   = 24.0
	svgPanelW   = 380.0
	svgPanelH   = 314.0
	svgPanelGap = 20.0
	// Markers of different kinds closer than svgMarkerClash pixels at one level stand
	// svgMarkerShift pixels either side of it.
	svgMarkerClash = 10.0
	svgMarkerShift = 6.0
	svgPlotLeft    = 62.0 // room for y tick labels and the axis title
	svgPlotRight   = 18.0
	svgPlotTop     = 58.0 // room for the panel title and the boundary's two lines
	svgPlotBot     = 50.0 // room for x tick labels and the axis title
	svgArrow       = 16.0 // length of the arrow of a value that is a lower bound

	colorPassing   = "#1b7f3b"
	colorFailing   = "#c62828"
	colorThreshold = "#d35400"
	colorGrid      = "#e3e3e3"
	colorAxis      = "#444444"
	colorText      = "#222222"
	colorMuted     = "#666666"
)

// textWidth estimates how wide a line of text is drawn, generously (DejaVu Sans averages
// about 0.55 em a character, bold a little more), so the chart is sized to hold it.
func textWidth(s string, size float64, bold bool) float64 {
	em := 0.62
	if bold {
		em = 0.7
	}
	return float64(utf8.RuneCountInString(s)) * size * em
}

// fitText writes a line of text that never runs past maxWidth: when the estimate says it
// would, textLength squeezes it to fit instead of letting the frame cut it.
func fitText(x, y float64, s string, maxWidth, size float64, bold bool, attrs string) string {
	fit := ""
	if textWidth(s, size, bold) > maxWidth {
		fit = fmt.Sprintf(` textLength="%s" lengthAdjust="spacingAndGlyphs"`, num(maxWidth))
	}
	return fmt.Sprintf(`<text x="%s" y="%s"%s%s>%s</text>`, num(x), num(y), attrs, fit, esc(s))
}

// chartObjective is one objective as the chart draws it.
type chartObjective struct {
	slo          SLO
	label        string // "TTFT p95"
	unit         string
	hasThreshold bool
	value        func(Trial) (float64, error)
	// met says whether a trial met this objective; ok false when it cannot be told.
	met func(Trial) (met, ok bool)
	// only: the document's one objective, so a trial that failed without saying why (a
	// probe stopped early) missed this one.
	only bool
}

// SVG renders, per workload and per objective, every trial's value of the objective against
// the concurrency it ran at, with the objective's threshold: met and missed told apart by
// colour and by shape (so it reads in greyscale too), probes as rings, a value that is only a
// lower bound (a probe stopped early) with an arrow up, every trial at its own concurrency
// (no horizontal spread that would suggest fractional concurrency), labelled axes and a
// legend. The chart is as wide as its longest line of text, so nothing is cut.
func SVG(d *Document) string {
	objs := d.Objectives()
	var charted []chartObjective
	var notCharted []string
	for _, s := range objs {
		if !chartable(d, s) {
			notCharted = append(notCharted, s.String())
			continue
		}
		label := s.MetricShort()
		if !s.Info().PerTrial {
			label += " p" + formatFloat(s.Percentile)
		}
		charted = append(charted, chartObjective{slo: s, label: label, unit: s.Unit(), hasThreshold: true, value: s.Value, met: s.Met, only: len(objs) == 1})
	}
	if len(charted) == 0 {
		// No objective the recorded trials can express: chart what the design asks for first
		// (p95 TTFT) and draw no threshold rather than a misleading one.
		charted = []chartObjective{{label: "TTFT p95", unit: "ms",
			value: func(t Trial) (float64, error) { return t.TTFTMs.P95, nil },
			met: func(t Trial) (bool, bool) {
				v := Verdict(objs, t)
				return v == VerdictPass, v != VerdictUnknown
			}}}
	}

	n := len(d.Workloads)
	panels := n * len(charted)
	cols := min(max(n, 1), svgColumns)
	if len(charted) > 1 {
		cols = len(charted)
	}
	rows := max((panels+cols-1)/cols, 1)

	// The x axis is each workload's own; the title names it when they share one.
	against := "the level searched"
	if a := documentAxis(d); a != nil {
		against = a.Name()
		if _, rate := a.(rateAxis); rate {
			against = "offered request rate"
		}
	}
	title := charted[0].label + " against " + against
	if len(charted) > 1 {
		title = "Every objective against " + against
	}
	if d.Experiment.Model != "" {
		title += " · " + d.Experiment.Model
	}
	parts := make([]string, len(objs))
	for i, s := range objs {
		parts[i] = s.String()
	}
	sub := "SLO: " + strings.Join(parts, " and ") + " in every confirmation trial"
	if len(notCharted) > 0 {
		sub += " (not charted: the trials do not record " + strings.Join(notCharted, ", ") + ")"
	}
	allTrials, probes, stopped, lagged := false, false, false, false
	for _, w := range d.Workloads {
		allTrials = allTrials || len(w.AllTrials) > 0
		for _, t := range w.AllTrials {
			stopped = stopped || t.StoppedEarly
		}
		for _, p := range chartPoints(w, charted[0]) {
			lagged = lagged || p.lagged
			probes = probes || p.probe
		}
	}
	legend := legendItems(allTrials, probes, stopped, lagged, charted[0].hasThreshold)

	// A panel is as wide as its heading and its boundary lines need, so none is squeezed.
	panelW := svgPanelW
	for _, w := range d.Workloads {
		for _, line := range panelLines(w, objs) {
			panelW = max(panelW, svgPlotLeft+textWidth(line.text, line.size, line.bold)+4)
		}
	}
	gridW := float64(cols)*panelW + float64(cols-1)*svgPanelGap
	width := 2*svgMargin + max(gridW, textWidth(title, 18, true), textWidth(sub, 12, false))
	// Panels fill the width the title needs, so a single workload's chart is not left in
	// one half of the canvas.
	panelW = max(panelW, (width-2*svgMargin-float64(cols-1)*svgPanelGap)/float64(cols))
	// The legend wraps onto as many lines as the width needs.
	var legendLines [][]legendItem
	lineW := 0.0
	for _, it := range legend {
		if len(legendLines) == 0 || lineW+it.width > width-2*svgMargin {
			legendLines = append(legendLines, nil)
			lineW = 0
		}
		legendLines[len(legendLines)-1] = append(legendLines[len(legendLines)-1], it)
		lineW += it.width
	}
	headerH := 74 + 22*float64(len(legendLines))
	height := headerH + float64(rows)*svgPanelH + float64(rows-1)*svgPanelGap + svgMargin

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12" fill="%s">`+"\n",
		num(width), num(height), num(width), num(height), colorText)
	fmt.Fprintf(&b, "<title>%s</title>\n", esc(title))
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="#ffffff"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%s" y="34" font-size="18" font-weight="bold">%s</text>`+"\n", num(svgMargin), esc(title))
	fmt.Fprintf(&b, `<text x="%s" y="56" fill="%s">%s</text>`+"\n", num(svgMargin), colorMuted, esc(sub))
	b.WriteString(`<g id="legend">` + "\n")
	for i, line := range legendLines {
		x, y := svgMargin, 80+22*float64(i)
		for _, it := range line {
			b.WriteString(it.draw(x+6, y))
			b.WriteString("\n")
			x += it.width
		}
	}
	b.WriteString("</g>\n")

	if n == 0 {
		fmt.Fprintf(&b, `<text x="%s" y="%s" fill="%s">No workloads in this document.</text>`+"\n", num(svgMargin), num(headerH+40), colorMuted)
	}
	for i, w := range d.Workloads {
		for j, o := range charted {
			k := i*len(charted) + j
			x := svgMargin + float64(k%cols)*(panelW+svgPanelGap)
			y := headerH + float64(k/cols)*(svgPanelH+svgPanelGap)
			writePanel(&b, i, x, y, panelW, w, o, objs)
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// legendItem is one entry of the legend: its marker and text, drawn at (x, y).
type legendItem struct {
	width float64
	draw  func(x, y float64) string
}

func legendItems(allTrials, probes, stopped, lagged, withThreshold bool) []legendItem {
	item := func(text string, markerW float64, marker func(x, y float64) string) legendItem {
		return legendItem{width: markerW + 8 + textWidth(text, 12, false) + 22, draw: func(x, y float64) string {
			return marker(x, y) + fmt.Sprintf(`<text x="%s" y="%s">%s</text>`, num(x+markerW), num(y+4), esc(text))
		}}
	}
	met, missed := "objective met", "missed"
	if !allTrials {
		met, missed = "confirmation trial met the objective", "missed it"
	}
	out := []legendItem{
		item(met, 12, func(x, y float64) string { return passMarker(x, y, "") }),
		item(missed, 12, func(x, y float64) string { return failMarker(x, y, "") }),
	}
	if probes {
		out = append(out, item("probe met / missed", 30, func(x, y float64) string {
			return probeMarker(x, y, colorPassing, "passing probe", "") + probeMarker(x+16, y, colorFailing, "failing probe", "")
		}))
	}
	if lagged {
		out = append(out, item("met, but the server did not keep up with the rate", 12, func(x, y float64) string { return laggedMarker(x, y, "") }))
	}
	if stopped {
		out = append(out, item("stopped early: at least this", 14, func(x, y float64) string {
			return boundArrow(x, y+6, y-10, colorFailing)
		}))
	}
	if withThreshold {
		out = append(out, item("SLO threshold", 36, func(x, y float64) string {
			return fmt.Sprintf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2" stroke-dasharray="6 4"/>`, num(x-6), num(y), num(x+24), num(y), colorThreshold)
		}))
	}
	return out
}

type point struct {
	x     float64 // the trial's level on the workload's axis
	v     float64
	met   bool
	label string // for the tooltip: "passing side, trial 2" or "probe 1"
	probe bool
	bound bool // a probe stopped early that missed the objective: the value is at least this
	// unjudged: a probe stopped early that states nothing of this objective (it stopped on
	// another); drawn grey, a lower bound too.
	unjudged bool
	// lagged: an open-loop trial that met this objective but failed because the server did
	// not keep up with its rate (guards names the guards it missed, with their figures).
	lagged bool
	guards string
}

// keptUp marks a point that met its objective while the server did not keep up.
func (p *point) keptUp(t Trial) {
	if g := t.OpenLoop.MissedGuards(); p.met && len(g) > 0 {
		p.lagged, p.guards = true, strings.Join(g, "; ")
	}
}

// chartPoints are the workload's trials to draw for one objective: every trial the search
// ran when the document lists them (probes as rings), else the confirmation trials of both
// sides, each marked by whether it met this objective.
func chartPoints(w Workload, o chartObjective) []point {
	ax := w.Axis()
	var pts []point
	if len(w.AllTrials) == 0 {
		for _, st := range w.Trials() {
			v, err := o.value(st.Trial)
			x, ok := ax.Level(st)
			if err != nil || !ok || math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			met, ok := o.met(st.Trial)
			if !ok {
				met = st.Side == SidePassing
			}
			p := point{x: x, v: v, met: met, label: fmt.Sprintf("%s side, trial %d", st.Side, st.Trial.Trial)}
			p.keptUp(st.Trial)
			pts = append(pts, p)
		}
		return pts
	}
	for _, t := range w.AllTrials {
		v, err := o.value(t)
		x, ok := ax.Level(SideTrial{Concurrency: t.Concurrency, Trial: t})
		if err != nil || !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		met, ok := o.met(t)
		if !ok && (!t.StoppedEarly || o.only) {
			met, ok = t.Verdict == VerdictPass, true
		}
		p := point{x: x, v: v, met: met, probe: t.Kind == "probe", label: fmt.Sprintf("%s %d", t.Kind, t.Trial)}
		if t.StoppedEarly {
			p.label += " (stopped early)"
			// What finished before the stop understates a missed objective: its value is a
			// lower bound, drawn with an arrow up rather than moved anywhere.
			p.bound, p.unjudged = !met, !ok
		}
		p.keptUp(t)
		pts = append(pts, p)
	}
	return pts
}

// chartable reports whether the trials record s's value (a document always has some
// trials that do, or none at all).
func chartable(d *Document, s SLO) bool {
	for _, w := range d.Workloads {
		for _, st := range append(w.Trials(), everyTrial(w)...) {
			if _, err := s.Value(st.Trial); err == nil {
				return true
			}
		}
	}
	_, err := s.Value(Trial{})
	return err == nil
}

// panelLine is one line of text above a panel's plot.
type panelLine struct {
	text string
	size float64
	bold bool
}

// panelLines are the lines above a workload's plot: its heading, then both sides of its
// boundary, then what bound it.
func panelLines(w Workload, objs []SLO) []panelLine {
	heading := w.Label
	if w.ConfiguredISL > 0 || w.ConfiguredOSL > 0 {
		heading += fmt.Sprintf(" (ISL %d / OSL %d)", w.ConfiguredISL, w.ConfiguredOSL)
	}
	by := "bound by " + boundByText(objs, w)
	if by == "bound by –" {
		by = "bound by nothing within the bounds"
	}
	return []panelLine{
		{heading, 14, true},
		{"max. passing " + capacityText(w, "none") + " · first failing " + firstFailingText(w, "none"), 12, false},
		{by, 12, false},
	}
}

func writePanel(b *strings.Builder, index int, x0, y0, panelW float64, w Workload, o chartObjective, objs []SLO) {
	ax := w.Axis()
	pts := chartPoints(w, o)
	threshold := o.slo.ThresholdMs
	maxC, maxV := 0.0, 0.0
	if ax.Whole() {
		maxC = 1
	}
	for _, p := range pts {
		maxC = max(maxC, p.x)
		maxV = max(maxV, p.v)
	}
	mp, ff := ax.Boundary()
	for _, c := range []*float64{mp, ff} {
		if c != nil {
			maxC = max(maxC, *c)
		}
	}
	if o.hasThreshold && !math.IsNaN(threshold) && !math.IsInf(threshold, 0) {
		maxV = max(maxV, threshold)
	}

	// Seconds read better than five-digit milliseconds; ITL SLOs stay in ms.
	scale, unit := 1.0, o.unit
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
	// One spare unit right of the highest concurrency (a tenth of the highest rate or
	// speed-up) keeps its markers off the frame; the axis then ends on a whole tick so grid
	// lines stay inside the plot.
	var xStep, xTicks float64
	if ax.Whole() {
		xStep = math.Max(1, math.Round(niceStep((maxC+1)/8)))
		xTicks = math.Ceil((maxC + 1) / xStep)
	} else {
		if !(maxC > 0) || math.IsInf(maxC, 0) {
			maxC = 1
		}
		xStep = niceStep(maxC * 1.1 / 6)
		xTicks = math.Ceil(maxC * 1.1 / xStep)
	}
	if !(xTicks >= 1 && xTicks <= 40) {
		xTicks, xStep = 5, math.Max(maxC, 1)/5
	}
	xMax := xTicks * xStep

	plotX, plotY := x0+svgPlotLeft, y0+svgPlotTop
	plotW, plotH := panelW-svgPlotLeft-svgPlotRight, svgPanelH-svgPlotTop-svgPlotBot
	px := func(c float64) float64 { return plotX + c/xMax*plotW }
	py := func(v float64) float64 { return plotY + plotH - v/scale/yMax*plotH }

	id := svgID(index, w.Label)
	if o.slo.Metric != "" {
		id += "-" + strings.ReplaceAll(strings.ToLower(o.label), " ", "-")
	}
	fmt.Fprintf(b, `<g class="workload" id="%s">`+"\n", esc(id))
	room := panelW - svgPlotLeft
	for i, line := range panelLines(w, objs) {
		attrs := fmt.Sprintf(` fill="%s"`, colorMuted)
		if line.bold {
			attrs = ` font-size="14" font-weight="bold"`
		}
		b.WriteString(fitText(plotX, y0+16+15*float64(i), line.text, room, line.size, line.bold, attrs))
		b.WriteString("\n")
	}

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
	fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", num(plotX+plotW/2), num(plotY+plotH+38), esc(ax.Title()))
	ly := plotY + plotH/2
	fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle" transform="rotate(-90 %s %s)">%s (%s)</text>`+"\n",
		num(x0+16), num(ly), num(x0+16), num(ly), esc(o.label), unit)

	if o.hasThreshold {
		y := py(threshold)
		// Shade the side of the threshold that misses it.
		if o.slo.Info().HigherIsBetter {
			fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s" fill-opacity="0.06"/>`+"\n", num(plotX), num(y), num(plotW), num(plotY+plotH-y), colorThreshold)
		} else {
			fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s" fill-opacity="0.06"/>`+"\n", num(plotX), num(plotY), num(plotW), num(y-plotY), colorThreshold)
		}
		fmt.Fprintf(b, `<line class="threshold" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2" stroke-dasharray="6 4"/>`+"\n",
			num(plotX), num(y), num(plotX+plotW), num(y), colorThreshold)
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="start" fill="%s">SLO %s %s %s</text>`+"\n",
			num(plotX+6), num(y-6), colorThreshold, esc(symbols[o.slo.Comparison]), formatFloat(threshold/scale), unit)
	}

	// Trials at one level share one x; where their markers land on top of each other, a
	// count says how many there are.
	type stack struct {
		n             int
		x, yMin, yMax float64
	}
	type stackKey struct {
		x    float64
		kind int
	}
	stacks := map[stackKey]*stack{}
	var order []stackKey
	for _, p := range pts {
		key := stackKey{p.x, boolCount(p.met) + 2*boolCount(p.probe) + 4*boolCount(p.lagged)}
		y := py(p.v)
		st := stacks[key]
		if st == nil {
			st = &stack{x: px(p.x), yMin: y, yMax: y}
			stacks[key] = st
			order = append(order, key)
		}
		st.n++
		st.yMin, st.yMax = min(st.yMin, y), max(st.yMax, y)
	}
	// Markers of different kinds at one level that would land on each other (a passing trial
	// at 1496.9 ms beside a failing one at 1502.4 ms) stand side by side instead, so neither
	// hides the other.
	shift := map[stackKey]float64{}
	for i, a := range order {
		for _, c := range order[i+1:] {
			sa, sc := stacks[a], stacks[c]
			if a.x == c.x && sa.yMin-sc.yMax < svgMarkerClash && sc.yMin-sa.yMax < svgMarkerClash {
				shift[a], shift[c] = -svgMarkerShift, svgMarkerShift
			}
		}
	}
	for _, key := range order {
		if st := stacks[key]; st.n > 1 && st.yMax-st.yMin < 8 {
			fmt.Fprintf(b, `<text class="stack" x="%s" y="%s" font-size="10" fill="%s">×%d</text>`+"\n", num(st.x+shift[key]+8), num(st.yMin-4), colorMuted, st.n)
		}
	}

	for _, p := range pts {
		at := ""
		if p.bound {
			at = "at least "
		}
		tip := fmt.Sprintf("%s at %s %s: %s %s%s %s", p.label, ax.Name(), ax.Text(p.x), o.label, at, fixed(p.v, 1), o.unit)
		x, y := px(p.x)+shift[stackKey{p.x, boolCount(p.met) + 2*boolCount(p.probe) + 4*boolCount(p.lagged)}], py(p.v)
		color := colorFailing
		if p.unjudged {
			color, tip = colorMuted, tip+", not judged on this objective"
		}
		if p.lagged {
			tip += ", but the server did not keep up: " + p.guards
		}
		if p.bound {
			b.WriteString(boundArrow(x, y, max(plotY, y-svgArrow-6), color))
		}
		switch {
		case p.unjudged:
			b.WriteString(probeMarker(x, y, colorMuted, "unjudged probe", tip))
		case p.lagged:
			b.WriteString(laggedMarker(x, y, tip))
		case p.probe && p.met:
			b.WriteString(probeMarker(x, y, colorPassing, "passing probe", tip))
		case p.probe:
			b.WriteString(probeMarker(x, y, colorFailing, "failing probe", tip))
		case p.met:
			b.WriteString(passMarker(x, y, tip))
		default:
			b.WriteString(failMarker(x, y, tip))
		}
		b.WriteString("\n")
	}
	b.WriteString("</g>\n")
}

// boundArrow is an arrow from a marker at (x, from) up to (x, to): the value is at least
// where the marker sits.
func boundArrow(x, from, to float64, color string) string {
	return fmt.Sprintf(`<path class="lower-bound" d="M%s %sL%s %sM%s %sL%s %sL%s %s" fill="none" stroke="%s" stroke-width="1.5" stroke-linejoin="round"/>`,
		num(x), num(from-5), num(x), num(to), num(x-4), num(to+5), num(x), num(to), num(x+4), num(to+5), color)
}

// probeMarker is a hollow ring: a single probe trial, told apart from confirmation trials.
func probeMarker(x, y float64, color, class, tip string) string {
	return fmt.Sprintf(`<circle class="%s" cx="%s" cy="%s" r="4" fill="none" stroke="%s" stroke-width="1.5">%s</circle>`,
		class, num(x), num(y), color, tooltip(tip))
}

// laggedMarker is a hollow red diamond: the trial met the objective drawn, yet failed
// because the server did not keep up with the rate it was offered.
func laggedMarker(x, y float64, tip string) string {
	const r = 5.5
	return fmt.Sprintf(`<path class="not-kept-up" d="M%s %sL%s %sL%s %sL%s %sZ" fill="#ffffff" stroke="%s" stroke-width="2">%s</path>`,
		num(x), num(y-r), num(x+r), num(y), num(x), num(y+r), num(x-r), num(y), colorFailing, tooltip(tip))
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
