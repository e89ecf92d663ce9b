//go:build linux

package load

import (
	"io"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// stampedConn reads a TCP connection with recvmsg, taking the kernel's receive timestamp of
// each read's data (SO_TIMESTAMPNS) along with it. A connection has one reader at a time
// (the transport's), so the message header and buffers are the connection's own and a read
// allocates nothing.
type stampedConn struct {
	net.Conn
	raw   syscall.RawConn
	times timedReads

	msg   syscall.Msghdr
	iov   syscall.Iovec
	oob   [8]uint64 // control messages: one timestamp needs 32 bytes; aligned for Cmsghdr
	n     int
	errno syscall.Errno
	recv  func(fd uintptr) bool
}

// timeReads asks the kernel to stamp the connection's received data and times its reads;
// a connection that cannot be is returned as it is.
func timeReads(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return c
	}
	s := &stampedConn{Conn: tc, raw: raw}
	s.msg.Iov = &s.iov
	s.msg.Iovlen = 1
	s.msg.Control = (*byte)(unsafe.Pointer(&s.oob[0])) //nolint:gosec // G103: recvmsg's control buffer, the connection's own
	s.recv = s.recvmsg
	return s
}

func (s *stampedConn) readTimes() *timedReads { return &s.times }

// recvmsg is one attempt, on the descriptor the runtime's poller says is readable; false
// asks it to wait for more data.
func (s *stampedConn) recvmsg(fd uintptr) bool {
	for {
		s.msg.SetControllen(int(unsafe.Sizeof(s.oob)))
		r, _, e := syscall.Syscall(syscall.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&s.msg)), 0) //nolint:gosec // G103: as syscall.Recvmsg passes its header
		s.n, s.errno = int(r), e
		if e != syscall.EINTR {
			return e != syscall.EAGAIN
		}
	}
}

func (s *stampedConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.iov.Base = &p[0]
	s.iov.SetLen(len(p))
	err := s.raw.Read(s.recv)
	now := time.Now()
	s.iov.Base = nil
	switch {
	case err != nil:
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: s.LocalAddr(), Addr: s.RemoteAddr(), Err: err}
	case s.errno != 0:
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: s.LocalAddr(), Addr: s.RemoteAddr(), Err: os.NewSyscallError("recvmsg", s.errno)}
	case s.n == 0:
		return 0, io.EOF
	}
	if stamp, ok := s.stamp(); ok {
		s.times.record(now, stamp)
	}
	return s.n, nil
}

// stamp is the receive timestamp among the read's control messages.
func (s *stampedConn) stamp() (time.Time, bool) {
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&s.oob[0])), unsafe.Sizeof(s.oob))[:s.msg.Controllen] //nolint:gosec // G103: the control buffer as bytes, within its size
	const hdr = syscall.SizeofCmsghdr
	for len(buf) >= hdr {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&buf[0])) //nolint:gosec // G103: a header the kernel wrote, its length checked below
		l := int(h.Len)
		if l < hdr || l > len(buf) {
			return time.Time{}, false
		}
		if h.Level == syscall.SOL_SOCKET && h.Type == syscall.SCM_TIMESTAMPNS && l >= hdr+int(unsafe.Sizeof(syscall.Timespec{})) {
			ts := (*syscall.Timespec)(unsafe.Pointer(&buf[hdr])) //nolint:gosec // G103: the message is long enough for it (checked above)
			return time.Unix(int64(ts.Sec), int64(ts.Nsec)), true
		}
		const align = int(unsafe.Sizeof(uintptr(0)))
		next := (l + align - 1) &^ (align - 1)
		if next >= len(buf) {
			break
		}
		buf = buf[next:]
	}
	return time.Time{}, false
}
