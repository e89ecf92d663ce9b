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
	"k8s.io/apimachinery/pkg/api/resource"
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

// A fleet's pods no node accepts fail the apply once the bound has passed, naming how many of
// how many and the fix (fewer pods, or nodes with room); one pod on its way is no fault.
func TestKubernetesFleetUnschedulable(t *testing.T) {
	k := &Kubernetes{Namespace: "llm", Image: "registry.example/llmserve-runner:0.1.0"}
	job := k.jobObject("llmserve-runner-abc", map[string]string{}, 4, "tok")
	unschedulable := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{Phase: corev1.PodPending,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 Insufficient cpu."}}}}
	}
	running := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.9"}}
	pods := []*corev1.Pod{running, running, unschedulable(), unschedulable()}
	since := map[int]time.Time{}
	if err := k.faults(pods, job, since); err != nil {
		t.Fatalf("unschedulable for the first time: %v", err)
	}
	since[2], since[3] = time.Now().Add(-UnschedulableBound-time.Second), time.Now()
	err := k.faults(pods, job, since)
	var un *UnschedulableError
	if !errors.As(err, &un) {
		t.Fatalf("err = %v, want an UnschedulableError", err)
	}
	for _, want := range []string{"could not schedule 2 of its 4 pods", "Insufficient cpu", "runner.kubernetes.pods = 4 needs 4 pods running at once", "lower runner.kubernetes.pods"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}

// A fleet's Job: Indexed, that many pods at once, each told its completion index, the token
// on the Job for a provider that attaches later; one pod stays the plain Job it was.
func TestKubernetesFleetJob(t *testing.T) {
	k := &Kubernetes{Namespace: "llm", Image: "img"}
	j := k.jobObject("x", map[string]string{}, 3, "tok")
	if j.Spec.CompletionMode == nil || *j.Spec.CompletionMode != batchv1.IndexedCompletion || *j.Spec.Completions != 3 || *j.Spec.Parallelism != 3 || jobPods(j) != 3 {
		t.Errorf("job spec %+v", j.Spec)
	}
	env := j.Spec.Template.Spec.Containers[0].Env
	if len(env) != 1 || env[0].Name != IndexEnv || env[0].ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" || j.Annotations[tokenAnnotation] != "tok" {
		t.Errorf("env %+v, annotations %v", env, j.Annotations)
	}
	one := k.jobObject("y", map[string]string{}, 1, "")
	if one.Spec.CompletionMode != nil || one.Spec.Parallelism != nil || len(one.Spec.Template.Spec.Containers[0].Env) != 0 || jobPods(one) != 1 || *one.Spec.BackoffLimit != 2 {
		t.Errorf("a one-pod Job changed: %+v", one.Spec)
	}
}

// A namespace LimitRange whose default container limit (or maximum) is below what a runner
// pod requests lowers the request to it, as the LimitRanger would otherwise refuse the pod
// (a request above its limit); one above it, a Pod-level one or another resource's changes
// nothing.
func TestKubernetesFitLimitRanges(t *testing.T) {
	q := resource.MustParse
	lr := func(name string, typ corev1.LimitType, def, maxes corev1.ResourceList) corev1.LimitRange {
		return corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: typ, Default: def, Max: maxes}}}}
	}
	for _, tc := range []struct {
		name      string
		ranges    []corev1.LimitRange
		cpu, mem  string
		saysEmpty bool
		says      []string
	}{
		{name: "none", cpu: "1", mem: "256Mi", saysEmpty: true},
		{name: "above", ranges: []corev1.LimitRange{lr("roomy", corev1.LimitTypeContainer, corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("1Gi")}, nil)},
			cpu: "1", mem: "256Mi", saysEmpty: true},
		{name: "pod level", ranges: []corev1.LimitRange{lr("pods", corev1.LimitTypePod, nil, corev1.ResourceList{corev1.ResourceCPU: q("100m")})},
			cpu: "1", mem: "256Mi", saysEmpty: true},
		{name: "default cpu", ranges: []corev1.LimitRange{lr("small", corev1.LimitTypeContainer, corev1.ResourceList{corev1.ResourceCPU: q("30m")}, nil)},
			cpu: "30m", mem: "256Mi", says: []string{"namespace llm limits every container to cpu 30m (LimitRange small)", "requests 30m CPU and 256Mi memory", "client-bound", "runner.kubernetes.pods"}},
		{name: "max below default, and memory", ranges: []corev1.LimitRange{
			lr("a", corev1.LimitTypeContainer, corev1.ResourceList{corev1.ResourceCPU: q("500m")}, corev1.ResourceList{corev1.ResourceCPU: q("250m")}),
			lr("b", corev1.LimitTypeContainer, corev1.ResourceList{corev1.ResourceMemory: q("128Mi")}, nil)},
			cpu: "250m", mem: "128Mi", says: []string{"cpu 250m (LimitRange a), memory 128Mi (LimitRange b)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, says := fitRequests("llm", tc.ranges)
			if req.Cpu().Cmp(q(tc.cpu)) != 0 || req.Memory().Cmp(q(tc.mem)) != 0 {
				t.Errorf("requests cpu %s memory %s, want %s and %s", req.Cpu(), req.Memory(), tc.cpu, tc.mem)
			}
			if (says == "") != tc.saysEmpty {
				t.Errorf("says %q", says)
			}
			for _, w := range tc.says {
				if !strings.Contains(says, w) {
					t.Errorf("%q does not say %q", says, w)
				}
			}
		})
	}
	// The Job's own template still requests 1 CPU and 256 MiB: only start lowers it.
	if r := (&Kubernetes{}).jobObject("x", nil, 1, "").Spec.Template.Spec.Containers[0].Resources; r.Requests.Cpu().Cmp(q("1")) != 0 || len(r.Limits) != 0 {
		t.Errorf("template resources %+v", r)
	}
}
