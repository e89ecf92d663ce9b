package capacity

import (
	"context"
	"errors"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/search"
)

// A trial whose client missed its schedule runs once more; a second miss, or any other
// error, stops the run as before.
func TestOnceMoreOnScheduleFault(t *testing.T) {
	t.Parallel()
	late := &load.ScheduleError{Rate: 1000}
	other := errors.New("server gone")
	for _, tt := range []struct {
		name     string
		errs     []error // what each run returns
		runs     int
		want     error
		canceled bool
	}{
		{"a passing stall costs one trial", []error{late, nil}, 2, nil, false},
		{"a client too slow still stops the run", []error{late, late}, 2, late, false},
		{"other errors are not retried", []error{other}, 1, other, false},
		{"an interrupted run is not retried", []error{late}, 1, late, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(t.Context())
			if tt.canceled {
				cancel()
			} else {
				defer cancel()
			}
			runs, said := 0, 0
			_, err := onceMoreOnScheduleFault(ctx, search.RateRequest{Rate: 1000}, func(context.Context, search.RateRequest) (search.Outcome, error) {
				runs++
				return search.Outcome{}, tt.errs[runs-1]
			}, func(error) { said++ })
			if runs != tt.runs || !errors.Is(err, tt.want) || said != tt.runs-1 {
				t.Errorf("runs %d, said %d, err %v; want runs %d, err %v", runs, said, err, tt.runs, tt.want)
			}
		})
	}
}
