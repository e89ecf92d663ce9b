package runner

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/kubernetes"
)

// What keeps a runner's pod from measuring becomes its own diagnostic, within its bound:
// an image that cannot start at once, a pod no node accepts after UnschedulableBound, a
// runner that keeps crashing or whose pod ended, a failed Job; a pod on its way is no fault.
func TestKubernetesFault(t *testing.T) {
	k := &Kubernetes{Namespace: "llm", Image: "registry.example/llmserve-runner:0.1.0"}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "llmserve-runner-abc"}}
	waiting := func(reason, msg string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{Phase: corev1.PodPending,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "runner", RestartCount: 4, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}}}}}}
	}
	unschedulable := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{Phase: corev1.PodPending,
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."}}}}

	var since time.Time
	if err := k.fault(nil, job, &since); err != nil {
		t.Errorf("no pod yet: %v", err)
	}
	if err := k.fault(waiting("ContainerCreating", ""), job, &since); err != nil {
		t.Errorf("creating: %v", err)
	}
	var img *KubeImageError
	if err := k.fault(waiting("ImagePullBackOff", `Back-off pulling image "registry.example/llmserve-runner:0.1.0"`), job, &since); !errors.As(err, &img) ||
		!strings.Contains(err.Error(), "ImagePullBackOff") || !strings.Contains(err.Error(), "runner.kubernetes.image") {
		t.Errorf("image: %v", err)
	}
	var died *KubeDiedError
	if err := k.fault(waiting("CrashLoopBackOff", ""), job, &since); !errors.As(err, &died) || !strings.Contains(err.Error(), "4 restarts") || !strings.Contains(err.Error(), "exit status 2") {
		t.Errorf("crash loop: %v", err)
	}
	if err := k.fault(unschedulable, job, &since); err != nil || since.IsZero() {
		t.Errorf("unschedulable for the first time: %v, since %v: want no fault yet", err, since)
	}
	since = time.Now().Add(-UnschedulableBound - time.Second)
	var un *UnschedulableError
	if err := k.fault(unschedulable, job, &since); !errors.As(err, &un) || !strings.Contains(err.Error(), "didn't match Pod's node affinity/selector") || !strings.Contains(err.Error(), "node_selector") {
		t.Errorf("unschedulable beyond the bound: %v", err)
	}
	failed := job.DeepCopy()
	failed.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"}}
	if err := k.fault(nil, failed, &since); !errors.As(err, &died) || !strings.Contains(err.Error(), "BackoffLimitExceeded") {
		t.Errorf("failed Job: %v", err)
	}
}

// An API server that stops answering while the runner is followed stops the apply once every
// request has failed for the bound, saying that the runner goes on and how to attach again.
func TestKubernetesAPILost(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there any more: every request is refused
	c, err := kubernetes.NewCluster(&rest.Config{Host: "http://" + addr})
	if err != nil {
		t.Fatal(err)
	}
	k := &Kubernetes{Cluster: c, Namespace: "llm", apiLostBound: 2 * time.Second}
	start := time.Now()
	_, err = k.follow(context.Background(), Job{}, "llmserve-runner-abc")
	var lost *APILostError
	if !errors.As(err, &lost) {
		t.Fatalf("follow = %v, want an APILostError", err)
	}
	if took := time.Since(start); took < 2*time.Second || took > 30*time.Second {
		t.Errorf("gave up after %s, want just past the 2 s bound", took)
	}
	for _, want := range []string{addr, "for 2s", "llmserve-runner-abc", "keeps measuring", "Apply again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}
