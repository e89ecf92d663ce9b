package deploy

import (
	"context"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

// Execer is a Backend that can run a command inside a running container.
type Execer interface {
	// Exec runs cmd in the container and returns its standard output; a non-zero exit is
	// an error carrying its output.
	Exec(ctx context.Context, id string, cmd []string) (string, error)
}

// probeTimeout bounds the device probe: importing PyTorch in a large image takes seconds,
// and a launch must not wait long for a label.
const probeTimeout = 60 * time.Second

// Hardware names the accelerators the server in container id sees, as the host reports
// them ("2 x NVIDIA H200, 143771 MiB each"), for results' experiment.hardware. It falls
// back to the accelerator family ("cuda", "xpu", "cpu") when the backend cannot run the
// probe, the probe fails or lists nothing, so a missing probe tool never fails a launch.
func Hardware(ctx context.Context, b Backend, id string, spec engine.Spec) string {
	fallback := string(spec.Accelerator)
	probe := spec.DeviceProbe()
	ex, ok := b.(Execer)
	if !ok || probe == nil {
		return fallback
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	out, err := ex.Exec(ctx, id, probe)
	if err != nil {
		return fallback
	}
	devs, err := spec.ParseDevices(out)
	if err != nil || len(devs) == 0 {
		return fallback
	}
	return engine.DescribeDevices(devs)
}
