//go:build linux

package load

import (
	"io"
	"net"
	"testing"
	"time"
)

// Data left waiting in the socket is seen as lag: the kernel stamped it on arrival, and a
// read 50 ms later reports at least those 50 ms. A read that was already waiting when the
// data came reports less than that.
func TestReadLagSeesDataLeftInTheSocket(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conn := timeReads(raw)
	defer conn.Close()
	reads := readTiming(conn)
	if reads == nil {
		t.Fatal("a TCP connection on Linux keeps no read timing")
	}
	srv := <-accepted
	if srv == nil {
		t.Fatal("accept failed")
	}
	defer srv.Close()

	const waited = 50 * time.Millisecond
	if _, err := srv.Write([]byte("left waiting")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(waited)
	buf := make([]byte, 64)
	n, err := conn.Read(buf)
	if err != nil || string(buf[:n]) != "left waiting" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	lag, count := reads.worst()
	if count != 1 || lag < waited {
		t.Fatalf("lag %s over %d reads; want at least %s over 1", lag, count, waited)
	}

	reads.reset()
	go func() {
		time.Sleep(20 * time.Millisecond)
		_, _ = srv.Write([]byte("read at once"))
	}()
	if n, err = conn.Read(buf); err != nil || string(buf[:n]) != "read at once" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if fresh, count := reads.worst(); count != 1 || fresh >= lag {
		t.Errorf("a read already waiting lagged %s over %d reads, not less than the %s of data left waiting", fresh, count, lag)
	}

	srv.Close()
	if _, err := conn.Read(buf); err != io.EOF {
		t.Errorf("after the peer closed: %v, want io.EOF", err)
	}
}
