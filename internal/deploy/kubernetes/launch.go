package kubernetes

// The Kubernetes launch: the same steps as deploy.Launch for a container (create, start, wait
// until it generates, remove on failure), here as apply, roll out, prove every replica
// generates, delete on a failed create.

import (
	"context"
	"errors"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

// LaunchStep is the step of a launch that failed.
type LaunchStep int

// The steps of a launch, in order.
const (
	StepApply    LaunchStep = iota + 1 // server-side apply of the Deployment, Service, Secret and ResourceClaimTemplate
	StepRollout                        // the Deployment's rollout (WaitRollout)
	StepGenerate                       // one real completion on every replica (ProveGenerates)
)

// LaunchError is a launch that failed at Step; Err says what failed and why.
type LaunchError struct {
	Step LaunchStep
	Err  error
}

func (e *LaunchError) Error() string { return e.Err.Error() }
func (e *LaunchError) Unwrap() error { return e.Err }

// LeftError is a failed create whose objects could not be removed again: they are in the
// cluster, and nothing in state knows about them.
type LeftError struct{ Err error }

func (e *LeftError) Error() string {
	return "the failed inference deployment could not be removed: " + e.Err.Error()
}
func (e *LeftError) Unwrap() error { return e.Err }

// cleanupTimeout bounds the removal of a failed create, on a context of its own (the
// caller's may be the one that expired).
const cleanupTimeout = 2 * time.Minute

// Launch applies d's objects for the engine spec, waits until the rollout completes
// (r.Timeout bounds it) and until one real completion succeeded on every replica, reached
// through access; it returns what the first replica reports about itself. A failure is a
// *LaunchError naming the step. Create and update share it; a create uses LaunchNew.
func (c *Cluster) Launch(ctx context.Context, d Deployment, s engine.Spec, sec engine.Secrets, access Access, r deploy.Readiness) (engine.ServerInfo, error) {
	if err := c.Apply(ctx, d, s, sec); err != nil {
		return engine.ServerInfo{}, &LaunchError{StepApply, err}
	}
	rolloutCtx := ctx
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		rolloutCtx, cancel = context.WithTimeout(ctx, r.Timeout)
		defer cancel()
	}
	if err := c.WaitRollout(rolloutCtx, d, s, r.Redact); err != nil {
		return engine.ServerInfo{}, &LaunchError{StepRollout, err}
	}
	info, _, err := c.ProveGenerates(ctx, d, s.Port, access, r)
	if err != nil {
		return engine.ServerInfo{}, &LaunchError{StepGenerate, err}
	}
	return info, nil
}

// LaunchNew is Launch for a deployment that did not exist before: when a step fails,
// whatever it applied is removed again, so nothing is left that state does not know. A
// removal that fails too joins a *LeftError to the launch's error.
func (c *Cluster) LaunchNew(ctx context.Context, d Deployment, s engine.Spec, sec engine.Secrets, access Access, r deploy.Readiness) (engine.ServerInfo, error) {
	info, err := c.Launch(ctx, d, s, sec, access, r)
	if err == nil {
		return info, nil
	}
	delCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if delErr := c.Delete(delCtx, d); delErr != nil {
		return engine.ServerInfo{}, errors.Join(err, &LeftError{delErr})
	}
	return engine.ServerInfo{}, err
}

// ServerInfo asks one ready replica what it reports about itself (the version, limits and
// settings create records), within timeout; empty when no replica answers in time. An
// imported deployment reads it this way.
func (c *Cluster) ServerInfo(ctx context.Context, d Deployment, s engine.Spec, access Access, timeout time.Duration) engine.ServerInfo {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	reps, err := c.Replicas(ctx, d, s.Port, access)
	if err != nil || len(reps) == 0 {
		return engine.ServerInfo{}
	}
	return deploy.ReadServerInfo(ctx, reps[0].Base, deploy.Readiness{Engine: s.Engine, HTTPClient: reps[0].Client})
}
