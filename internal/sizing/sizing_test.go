package sizing

import (
	"math"
	"strings"
	"testing"
)

func TestReplicas(t *testing.T) {
	tests := []struct {
		name     string
		users    float64
		capacity int64
		headroom float64
		want     int64
		err      string
	}{
		{"exact", 42, 7, 0, 6, ""},
		{"one more user, one more replica", 43, 7, 0, 7, ""},
		// 40 / (7 × 0.8 = 5.6) = 7.14.
		{"headroom", 40, 7, 0.2, 8, ""},
		// 56 / 5.6 = 10 exactly, despite 0.8 in binary.
		{"exact with headroom", 56, 7, 0.2, 10, ""},
		{"fractional demand", 0.5, 7, 0, 1, ""},
		{"no users", 0, 7, 0.2, 0, ""},
		{"no users, capacity 0", 0, 0, 0, 0, ""},
		{"capacity 0", 10, 0, 0, 0, "capacity is 0: one replica missed the objectives with a single user, so no number of replicas serves 10 users"},
		{"capacity 1, headroom", 3, 1, 0.5, 6, ""},
		{"negative users", -1, 7, 0, 0, "users must be a number of concurrent users, 0 or more; got -1"},
		{"NaN users", math.NaN(), 7, 0, 0, "users must be"},
		{"negative capacity", 1, -1, 0, 0, "capacity must be a maximum passing concurrency, 0 or more; got -1"},
		{"headroom 1", 1, 7, 1, 0, "headroom is the fraction of each replica's capacity kept free"},
		{"headroom as percent", 1, 7, 20, 0, "got 20"},
		{"too many", 1e12, 1, 0, 0, "need 1000000000000 replicas, more than 1000000: check the units"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Replicas(tc.users, tc.capacity, tc.headroom)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Replicas(%v, %d, %v) = %d, %v; want %d", tc.users, tc.capacity, tc.headroom, got, err, tc.want)
			}
		})
	}
}
