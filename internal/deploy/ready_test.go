package deploy

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// logsOnly is a Backend whose only answer is a log tail; tailLogs needs nothing else.
type logsOnly struct {
	Backend
	logs string
	err  error
}

func (b logsOnly) Logs(context.Context, string, int) (string, error) { return b.logs, b.err }

func TestTailLogsRedactsSecrets(t *testing.T) {
	logs := "server_args=ServerArgs(model_path='q', api_key='sk-live-123', hf_token='hf_abc')\nready\n"
	got := tailLogs(context.Background(), logsOnly{logs: logs}, "c1", []string{"sk-live-123", "", "hf_abc"})
	want := "server_args=ServerArgs(model_path='q', api_key='[redacted]', hf_token='[redacted]')\nready\n"
	if got != want {
		t.Fatalf("tailLogs =\n%q\nwant\n%q", got, want)
	}
	if got := tailLogs(context.Background(), logsOnly{err: errors.New("no such container")}, "c1", nil); !strings.Contains(got, "logs unavailable: no such container") {
		t.Fatalf("tailLogs on error = %q", got)
	}
}
