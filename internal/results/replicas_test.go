package results

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// A trial's per-replica proof survives a round trip, a replica without counters stays
// without them, and a malformed entry is refused with its path.
func TestRoundTripReplicaChecks(t *testing.T) {
	t.Parallel()
	d := parseReference(t)
	hits, prompts := 22.0, 4096.0
	want := []ReplicaCheck{
		{Endpoint: "http://10.0.0.7:30000", IdleVerified: true, CacheFlushed: true, PromptTokens: &prompts, PrefixCacheHitTokens: &hits},
		{Endpoint: "http://10.0.0.8:30000", IdleVerified: false, CacheFlushed: true},
	}
	d.Workloads[0].PassingTrials[0].Replicas = want
	out, err := Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Workloads[0].PassingTrials[0].Replicas; !reflect.DeepEqual(got, want) {
		t.Fatalf("replicas after round trip: %+v", got)
	}
	if back.Workloads[0].FailingTrials[0].Replicas != nil {
		t.Fatal("a trial without replica checks grew some")
	}
	if n := bytes.Count(out, []byte(`"replicas"`)); n != 1 {
		t.Fatalf("replicas written %d times, want once:\n%s", n, out)
	}
	bad := bytes.Replace(out, []byte(`"idle_verified": false`), []byte(`"idle_verified": "no"`), 1)
	if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), "workloads[0].passing_trials[0].replicas[1].idle_verified") {
		t.Fatalf("err = %v, want the bad field refused with its path", err)
	}
}
