package telemetry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// DefaultInterval is how often the exporters are scraped while a trial runs: DCGM and XPU
// Manager refresh their power readings about once a second at best, so more often would
// read the same value again.
const DefaultInterval = time.Second

// scrapeTimeout bounds one scrape in the background; finalTimeout the scrape after the load,
// which the trial waits for, so a hung exporter costs a trial at most that.
const (
	scrapeTimeout = 5 * time.Second
	finalTimeout  = 2 * time.Second
)

// Endpoint is one exporter to watch; Name says which in messages (the attribute and host).
type Endpoint struct {
	Name   string
	Source Source
}

// Watch scrapes every endpoint once a round: a round when it starts (before the load), one
// each interval and one when the measured requests begin (MarkMeasured), in its own
// goroutine, and a last one when it is finished (after the load).
type Watch struct {
	endpoints []Endpoint
	interval  time.Duration

	kick       chan struct{}
	stop, done chan struct{}
	cancel     context.CancelFunc

	mu     sync.Mutex
	rounds []round
	markAt time.Time
	fails  []scrapeFailures
}

// round is one scrape of every endpoint, concurrently; at is its midpoint.
type round struct {
	start, at time.Time
	readings  [][]Reading // per endpoint
	ok        []bool
}

type scrapeFailures struct {
	n     int
	first string
}

// Start begins watching; nil (which every method accepts) when there is nothing to watch.
func Start(ctx context.Context, endpoints []Endpoint, interval time.Duration) *Watch {
	if len(endpoints) == 0 {
		return nil
	}
	if interval <= 0 {
		interval = DefaultInterval
	}
	lctx, cancel := context.WithCancel(ctx)
	w := &Watch{endpoints: endpoints, interval: interval, kick: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{}), cancel: cancel, fails: make([]scrapeFailures, len(endpoints))}
	go w.loop(lctx)
	return w
}

func (w *Watch) loop(ctx context.Context) {
	defer close(w.done)
	w.scrapeRound(ctx, scrapeTimeout)
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		case <-w.kick:
		}
		w.scrapeRound(ctx, scrapeTimeout)
	}
}

// MarkMeasured notes that the measured requests begin now and asks for a round at once; it
// never waits for a scrape, so it costs the load nothing.
func (w *Watch) MarkMeasured() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.markAt = time.Now()
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// scrapeRound scrapes every endpoint concurrently and keeps the round. A scrape cut short
// by Finish is not a failure.
func (w *Watch) scrapeRound(ctx context.Context, timeout time.Duration) {
	r := round{start: time.Now(), readings: make([][]Reading, len(w.endpoints)), ok: make([]bool, len(w.endpoints))}
	errs := make([]error, len(w.endpoints))
	var wg sync.WaitGroup
	for i, e := range w.endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			r.readings[i], errs[i] = e.Source.Scrape(sctx)
			r.ok[i] = errs[i] == nil
		}()
	}
	wg.Wait()
	end := time.Now()
	if ctx.Err() != nil {
		return
	}
	r.at = r.start.Add(end.Sub(r.start) / 2)
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, err := range errs {
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("no answer within %s", timeout)
			}
			if w.fails[i].n == 0 {
				w.fails[i].first = err.Error()
			}
			w.fails[i].n++
		}
	}
	w.rounds = append(w.rounds, r)
}

// Finish stops the interval scrapes, scrapes a last round (after the load) and returns what
// was seen; nil for a nil Watch.
func (w *Watch) Finish(ctx context.Context) *Recording {
	if w == nil {
		return nil
	}
	close(w.stop)
	w.cancel()
	<-w.done
	w.scrapeRound(ctx, finalTimeout)
	w.mu.Lock()
	defer w.mu.Unlock()
	return &Recording{names: namesOf(w.endpoints), rounds: w.rounds, markAt: w.markAt, fails: w.fails}
}

func namesOf(es []Endpoint) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Name
	}
	return out
}

// Recording is every round of one trial.
type Recording struct {
	names  []string
	rounds []round
	markAt time.Time
	fails  []scrapeFailures
}

// sample is one device's reading at a time.
type sample struct {
	at time.Time
	r  Reading
}

type deviceKey struct {
	endpoint int
	exporter string
	id       string
}

// Summary turns the rounds from the one at or after the measured requests began to the
// last into the trial's figures; outputTokens divides the energy. Nil for a nil Recording.
func (rec *Recording) Summary(outputTokens int) *results.AcceleratorTelemetry {
	if rec == nil {
		return nil
	}
	out := rec.summary(outputTokens)
	for i, w := range out.Warnings {
		out.Warnings[i] = printable(w)
	}
	return out
}

