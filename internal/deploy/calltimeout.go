package deploy

import (
	"fmt"
	"os"
	"time"
)

// CallTimeoutEnv names the environment variable that replaces every bound on one call to a
// Docker Engine or to the Kubernetes API server (docker.DefaultCallTimeout,
// kubernetes.APICallTimeout and the plan's engine checks) with one Go duration, such as "10m"
// for an engine slower than the defaults allow, or "2s" for a test that holds a silent engine
// open.
const CallTimeoutEnv = "LLMSERVE_ENGINE_CALL_TIMEOUT"

// CallTimeout is def, or the duration CallTimeoutEnv gives instead when it is set and valid
// (CheckCallTimeoutEnv says when it is not).
func CallTimeout(def time.Duration) time.Duration {
	if d, err := callTimeoutEnv(); err == nil && d > 0 {
		return d
	}
	return def
}

// CheckCallTimeoutEnv refuses a CallTimeoutEnv that is set but no positive duration; nil
// when it is unset or valid.
func CheckCallTimeoutEnv() error {
	_, err := callTimeoutEnv()
	return err
}

func callTimeoutEnv() (time.Duration, error) {
	v, ok := os.LookupEnv(CallTimeoutEnv)
	if !ok || v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q is not a positive Go duration (such as \"5m\"); unset it for the defaults", CallTimeoutEnv, v)
	}
	return d, nil
}
