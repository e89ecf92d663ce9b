package runner

import (
	"fmt"
	"strings"
)

// DetachedError is an apply that stopped following a runner (Terraform's interrupt, or
// timeouts.create) while the runner goes on measuring.
type DetachedError struct {
	Container, Host string
	TimedOut        bool
}

func (e *DetachedError) Error() string {
	why := "interrupted"
	if e.TimedOut {
		why = "timed out (timeouts.create)"
	}
	return fmt.Sprintf("%s while following the runner; the runner container %s keeps measuring on %s. Apply again with the same configuration to attach to it, or to collect its result once it has finished: no trial is lost or measured twice. Destroying the benchmark or changing its configuration stops and removes it",
		why, short(e.Container), e.Host)
}

// Summary is the diagnostic's title.
func (e *DetachedError) Summary() string {
	if e.TimedOut {
		return "Capacity benchmark timed out; its runner goes on"
	}
	return "Capacity benchmark interrupted; its runner goes on"
}

// EngineLostError is the Docker Engine failing while a runner was followed.
type EngineLostError struct {
	Container, Host string
	Err             error
}

func (e *EngineLostError) Error() string {
	return fmt.Sprintf("lost the Docker Engine at %s while following the runner container %s: %v. If the engine host is still up, the runner keeps measuring there; apply again with the same configuration to attach to it, collect its result, or resume from its journal",
		e.Host, short(e.Container), e.Err)
}

func (e *EngineLostError) Unwrap() error { return e.Err }

// Summary is the diagnostic's title.
func (e *EngineLostError) Summary() string { return "Lost the Docker Engine of the benchmark's runner" }

// DiedError is a runner that ended without writing its result: killed, out of memory, or an
// image that could not run the runner.
type DiedError struct {
	Container, Host string
	ExitCode        int64
	OOMKilled       bool
	Stderr          string
	Kept            int  // finished trials in its journal, which the next apply resumes from
	Removed         bool // nothing to resume: the container was removed
}

func (e *DiedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the runner container %s on %s ended without a result (exit status %d", short(e.Container), e.Host, e.ExitCode)
	switch {
	case e.OOMKilled:
		b.WriteString(", killed: out of memory")
	case e.ExitCode == 137:
		b.WriteString(", killed")
	case e.ExitCode == ExitBadSpec:
		b.WriteString(", could not read its spec: is runner.docker.image the same provider version?")
	}
	b.WriteString(")")
	if e.Stderr != "" {
		fmt.Fprintf(&b, "; it said: %.1000s", e.Stderr)
	}
	if e.Kept > 0 {
		fmt.Fprintf(&b, "; its journal keeps %d finished %s and the stopped container is kept: apply again to resume from them", e.Kept, map[bool]string{true: "trial", false: "trials"}[e.Kept == 1])
	} else if e.Removed {
		b.WriteString("; it had finished no trial and was removed")
	} else {
		fmt.Fprintf(&b, "; remove it with docker rm -f %s", short(e.Container))
	}
	return b.String()
}

// Summary is the diagnostic's title.
func (e *DiedError) Summary() string { return "Capacity benchmark runner died" }

// DiskFullError is an engine host out of disk when the runner was to start (building its
// image, creating it, writing its spec): nothing was started.
type DiskFullError struct {
	Host  string
	Ended string // an ended runner of this run, kept with its journal; empty for none
	Err   error
}

func (e *DiskFullError) Error() string {
	kept := "the server container and the trials measured so far (the local progress_file) are kept"
	if e.Ended != "" {
		kept = fmt.Sprintf("the server container, the trials measured so far (the local progress_file) and the ended runner %s with its journal are kept", short(e.Ended))
	}
	return fmt.Sprintf("the Docker Engine host %s is out of disk: %v. No runner was started; %s. Free space there (docker system prune, docker image prune) and apply again: the next runner resumes from them",
		e.Host, e.Err, kept)
}

func (e *DiskFullError) Unwrap() error { return e.Err }

// Summary is the diagnostic's title.
func (e *DiskFullError) Summary() string { return "The runner's Docker Engine host is out of disk" }
