package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

// fakeBackend is one container on an engine host that records what was done to it.
type fakeBackend struct {
	Backend
	st       Status
	startErr error
	stopErr  error
	calls    []string
}

func (b *fakeBackend) Inspect(context.Context, string) (Status, error) { return b.st, nil }
func (b *fakeBackend) Logs(context.Context, string, int) (string, error) {
	return "engine: out of memory", nil
}
func (b *fakeBackend) SetRestartPolicy(_ context.Context, _, policy string) error {
	b.calls = append(b.calls, "policy "+policy)
	b.st.RestartPolicy = policy
	return nil
}
func (b *fakeBackend) Start(context.Context, string) error {
	b.calls = append(b.calls, "start")
	// The engine exits at once: WaitReady sees a stopped container.
	b.st.State, b.st.ExitCode = "exited", 1
	return b.startErr
}
func (b *fakeBackend) Stop(_ context.Context, _ string, grace time.Duration) error {
	b.calls = append(b.calls, "stop "+grace.String())
	b.st.Running = false
	return b.stopErr
}

// keepingBackend also keeps an amended launch record, as the Docker backend does.
type keepingBackend struct {
	*fakeBackend
	amended *LaunchRecord
}

func (b keepingBackend) WriteRecord(_ context.Context, _ string, rec LaunchRecord) error {
	b.calls = append(b.calls, "write record")
	*b.amended = rec
	return nil
}
func (b keepingBackend) ReadRecord(context.Context, string) (LaunchRecord, bool, error) {
	return *b.amended, b.amended.Placement.Name != "", nil
}

func launched(t *testing.T, running bool) *fakeBackend {
	t.Helper()
	label, err := json.Marshal(LaunchRecord{
		Spec:      engine.Spec{Engine: engine.LlamaCpp, Model: "/m.gguf"},
		Placement: Placement{Name: "qwen", RestartPolicy: "no", StopTimeoutSeconds: 30, Meta: map[string]string{"readiness_timeout": "30m", "secrets_version": "1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &fakeBackend{st: Status{ID: "c0ffee", Running: running, State: "running", RestartPolicy: "no", Labels: map[string]string{SpecLabel: string(label)}}}
}

func TestRestartAmendsRecord(t *testing.T) {
	t.Parallel()
	fb := launched(t, true)
	b := keepingBackend{fakeBackend: fb, amended: &LaunchRecord{}}
	was := InPlace{Running: true, RestartPolicy: "no", StopTimeoutSeconds: 30, Meta: map[string]string{"readiness_timeout": "30m"}}
	want := InPlace{Running: true, RestartPolicy: "on-failure", StopTimeoutSeconds: 5, Meta: map[string]string{"readiness_timeout": "1h"}}
	got, err := Restart(context.Background(), b, "c0ffee", was, want, Readiness{})
	if err != nil || got.RecordErr != nil {
		t.Fatalf("Restart = %v, %v, record %v", got, err, got.RecordErr)
	}
	if strings.Join(fb.calls, ", ") != "policy on-failure, write record" {
		t.Errorf("calls = %v, want the policy set and the record written, nothing started or stopped", fb.calls)
	}
	p := b.amended.Placement
	if p.RestartPolicy != "on-failure" || p.StopTimeoutSeconds != 5 || p.Meta["readiness_timeout"] != "1h" || p.Meta["secrets_version"] != "1" || p.Name != "qwen" {
		t.Errorf("amended placement = %+v, want the new in-place settings and the rest kept", p)
	}
	if got.Status.RestartPolicy != "on-failure" {
		t.Errorf("status = %+v, want the container as inspected after the change", got.Status)
	}
	// The amended record is the current one from now on.
	rec, err := CurrentRecord(context.Background(), b, fb.st)
	if err != nil || rec.Placement.StopTimeoutSeconds != 5 {
		t.Errorf("CurrentRecord = %+v, %v, want the amended record", rec.Placement, err)
	}
}

func TestRestart(t *testing.T) {
	t.Parallel()
	settled := InPlace{Running: true, RestartPolicy: "no", StopTimeoutSeconds: 30, Meta: map[string]string{"readiness_timeout": "30m"}}
	with := func(f func(*InPlace)) InPlace {
		p := settled
		f(&p)
		return p
	}
	stopped := with(func(p *InPlace) { p.Running = false })
	tests := []struct {
		name      string
		running   bool
		was, want InPlace
		startErr  error
		stopErr   error
		calls     string
		err       string // "" for none
		stopFail  bool
		recordErr bool
	}{
		{"nothing changes", true, settled, settled, nil, nil, "", "", false, false},
		{"stop with grace", true, settled, with(func(p *InPlace) { p.Running, p.StopTimeoutSeconds = false, 7 }), nil, nil, "stop 7s", "", false, true},
		{"stop fails", true, settled, stopped, nil, errors.New("daemon gone"), "stop 30s", "stopping container c0ffee: daemon gone", false, false},
		{"start, engine exits, stopped again", false, stopped, settled, nil, nil, "start, stop 30s", "exited with code 1", false, false},
		{"start fails and stopping fails", false, stopped, settled, errors.New("port taken"), errors.New("daemon gone"), "start, stop 30s", "Stopping it again also failed (daemon gone)", true, false},
		{"policy without a record keeper", true, settled, with(func(p *InPlace) { p.RestartPolicy = "always" }), nil, nil, "policy always", "", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := launched(t, tt.running)
			b.startErr, b.stopErr = tt.startErr, tt.stopErr
			got, err := Restart(context.Background(), b, "c0ffee", tt.was, tt.want, Readiness{Interval: time.Millisecond})
			if strings.Join(b.calls, ", ") != tt.calls {
				t.Errorf("calls = %v, want %q", b.calls, tt.calls)
			}
			if (got.RecordErr != nil) != tt.recordErr {
				t.Errorf("RecordErr = %v, want set: %v", got.RecordErr, tt.recordErr)
			}
			if tt.err == "" {
				if err != nil {
					t.Fatalf("Restart: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("Restart error = %v, want one containing %q", err, tt.err)
			}
			var nr *NotReadyError
			if strings.HasPrefix(tt.calls, "start") && (!errors.As(err, &nr) || (nr.StopErr != nil) != tt.stopFail) {
				t.Fatalf("Restart error = %#v, want a *NotReadyError, stop failed: %v", err, tt.stopFail)
			}
		})
	}
}
