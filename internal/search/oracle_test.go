package search_test

import (
	"fmt"
	"math"
	"strings"
)

// The least a search could spend, to put the cost goals in proportion. An oracle search is told
// every level's chance of failing one trial (the noise-free curve and the noise), not the trials
// themselves. It must still run the boundary's reported trials in full, and below the boundary
// every trial of the grid whose failure it cannot afford to miss: a trial it skips may be one
// the grid saw fail, and then its answer is higher than the grid's. The cheapest such search
// skips the levels whose chance is under some cut and runs, stopped once decided, every trial
// of the levels from there up to the boundary. Its expected wrong answers are the chance that a
// skipped trial fails; the cut that keeps them near 1 % sets the least a search agreeing with
// the grid in 99 % of scenarios could cost.

// oracleDraws is how many extra trials per level estimate its chance of failing (a log-normal
// fit of their values), and oracleDepth how far below the boundary the estimate goes: further
// down the chance is below any cut used here.
const (
	oracleDraws = 24
	oracleDepth = 20
)

// oracleLevel is one level below a scenario's grid boundary: its chance of failing a trial and
// what its k grid trials cost when each stops once its verdict is decided.
type oracleLevel struct{ chance, decided float64 }

type oracleScenario struct {
	floor, grid float64       // the boundary's 2k trials in full; the whole grid
	below       []oracleLevel // from the boundary down
}

func (s scenario) oracle() (oracleScenario, error) {
	c, grid, err := s.grid()
	if err != nil {
		return oracleScenario{}, err
	}
	o := oracleScenario{grid: grid}
	for _, level := range []int{c, c + 1} {
		for i := 1; level >= minC && level <= maxC && i <= confirmK; i++ {
			t, err := s.trial(level, i, false)
			if err != nil {
				return o, err
			}
			o.floor += t.Cost
		}
	}
	for g := c - 1; g >= max(minC, c-oracleDepth); g-- {
		var logs []float64
		for d := range oracleDraws {
			t, err := s.trial(g, 10000+d, false)
			if err != nil {
				return o, err
			}
			logs = append(logs, math.Log(t.Value))
		}
		mean, sd := meanSD(logs)
		l := oracleLevel{chance: 0.5 * math.Erfc((math.Log(s.thresholdMs)-mean)/(sd*math.Sqrt2))}
		for i := 1; i <= confirmK; i++ {
			t, err := s.trial(g, i, true) // the grid's own trial, stopped once decided
			if err != nil {
				return o, err
			}
			l.decided += t.Cost
		}
		o.below = append(o.below, l)
	}
	return o, nil
}

func meanSD(v []float64) (mean, sd float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(v)-1))
}

// oracleCost is the oracle's share of the grid's request-seconds over the scenarios when it
// skips levels whose chance of failing a trial is under cut, and its expected share of wrong
// answers.
func oracleCost(ss []oracleScenario, cut float64) (cost, wrong float64) {
	var spent, grid float64
	for _, o := range ss {
		spent += o.floor
		grid += o.grid
		skipping := false
		for _, l := range o.below {
			skipping = skipping || l.chance < cut
			if skipping {
				wrong += 1 - math.Pow(1-l.chance, confirmK)
				continue
			}
			spent += l.decided
		}
	}
	return spent / grid, wrong / float64(len(ss))
}

// oracleFigures states the oracle's cost on the set and on the nine more, at cuts
// around 1 % wrong answers.
func oracleFigures() (string, error) {
	var b strings.Builder
	b.WriteString("A search told every level's chance of failing a trial (boundary trials in full, below them every trial of the levels whose chance is at least the cut, stopped once decided):")
	for _, part := range []struct {
		name string
		sets []uint64
	}{{"issue's set", []uint64{benchmarkSet}}, {"nine more", moreSets}} {
		var ss []oracleScenario
		for _, set := range part.sets {
			scs, err := scenarios(set, 120)
			if err != nil {
				return "", err
			}
			for _, s := range scs {
				o, err := s.oracle()
				if err != nil {
					return "", err
				}
				ss = append(ss, o)
			}
		}
		fmt.Fprintf(&b, " %s:", part.name)
		for _, cut := range []float64{0.03, 0.02, 0.01, 0.001} {
			cost, wrong := oracleCost(ss, cut)
			fmt.Fprintf(&b, " cut %g %.1f%% (%.2f%% wrong);", cut, 100*cost, 100*wrong)
		}
	}
	return b.String(), nil
}
