// Package localfile is the one way the provider reads a file a user names: a trace, a
// records file, a baseline's records, a progress journal, a results document, TLS material.
// Every such file must be a regular file no larger than its kind allows; a FIFO, a device, a
// directory or a socket is refused by name before a byte is read, and the check is made on the
// opened descriptor (opened without blocking), so a file swapped for a FIFO between a look and
// the open cannot hang a plan, and a symlink to /dev/zero cannot exhaust memory. A file named
// inside a directory (a results document's records_file under records_directory) is confined
// to it: the name must be local after cleaning, and the path with every symlink resolved must
// still lie inside the directory.
//
// Errors that are refusals (not a missing file or a permission) are *Refused, so a caller
// that may fall back on a missing file can still report a hostile one.
package localfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Kind is what a file is for: its name in messages and the most bytes it may hold.
type Kind struct {
	Noun     string // "trace", "records file", "results document", "progress journal"
	MaxBytes int64  // 0: no bound (a file that is only appended to, never read)
}

// Refused is a file refused for what it is, not for a failure to reach it.
type Refused struct {
	Path   string
	Reason string // "is a named pipe (FIFO), not a regular file", "is larger than 64 MiB, ..."
}

func (e *Refused) Error() string { return e.Path + " " + e.Reason }

// IsRefused reports whether err is (or wraps) a *Refused.
func IsRefused(err error) bool {
	var r *Refused
	return errors.As(err, &r)
}

// typeName says what a non-regular file is, the way a user would look for it.
func typeName(m fs.FileMode) string {
	switch t := m.Type(); {
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a block device"
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	default:
		return "not a regular file (" + t.String() + ")"
	}
}

func check(path string, fi fs.FileInfo, k Kind) error {
	if !fi.Mode().IsRegular() {
		name := typeName(fi.Mode())
		if !strings.HasPrefix(name, "not ") {
			name = "is " + name + ", not a regular file"
		} else {
			name = "is " + name
		}
		via := ""
		if l, err := os.Lstat(path); err == nil && l.Mode()&fs.ModeSymlink != 0 {
			via = " (through a symbolic link)"
		}
		return &Refused{Path: path, Reason: name + via + "; give the path of a " + k.Noun}
	}
	if k.MaxBytes > 0 && fi.Size() > k.MaxBytes {
		return &Refused{Path: path, Reason: fmt.Sprintf("is larger than %s (%d bytes), more than any %s", Size(k.MaxBytes), fi.Size(), k.Noun)}
	}
	return nil
}

// Size writes a bound the way the docs state it: "64 MiB".
func Size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Check looks at path without opening it: a regular file within the kind's bound. For files a
// library opens itself (a kubeconfig, ssh known_hosts); Open and ReadFile check again on the
// descriptor.
func Check(path string, k Kind) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return check(path, fi, k)
}

// Open opens path for reading: a regular file within the kind's bound, checked on the
// descriptor. The open does not block on a FIFO, and a device is not opened at all.
func Open(path string, k Kind) (*os.File, error) {
	return open(path, os.O_RDONLY, k)
}

// OpenAppend opens (creating) path to read and append to, under the same rules as Open: for
// a journal the provider writes and reads back.
func OpenAppend(path string, k Kind) (*os.File, error) {
	return open(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, k)
}

// OpenLog opens (creating) path to append to only, a regular file: for a log the provider
// writes and never reads back, so without a size bound.
func OpenLog(path string, k Kind) (*os.File, error) {
	return open(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, k)
}

func open(path string, flag int, k Kind) (*os.File, error) {
	// Looked at first, so a device is never opened (opening one may act: a tape rewinds).
	// A failed look (a missing file) is left to the open, whose error says "open".
	if fi, err := os.Stat(path); err == nil {
		if err := check(path, fi, k); err != nil {
			return nil, err
		}
	}
	// Non-blocking: a FIFO put in the file's place since the look opens at once, and is
	// refused below.
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = check(path, fi, k)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadFile reads the whole of path: a regular file within the kind's bound. A file that grows
// past the bound while it is read is refused too.
func ReadFile(path string, k Kind) ([]byte, error) {
	f, err := Open(path, k)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if k.MaxBytes > 0 {
		r = io.LimitReader(f, k.MaxBytes+1)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if k.MaxBytes > 0 && int64(len(data)) > k.MaxBytes {
		return nil, &Refused{Path: path, Reason: fmt.Sprintf("is larger than %s, more than any %s", Size(k.MaxBytes), k.Noun)}
	}
	return data, nil
}

// Within returns the path of name inside dir, for a file a document names relative to a
// directory the user gives: name must be local after cleaning (no "..", not absolute), and the
// file with every symbolic link resolved must lie inside dir with its links resolved. A file
// that does not exist is the error of resolving it (fs.ErrNotExist), not a refusal.
func Within(dir, name string) (string, error) {
	rel := filepath.Clean(filepath.FromSlash(name))
	if rel == "." {
		return "", &Refused{Path: name, Reason: "names no file in the directory (empty, or the directory itself)"}
	}
	if !filepath.IsLocal(rel) {
		return "", &Refused{Path: name, Reason: "is not a relative path inside the directory (no \"..\", not absolute)"}
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	joined := filepath.Join(dir, rel)
	real, err := filepath.EvalSymlinks(joined)
	if err != nil {
		return "", err
	}
	if r, err := filepath.Rel(realDir, real); err != nil || !filepath.IsLocal(r) {
		return "", &Refused{Path: name, Reason: fmt.Sprintf("resolves through a symbolic link to %s, outside the directory", real)}
	}
	return real, nil
}
