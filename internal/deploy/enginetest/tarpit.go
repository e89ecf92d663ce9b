package enginetest

import (
	"io"
	"net"
	"testing"
)

// Tarpit listens on a loopback port that accepts connections and never says a word, like a
// firewall tarpit or a hung daemon, and returns its host:port. Everything stops with the test.
func Tarpit(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	tb.Cleanup(func() { close(done); ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				go func() { _, _ = io.Copy(io.Discard, c) }()
				<-done
			}()
		}
	}()
	return ln.Addr().String()
}
