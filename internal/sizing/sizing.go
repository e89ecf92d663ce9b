// Package sizing turns a measured capacity into configuration: how many replicas serve a
// demand with headroom. It knows nothing of Terraform.
package sizing

import (
	"fmt"
	"math"
)

// MaxReplicas bounds the answer: more than this is a unit slip (users in requests per day, a
// capacity of 0.001), not a deployment.
const MaxReplicas = 1_000_000

// Replicas is how many replicas serve users concurrent users when one replica holds capacity
// of them within its objectives (its maximum passing concurrency), keeping headroom, a
// fraction of every replica's capacity, free: ceil(users / (capacity × (1 − headroom))).
// No users need no replica. A capacity of 0 (even one user missed the objectives) serves
// nobody, so any demand is an error rather than a division by zero. A capacity that is the
// edge of the search (every level tried passed) is a lower bound of the real one, and the
// answer then an upper bound: safe, perhaps more replicas than needed.
func Replicas(users float64, capacity int64, headroom float64) (int64, error) {
	switch {
	case math.IsNaN(users) || math.IsInf(users, 0) || users < 0:
		return 0, fmt.Errorf("users must be a number of concurrent users, 0 or more; got %v", users)
	case capacity < 0:
		return 0, fmt.Errorf("capacity must be a maximum passing concurrency, 0 or more; got %d", capacity)
	case math.IsNaN(headroom) || headroom < 0 || headroom >= 1:
		return 0, fmt.Errorf("headroom is the fraction of each replica's capacity kept free, from 0 up to but not including 1 (0.2 plans 80 %% of the measured capacity); got %v", headroom)
	case users == 0:
		return 0, nil
	case capacity == 0:
		return 0, fmt.Errorf("capacity is 0: one replica missed the objectives with a single user, so no number of replicas serves %v users; make the server faster or the objectives looser and measure again", users)
	}
	per := float64(capacity) * (1 - headroom)
	// The tolerance keeps an exact quotient (56 users at 7 × 0.8) from rounding up to one
	// replica more through the binary representation of 0.8.
	n := math.Ceil(users/per - 1e-9)
	if n > MaxReplicas {
		return 0, fmt.Errorf("%v users at %v per replica (capacity %d, headroom %v) need %.0f replicas, more than %d: check the units of users and capacity", users, per, capacity, headroom, n, MaxReplicas)
	}
	return max(int64(n), 1), nil
}