func (rec *Recording) summary(outputTokens int) *results.AcceleratorTelemetry {
	out := &results.AcceleratorTelemetry{OutputTokens: outputTokens, Devices: []results.AcceleratorDevice{}}
	for i, f := range rec.fails {
		if f.n > 0 {
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s: %d of %d scrapes failed during the trial (first: %s); the figures use the others", rec.names[i], f.n, f.n+rec.okScrapes(i), f.first))
		}
	}
	var window []round
	for _, r := range rec.rounds {
		if !r.start.Before(rec.markAt) {
			window = append(window, r)
		}
	}
	if len(window) == 0 {
		out.Warnings = append(out.Warnings, "no scrape fell within the measured requests: no figures")
		return out
	}
	seen := make([]bool, len(rec.names)) // endpoints that gave a device, before any is left out as a duplicate
	for _, r := range window {
		for e, rs := range r.readings {
			seen[e] = seen[e] || len(rs) > 0
		}
	}
	window, warnings := rec.vet(window)
	out.Warnings = append(out.Warnings, warnings...)
	out.Scrapes = len(window)
	first, last := window[0].at, window[len(window)-1].at
	span := last.Sub(first).Seconds()
	out.WindowS = span

	series := map[deviceKey][]sample{}
	var keys []deviceKey
	for _, r := range window {
		for e, rs := range r.readings {
			for _, d := range rs {
				k := deviceKey{e, d.Exporter, d.Device}
				if series[k] == nil {
					keys = append(keys, k)
				}
				series[k] = append(series[k], sample{r.at, d})
			}
		}
	}
	for e, ok := range seen {
		if !ok && rec.okScrapes(e) > 0 {
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s: no series of a known exporter (DCGM exporter: DCGM_FI_DEV_POWER_USAGE…, XPU Manager: xpum_power_watts…): nothing measured there", rec.names[e]))
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].endpoint != keys[j].endpoint {
			return keys[i].endpoint < keys[j].endpoint
		}
		return keys[i].exporter+keys[i].id < keys[j].exporter+keys[j].id
	})
	for _, k := range keys {
		f, warns := figures(series[k], span, outputTokens)
		for _, warn := range warns {
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s device %s: %s", rec.names[k.endpoint], k.id, warn))
		}
		out.Devices = append(out.Devices, results.AcceleratorDevice{Endpoint: k.endpoint, Exporter: k.exporter, Device: printable(k.id), AcceleratorFigures: f})
	}
	for e, ok := range seen {
		if !ok && len(out.Devices) > 0 {
			// Its devices are missing from every sum, which would pass for all of them.
			out.Warnings = append(out.Warnings, fmt.Sprintf("the totals are unknown: %s gave no device", rec.names[e]))
			return out
		}
	}
	out.Total = total(out.Devices, window, keys, outputTokens)
	return out
}

func (rec *Recording) okScrapes(endpoint int) int {
	n := 0
	for _, r := range rec.rounds {
		if r.ok[endpoint] {
			n++
		}
	}
	return n
}

// printable replaces what a results document refuses in a name (control characters,
// bidirectional overrides) with U+FFFD: an exporter's label or an error message is not ours.
func printable(s string) string {
	return strings.Map(func(c rune) rune {
		if unicode.IsControl(c) || c >= 0x202A && c <= 0x202E || c >= 0x2066 && c <= 0x2069 || c == 0x200E || c == 0x200F {
			return unicode.ReplacementChar
		}
		return c
	}, s)
}

