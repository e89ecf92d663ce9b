package simengine

import (
	"container/heap"
	"fmt"
	"slices"
	"time"
)

// FixedService is an engine whose rate capacity is known by construction, for the tests of
// the open-loop search: Slots requests are served at once, first come first served, each for
// exactly Service, with its first token FirstToken after its service starts. Its capacity is
// Slots / Service requests per second: constant arrivals below it never queue (a slot is free
// again before the request Slots places later arrives), and arrivals above it queue without
// bound, the queue growing by (rate − capacity) per second.
type FixedService struct {
	Slots      int
	Service    time.Duration
	FirstToken time.Duration // at most Service
}

// Capacity is Slots / Service, in requests per second.
func (f FixedService) Capacity() float64 { return float64(f.Slots) / f.Service.Seconds() }

// Run serves requests arriving at the given offsets (non-decreasing) in virtual time and
// returns them in arrival order; OutputTokens is 1, since only the timing matters here.
func (f FixedService) Run(arrivals []time.Duration) ([]RequestTiming, error) {
	if f.Slots < 1 || f.Service <= 0 || f.FirstToken < 0 || f.FirstToken > f.Service {
		return nil, fmt.Errorf("simengine: fixed service needs slots ≥ 1 and 0 ≤ first token ≤ service, got %+v", f)
	}
	if !slices.IsSorted(arrivals) {
		return nil, fmt.Errorf("simengine: arrivals must not go back in time")
	}
	free := make(freeAt, f.Slots) // when each slot is free next: all at 0
	out := make([]RequestTiming, len(arrivals))
	for i, at := range arrivals {
		start := max(at, free[0])
		out[i] = RequestTiming{Index: i, Start: at, FirstToken: start + f.FirstToken, End: start + f.Service, OutputTokens: 1}
		free[0] = start + f.Service
		heap.Fix(&free, 0)
	}
	return out, nil
}

// freeAt is a min-heap of slot free times.
type freeAt []time.Duration

func (h freeAt) Len() int           { return len(h) }
func (h freeAt) Less(i, j int) bool { return h[i] < h[j] }
func (h freeAt) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *freeAt) Push(x any)        { *h = append(*h, x.(time.Duration)) }
func (h *freeAt) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
