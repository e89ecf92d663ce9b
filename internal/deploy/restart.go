package deploy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"
)

// InPlace are the settings of an existing container that change without re-creating it.
type InPlace struct {
	Running            bool
	RestartPolicy      string
	StopTimeoutSeconds int
	// Meta are caller settings kept in the launch record (Placement.Meta), so an import
	// restores the changed values rather than the ones the container was created with.
	Meta map[string]string
}

// Restarted is what Restart left: the container's status and, when the change was made but
// the launch record could not be amended, why (an import would then restore the previous
// in-place settings).
type Restarted struct {
	Status    Status
	RecordErr error
}

// NotReadyError is a container Restart started that did not become ready. Restart stops it
// again, so it is not left running unready; StopErr says why that failed, if it did.
type NotReadyError struct {
	Err     error
	StopErr error
}

func (e *NotReadyError) Error() string {
	if e.StopErr != nil {
		return fmt.Sprintf("%v\n\nStopping it again also failed (%v); it may still be running, not ready.", e.Err, e.StopErr)
	}
	return fmt.Sprintf("%v\n\nThe container was stopped again.", e.Err)
}

func (e *NotReadyError) Unwrap() error { return e.Err }

// Restart applies an in-place change to container id, from was to want: the restart policy,
// the launch record, then starting it (and waiting until it generates, as r says) or
// stopping it. A failure to start is a *NotReadyError; the settings changed before it stay
// changed.
func Restart(ctx context.Context, b Backend, id string, was, want InPlace, r Readiness) (Restarted, error) {
	var out Restarted
	if want.RestartPolicy != was.RestartPolicy {
		if err := b.SetRestartPolicy(ctx, id, want.RestartPolicy); err != nil {
			return out, fmt.Errorf("changing the restart policy of container %s to %q: %w", shortID(id), want.RestartPolicy, err)
		}
	}
	if want.RestartPolicy != was.RestartPolicy || want.StopTimeoutSeconds != was.StopTimeoutSeconds || !maps.Equal(want.Meta, was.Meta) {
		out.RecordErr = amendRecord(ctx, b, id, want)
	}
	grace := time.Duration(want.StopTimeoutSeconds) * time.Second
	switch {
	case want.Running && !was.Running:
		if _, _, err := startAndWait(ctx, b, id, r); err != nil {
			// The caller's context may be the one that expired; stopping gets its own.
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace+time.Minute)
			defer cancel()
			return out, &NotReadyError{Err: err, StopErr: b.Stop(stopCtx, id, grace)}
		}
	case !want.Running && was.Running:
		if err := b.Stop(ctx, id, grace); err != nil {
			return out, fmt.Errorf("stopping container %s: %w", shortID(id), err)
		}
	}
	st, err := b.Inspect(ctx, id)
	if err != nil {
		return out, fmt.Errorf("inspecting container %s after the change: %w", shortID(id), err)
	}
	out.Status = st
	return out, nil
}

// CurrentRecord is the container's launch record: the one written at create (SpecLabel), or
// the one in-place changes amended since.
func CurrentRecord(ctx context.Context, b Backend, st Status) (LaunchRecord, error) {
	rec, err := ParseLaunchRecord(st.Labels[SpecLabel])
	if err != nil {
		return LaunchRecord{}, err
	}
	if keeper, ok := b.(RecordKeeper); ok {
		amended, found, err := keeper.ReadRecord(ctx, st.ID)
		if err != nil {
			return LaunchRecord{}, err
		}
		if found {
			return amended, nil
		}
	}
	return rec, nil
}

// amendRecord records the in-place settings in the container's launch record.
func amendRecord(ctx context.Context, b Backend, id string, want InPlace) error {
	keeper, ok := b.(RecordKeeper)
	if !ok {
		return errors.New("the backend cannot amend a launch record")
	}
	st, err := b.Inspect(ctx, id)
	if err != nil {
		return err
	}
	rec, err := CurrentRecord(ctx, b, st)
	if err != nil {
		return err
	}
	rec.Placement.RestartPolicy = want.RestartPolicy
	rec.Placement.StopTimeoutSeconds = want.StopTimeoutSeconds
	if rec.Placement.Meta == nil {
		rec.Placement.Meta = map[string]string{}
	}
	maps.Copy(rec.Placement.Meta, want.Meta)
	return keeper.WriteRecord(ctx, id, rec)
}