// figures are one device's figures over its samples; window is the span of the whole
// window in seconds. A device whose samples cover less of it (a failed scrape at either end)
// has its energy scaled from the mean power it showed, and says so.
func figures(ss []sample, window float64, outputTokens int) (results.AcceleratorFigures, []string) {
	var f results.AcceleratorFigures
	var power []sample
	var util []float64
	for _, s := range ss {
		if s.r.PowerW != nil {
			power = append(power, s)
			f.PeakPowerW = maxOf(f.PeakPowerW, *s.r.PowerW)
		}
		if s.r.UtilPercent != nil {
			util = append(util, *s.r.UtilPercent)
		}
		if s.r.MemoryBytes != nil {
			f.PeakMemoryUsedBytes = maxOf(f.PeakMemoryUsedBytes, *s.r.MemoryBytes)
		}
	}
	if len(util) > 0 {
		f.MeanUtilizationPercent = ptr(mean(util))
	}
	integral, powerSpan := trapezoids(power)
	switch {
	case len(power) == 1:
		f.MeanPowerW = power[0].r.PowerW
	case len(power) > 1 && powerSpan > 0:
		f.MeanPowerW = ptr(integral / powerSpan)
	}

	// Energy: the exporter's counter where it has one, else the power integrated.
	var warns []string
	var energy *float64
	var covered float64
	counted, cspan, cwarns := counterEnergy(ss)
	warns = append(warns, cwarns...)
	switch {
	case counted != nil:
		energy, covered = counted, cspan
		f.EnergySource = results.EnergyFromCounter
	case len(power) > 1 && powerSpan > 0:
		energy, covered = ptr(integral), powerSpan
		f.EnergySource = results.EnergyFromPower
	}
	if energy != nil && window > 0 && covered < window*0.999 {
		if covered <= 0 {
			energy, f.EnergySource = nil, ""
			warns = append(warns, "too few scrapes for its energy")
		} else {
			energy = ptr(*energy / covered * window)
			warns = append(warns, fmt.Sprintf("its scrapes covered %.1f s of the %.1f s window; its energy is scaled from that span's mean power", covered, window))
		}
	}
	f.EnergyJ = energy
	if energy != nil && outputTokens > 0 {
		f.JoulesPerOutputToken = ptr(*energy / float64(outputTokens))
	}
	return f, warns
}

// counterEnergy is the energy an exporter's counter shows over the samples that carry it,
// and the seconds they span: nil with fewer than two. A counter that goes back (the exporter
// or the driver restarted and counts from 0 again) is a reset, as Prometheus's increase()
// reads one: the value after it is the energy since the reset, and the warning says so. An
// increase no accelerator can draw (over MaxPowerW on average) makes the energy unknown.
func counterEnergy(ss []sample) (energy *float64, span float64, warns []string) {
	var prev *sample
	total := 0.0
	n := 0
	for i := range ss {
		s := &ss[i]
		if s.r.EnergyJ == nil {
			continue
		}
		if prev == nil {
			prev = s
			continue
		}
		dt := s.at.Sub(prev.at).Seconds()
		step := *s.r.EnergyJ - *prev.r.EnergyJ
		if step < 0 {
			warns = append(warns, fmt.Sprintf("its energy counter went back from %s J to %s J between two scrapes (an exporter or driver restart): "+
				"read as a reset, the value after it counted as the energy since", formatJ(*prev.r.EnergyJ), formatJ(*s.r.EnergyJ)))
			step = *s.r.EnergyJ
		}
		total += step
		span += dt
		n++
		prev = s
	}
	if n == 0 {
		return nil, 0, warns
	}
	// Over the whole span, not between two scrapes: exporters refresh the counter in steps
	// (DCGM and XPU Manager about once a second), so two scrapes close together may see a
	// whole step.
	if span > 0 && total/span > MaxPowerW {
		return nil, 0, append(warns, fmt.Sprintf("its energy counter rose by %s J in %.3g s, a mean power of %.6g W, beyond any accelerator (at most %g W): its energy is unknown",
			formatJ(total), span, total/span, MaxPowerW))
	}
	return ptr(total), span, warns
}

