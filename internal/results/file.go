package results

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// MaxFileBytes caps a results document read from a file. A document with every trial and
// full statistics of a long search is a few megabytes; anything larger is not one, and
// reading it whole (a /dev/zero path reads forever) would exhaust memory.
const MaxFileBytes = 64 << 20

// ReadFile reads a results document from path: a regular file of at most MaxFileBytes. A
// FIFO, device, socket or directory is refused before it is read.
func ReadFile(path string) ([]byte, error) {
	if fi, err := os.Stat(path); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	// Non-blocking, so a FIFO put in the file's place since the check cannot hang the open.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, errors.New(path + " is larger than 64 MiB, more than any results document")
	}
	return data, nil
}
