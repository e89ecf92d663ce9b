package load

import (
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// stallChecks is how many times per stall timeout the watchdog looks for progress: a stall
// is reported between stall and stall·(1 + 1/stallChecks) after the last byte.
const stallChecks = 8

// stallWatch fails a request when no byte of it arrives for the stall timeout. A byte that
// arrives only counts (one atomic add, in the reader's goroutine); a timer that fires
// stallChecks times per timeout looks at the count. Resetting a timer on every read instead
// costs about 100 ns a streamed chunk, 5–6 % of the client's whole work per chunk at 512
// streams.
type stallWatch struct {
	progress atomic.Uint64
	every    time.Duration
	onStall  func()

	mu      sync.Mutex // the timer's callback against stop
	timer   *time.Timer
	stopped bool
	seen    uint64 // progress at the last check
	idle    int    // checks in a row without progress
}

// watchStalls starts a watchdog that calls onStall once, from the timer's goroutine, when
// kick has not been called for stall. onStall must not block.
func watchStalls(stall time.Duration, onStall func()) *stallWatch {
	w := &stallWatch{every: max(stall/stallChecks, time.Nanosecond), onStall: onStall}
	w.mu.Lock() // the first check waits for w.timer
	defer w.mu.Unlock()
	w.timer = time.AfterFunc(w.every, w.check)
	return w
}

// kick says a byte arrived.
func (w *stallWatch) kick() { w.progress.Add(1) }

func (w *stallWatch) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	if p := w.progress.Load(); p != w.seen {
		w.seen, w.idle = p, 0
	} else if w.idle++; w.idle >= stallChecks {
		w.stopped = true
		w.onStall()
		return
	}
	w.timer.Reset(w.every)
}

// stop ends the watch; onStall is not called after it returns.
func (w *stallWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.timer.Stop()
}

// reader counts every read that returns bytes as progress.
func (w *stallWatch) reader(r io.Reader) io.Reader { return &kickReader{r: r, w: w} }

type kickReader struct {
	r io.Reader
	w *stallWatch
}

func (k *kickReader) Read(p []byte) (int, error) {
	n, err := k.r.Read(p)
	if n > 0 {
		k.w.kick()
	}
	return n, err
}