func formatJ(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// Physical bounds: a reading beyond them is an exporter's fault (a unit slip, a corrupted
// or misparsed value), read as unknown with a warning, never as a figure. The largest
// accelerators draw about 1.2 kW (NVIDIA B200, AMD MI355X: 1.4 kW) and hold 288 GB; the bounds
// leave room for the next generations while refusing a power in kilowatts read as watts
// (250 kW) or a memory in bytes read as KiB.
const (
	MaxPowerW       = 3000.0
	MaxMemoryBytes  = 1 << 40 // 1 TiB
	MaxUtilization  = 100
	utilizationSlop = 1e-6 // an average of tiles may round a hair above 100
)

// vet returns the window's rounds with each reading checked: a device an earlier endpoint
// already gave (the same exporter reached under two URLs) is left out, as it would be
// counted twice; a value beyond the physical bounds is removed (unknown). Each is said once
// per device in the warnings, with the notes the readings carry (a series given twice).
func (rec *Recording) vet(window []round) ([]round, []string) {
	var warns []string
	said := map[string]bool{}
	say := func(w string) {
		if !said[w] {
			said[w] = true
			warns = append(warns, w)
		}
	}
	out := make([]round, len(window))
	for i, r := range window {
		out[i] = r
		out[i].readings = make([][]Reading, len(r.readings))
		owner := map[[2]string]int{} // (exporter, device) → the endpoint counted
		for e, rs := range r.readings {
			for _, d := range rs {
				key := [2]string{d.Exporter, d.Device}
				if first, dup := owner[key]; dup && first != e {
					say(fmt.Sprintf("%s device %s is also given by %s (the same exporter under two URLs?): counted once, from %s", rec.names[e], d.Device, rec.names[first], rec.names[first]))
					continue
				}
				owner[key] = e
				name := fmt.Sprintf("%s device %s", rec.names[e], d.Device)
				for _, n := range d.Notes {
					say(name + ": " + n)
				}
				if d.PowerW != nil && *d.PowerW > MaxPowerW {
					say(fmt.Sprintf("%s: power %.6g W is beyond any accelerator (at most %g W): read as unknown", name, *d.PowerW, MaxPowerW))
					d.PowerW = nil
				}
				if d.MemoryBytes != nil && *d.MemoryBytes > MaxMemoryBytes {
					say(fmt.Sprintf("%s: memory used %.6g bytes is beyond any accelerator (at most 1 TiB): read as unknown", name, *d.MemoryBytes))
					d.MemoryBytes = nil
				}
				if d.UtilPercent != nil && *d.UtilPercent > MaxUtilization+utilizationSlop {
					say(fmt.Sprintf("%s: utilisation %.6g %% is beyond 100 %%: read as unknown", name, *d.UtilPercent))
					d.UtilPercent = nil
				}
				out[i].readings[e] = append(out[i].readings[e], d)
			}
		}
	}
	return out, warns
}

// total adds the devices up. A sum over some devices would pass for all of them, so a
// figure one device lacks is unknown in the total too.
func total(devs []results.AcceleratorDevice, window []round, keys []deviceKey, outputTokens int) results.AcceleratorFigures {
	var t results.AcceleratorFigures
	if len(devs) == 0 {
		return t
	}
	all := func(get func(results.AcceleratorFigures) *float64) bool {
		for _, d := range devs {
			if get(d.AcceleratorFigures) == nil {
				return false
			}
		}
		return true
	}
	sum := func(get func(results.AcceleratorFigures) *float64) *float64 {
		if !all(get) {
			return nil
		}
		s := 0.0
		for _, d := range devs {
			s += *get(d.AcceleratorFigures)
		}
		return &s
	}
	t.MeanPowerW = sum(func(f results.AcceleratorFigures) *float64 { return f.MeanPowerW })
	t.EnergyJ = sum(func(f results.AcceleratorFigures) *float64 { return f.EnergyJ })
	if u := sum(func(f results.AcceleratorFigures) *float64 { return f.MeanUtilizationPercent }); u != nil {
		t.MeanUtilizationPercent = ptr(*u / float64(len(devs)))
	}
	if t.EnergyJ != nil {
		t.EnergySource = devs[0].EnergySource
		for _, d := range devs {
			if d.EnergySource != t.EnergySource {
				t.EnergySource = results.EnergyMixed
			}
		}
		if outputTokens > 0 {
			t.JoulesPerOutputToken = ptr(*t.EnergyJ / float64(outputTokens))
		}
	}
	// Peaks of the sums: within one round every device was read at about the same moment.
	for _, r := range window {
		p, m := 0.0, 0.0
		np, nm := 0, 0
		for _, k := range keys {
			for _, d := range r.readings[k.endpoint] {
				if d.Exporter != k.exporter || d.Device != k.id {
					continue
				}
				if d.PowerW != nil {
					p += *d.PowerW
					np++
				}
				if d.MemoryBytes != nil {
					m += *d.MemoryBytes
					nm++
				}
			}
		}
		if np == len(keys) {
			t.PeakPowerW = maxOf(t.PeakPowerW, p)
		}
		if nm == len(keys) {
			t.PeakMemoryUsedBytes = maxOf(t.PeakMemoryUsedBytes, m)
		}
	}
	return t
}

// trapezoids integrates the power samples over time: joules, and the seconds they span.
func trapezoids(ss []sample) (joules, span float64) {
	for i := 1; i < len(ss); i++ {
		dt := ss[i].at.Sub(ss[i-1].at).Seconds()
		joules += dt * (*ss[i].r.PowerW + *ss[i-1].r.PowerW) / 2
		span += dt
	}
	return joules, span
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func maxOf(p *float64, v float64) *float64 {
	if p == nil || v > *p {
		return ptr(v)
	}
	return p
}

func ptr(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}
