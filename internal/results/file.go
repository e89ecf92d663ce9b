package results

import "github.com/llmserve/terraform-provider-llmserve/internal/localfile"

// MaxFileBytes caps a results document read from a file. A document with every trial and
// full statistics of a long search is a few megabytes; anything larger is not one, and
// reading it whole (a /dev/zero path reads forever) would exhaust memory.
const MaxFileBytes = 64 << 20

// File is what a results document read from a file may be (localfile).
var File = localfile.Kind{Noun: "results document (schema v1 JSON)", MaxBytes: MaxFileBytes}

// ReadFile reads a results document from path: a regular file of at most MaxFileBytes. A
// FIFO, device, socket or directory is refused before it is read.
func ReadFile(path string) ([]byte, error) {
	return localfile.ReadFile(path, File)
}
