//go:build !unix

package capacity

import "time"

// processCPUTime is not read here: the trial's client block has no cpu.
func processCPUTime() (time.Duration, bool) { return 0, false }
