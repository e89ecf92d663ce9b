package load

// Read lag: how far behind the client reads what the socket already holds. A client short of
// CPU (a CPU quota, a loaded machine, too many streams for one process) leaves chunks in the
// socket's receive queue while the server has long sent them, and every timestamp it takes
// after that (first token, last token) is late by as much: the server is measured slower
// than it is. The kernel stamps each received segment (SO_TIMESTAMPNS); a read that returns
// data learns the stamp of the newest segment it took, and the read's lag is its return time
// minus that stamp. The newest segment waited least, so the lag is a lower bound of how long
// that read's data waited: it never flags a client that kept up.

import (
	"net"
	"sync/atomic"
	"time"
)

// timedReads is one connection's read timing, written by the connection's reader and read
// by the request once its response has ended.
type timedReads struct {
	worstNs atomic.Int64
	count   atomic.Int64
}

// record adds one read whose data the kernel stamped at stamp and the client took at now.
func (t *timedReads) record(now, stamp time.Time) {
	lag := max(0, now.Sub(stamp).Nanoseconds())
	t.count.Add(1)
	for {
		w := t.worstNs.Load()
		if lag <= w || t.worstNs.CompareAndSwap(w, lag) {
			return
		}
	}
}

// reset forgets earlier reads: a connection handed to a new request starts afresh.
func (t *timedReads) reset() {
	t.worstNs.Store(0)
	t.count.Store(0)
}

// worst is the longest lag and how many reads were timed.
func (t *timedReads) worst() (time.Duration, int) {
	return time.Duration(t.worstNs.Load()), int(t.count.Load())
}

// timedConn is a connection whose reads are timed (readlag_linux.go).
type timedConn interface {
	net.Conn
	readTimes() *timedReads
}

// readTiming is the read timing of a connection the transport dialled (through TLS too);
// nil for one that keeps none.
func readTiming(c net.Conn) *timedReads {
	if tc, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = tc.NetConn()
	}
	if tc, ok := c.(timedConn); ok {
		return tc.readTimes()
	}
	return nil
}
