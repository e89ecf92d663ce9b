package kubernetes

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

// These tests run the Cluster against client-go's fake clientset: an in-memory object
// tracker that honours label selectors (not field selectors) and answers every log request
// with "fake logs". They cover what the cluster reports, not what it schedules.

func fakeCluster(objs ...runtime.Object) (*Cluster, *fake.Clientset) {
	cs := fake.NewSimpleClientset(objs...)
	return &Cluster{cs: cs, rest: &rest.Config{Host: "https://api.example:6443"}, callTimeout: 5 * time.Second}, cs
}

func small() Deployment {
	return Deployment{Name: "qwen", Namespace: "inference", Replicas: 2, ServiceType: "ClusterIP", ServicePort: 80}
}

func ptr[T any](v T) *T { return &v }

func testSpec() engine.Spec {
	return engine.Spec{Engine: engine.LlamaCpp, Model: "qwen", Port: 8080}
}

func readinessForTest() deploy.Readiness {
	return deploy.Readiness{Engine: engine.LlamaCpp, Model: "qwen", Interval: 20 * time.Millisecond}
}

// deploymentObject is d's Deployment as the cluster holds it, owned by llmserve.
func deploymentObject(d Deployment, ready int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: d.Namespace, Generation: 1, Labels: d.objectLabels()},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr(d.Replicas)},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: d.Replicas, UpdatedReplicas: d.Replicas,
			ReadyReplicas: ready, AvailableReplicas: ready},
	}
}

// pod is a pod of d; ready says whether its Ready condition is true.
func pod(d Deployment, name string, ready bool) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.Namespace, Labels: d.objectLabels()},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: "10.0.0." + name[len(name)-1:],
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: engineContainer,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
		},
	}
}

func TestWaitRolloutDone(t *testing.T) {
	t.Parallel()
	d := small()
	c, _ := fakeCluster(deploymentObject(d, 2))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.WaitRollout(ctx, d, engine.Spec{}, nil); err != nil {
		t.Fatalf("rolled-out Deployment: %v", err)
	}
}

func TestWaitRolloutGone(t *testing.T) {
	t.Parallel()
	d := small()
	c, _ := fakeCluster()
	err := c.WaitRollout(context.Background(), d, engine.Spec{}, nil)
	if err == nil || !strings.Contains(err.Error(), "was deleted during its rollout") {
		t.Fatalf("missing Deployment: %v", err)
	}
}

// A container that cannot start fails the rollout at once, with the pod's state, its events
// (secrets redacted) and its log lines; a ready pod is not diagnosed.
func TestWaitRolloutCrashLoopDiagnosed(t *testing.T) {
	d := small()
	crashing := pod(d, "qwen-a", false)
	crashing.Spec.NodeName = "node-1"
	crashing.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: engineContainer, RestartCount: 4,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s"}}}}
	now := time.Now()
	ev := func(name, reason, msg string, at time.Time) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.Namespace},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "qwen-a"},
			Type:           "Warning", Reason: reason, Message: msg, LastTimestamp: metav1.NewTime(at)}
	}
	c, _ := fakeCluster(deploymentObject(d, 1), crashing, pod(d, "qwen-b", true),
		ev("e2", "BackOff", "restarting failed container", now),
		ev("e1", "Failed", "token hf_secret rejected", now.Add(-time.Minute)))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	err := c.WaitRollout(ctx, d, engine.Spec{}, []string{"hf_secret"})
	if time.Since(start) > 3*time.Second {
		t.Errorf("a crash-looping pod took %s to fail the rollout; it should fail at once", time.Since(start))
	}
	var re *RolloutError
	if !errors.As(err, &re) {
		t.Fatalf("want *RolloutError, got %T %v", err, err)
	}
	if re.Reason != "pod qwen-a: container engine is CrashLoopBackOff" {
		t.Errorf("reason %q", re.Reason)
	}
	if len(re.Pods) != 1 {
		t.Fatalf("diagnosed %d pods, want only the one not ready: %q", len(re.Pods), re.Pods)
	}
	diag := re.Pods[0]
	for _, want := range []string{"Pod qwen-a (phase Running, node node-1)", "container engine waiting: CrashLoopBackOff back-off 40s, 4 restarts",
		"Warning Failed: token", "Warning BackOff: restarting failed container", "Last log lines:\n    fake logs"} {
		if !strings.Contains(diag, want) {
			t.Errorf("diagnosis lacks %q:\n%s", want, diag)
		}
	}
	if strings.Contains(diag, "hf_secret") {
		t.Errorf("a secret is in the diagnosis:\n%s", diag)
	}
	if i, j := strings.Index(diag, "Failed: token"), strings.Index(diag, "BackOff:"); i > j {
		t.Errorf("events are not in time order:\n%s", diag)
	}
	if !strings.Contains(err.Error(), "rollout of Deployment inference/qwen did not complete: pod qwen-a") {
		t.Errorf("error text %q", err)
	}
}

// The Deployment's own Progressing=False condition ends the wait with its words; a pod that
// never started says so instead of asking for logs.
func TestWaitRolloutProgressDeadline(t *testing.T) {
	t.Parallel()
	d := small()
	dep := deploymentObject(d, 0)
	dep.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
		Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "qwen-1" has timed out progressing.`}}
	pending := pod(d, "qwen-a", false)
	pending.Status.Phase = corev1.PodPending
	pending.Status.ContainerStatuses = nil
	pending.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: "Unschedulable", Message: "0/3 nodes are available: 3 Insufficient gpu.intel.com/xe."}}
	c, _ := fakeCluster(dep, pending)
	err := c.WaitRollout(context.Background(), d, engine.Spec{}, nil)
	var re *RolloutError
	if !errors.As(err, &re) {
		t.Fatalf("want *RolloutError, got %T %v", err, err)
	}
	if !strings.HasPrefix(re.Reason, "ProgressDeadlineExceeded: ") {
		t.Errorf("reason %q", re.Reason)
	}
	if len(re.Pods) != 1 {
		t.Fatalf("pods %q", re.Pods)
	}
	for _, want := range []string{"PodScheduled: Unschedulable 0/3 nodes", "Events: none", "none, the engine container never started"} {
		if !strings.Contains(re.Pods[0], want) {
			t.Errorf("diagnosis lacks %q:\n%s", want, re.Pods[0])
		}
	}
}

// Running out of time reports how many replicas were ready and diagnoses at most three pods.
func TestWaitRolloutTimeout(t *testing.T) {
	t.Parallel()
	d := small()
	d.Replicas = 5
	objs := []runtime.Object{deploymentObject(d, 1)}
	for _, n := range []string{"qwen-a", "qwen-b", "qwen-c", "qwen-d"} {
		objs = append(objs, pod(d, n, false))
	}
	objs = append(objs, pod(d, "qwen-e", true))
	c, _ := fakeCluster(objs...)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := c.WaitRollout(ctx, d, engine.Spec{}, nil)
	var re *RolloutError
	if !errors.As(err, &re) {
		t.Fatalf("want *RolloutError, got %T %v", err, err)
	}
	if re.Reason != "timed out (readiness_timeout); 1 of 5 replicas ready" {
		t.Errorf("reason %q", re.Reason)
	}
	if len(re.Pods) != 3 {
		t.Errorf("diagnosed %d pods, want the bound of 3", len(re.Pods))
	}
}

func TestRolledOut(t *testing.T) {
	t.Parallel()
	d := small()
	if !rolledOut(deploymentObject(d, 2)) {
		t.Error("all replicas ready: not rolled out")
	}
	for name, change := range map[string]func(*appsv1.Deployment){
		"one not ready":     func(o *appsv1.Deployment) { o.Status.ReadyReplicas = 1 },
		"old pod left":      func(o *appsv1.Deployment) { o.Status.Replicas = 3 },
		"generation unseen": func(o *appsv1.Deployment) { o.Generation = 2 },
		"not updated":       func(o *appsv1.Deployment) { o.Status.UpdatedReplicas = 1 },
	} {
		o := deploymentObject(d, 2)
		change(o)
		if rolledOut(o) {
			t.Errorf("%s: rolled out", name)
		}
	}
}

func owned(d Deployment) []runtime.Object {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: d.Namespace, Labels: d.objectLabels()}
	}
	return []runtime.Object{deploymentObject(d, 2),
		&corev1.Service{ObjectMeta: meta(d.Name)},
		&corev1.Secret{ObjectMeta: meta(SecretName(d.Name))}}
}

// exists reports which of d's three objects the cluster still holds.
func exists(t *testing.T, cs *fake.Clientset, d Deployment) (dep, svc, sec bool) {
	t.Helper()
	ctx := context.Background()
	check := func(err error) bool {
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	_, err := cs.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
	dep = check(err)
	_, err = cs.CoreV1().Services(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
	svc = check(err)
	_, err = cs.CoreV1().Secrets(d.Namespace).Get(ctx, SecretName(d.Name), metav1.GetOptions{})
	sec = check(err)
	return dep, svc, sec
}

func TestDeleteOwned(t *testing.T) {
	t.Parallel()
	d := small()
	other := d
	other.Name = "other"
	c, cs := fakeCluster(append(owned(d), owned(other)...)...)
	if err := c.Delete(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if dep, svc, sec := exists(t, cs, d); dep || svc || sec {
		t.Errorf("left after delete: Deployment %v, Service %v, Secret %v", dep, svc, sec)
	}
	if dep, svc, sec := exists(t, cs, other); !dep || !svc || !sec {
		t.Errorf("another deployment's objects were touched: Deployment %v, Service %v, Secret %v", dep, svc, sec)
	}
	// Deleting again finds nothing and succeeds.
	if err := c.Delete(context.Background(), d); err != nil {
		t.Errorf("second delete: %v", err)
	}
}

// An object of the deployment's name that llmserve did not make for it is left in place
// and named; what was deleted before it is gone.
func TestDeleteLeavesForeignObject(t *testing.T) {
	t.Parallel()
	d := small()
	objs := owned(d)
	objs[2] = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: SecretName(d.Name), Namespace: d.Namespace,
		Labels: map[string]string{ManagedByLabel: "helm", InstanceLabel: d.Name}}}
	c, cs := fakeCluster(objs...)
	err := c.Delete(context.Background(), d)
	if err == nil || !strings.Contains(err.Error(), `Secret inference/qwen exists but was not created by llmserve for this deployment (labels app.kubernetes.io/managed-by="helm"`) {
		t.Fatalf("foreign Secret: %v", err)
	}
	dep, svc, sec := exists(t, cs, d)
	if !sec {
		t.Error("the foreign Secret was deleted")
	}
	if dep || svc {
		t.Errorf("owned objects left: Deployment %v, Service %v", dep, svc)
	}
}

// Delete waits for the pods: one that stays fails the delete when ctx ends, counted.
func TestDeleteWaitsForPods(t *testing.T) {
	t.Parallel()
	d := small()
	c, _ := fakeCluster(append(owned(d), pod(d, "qwen-a", true))...)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := c.Delete(ctx, d)
	if err == nil || !strings.Contains(err.Error(), "waiting for the pods of inference/qwen to go") || !strings.Contains(err.Error(), "(1 left)") {
		t.Fatalf("a pod that stays: %v", err)
	}
}

func TestCheckOwnership(t *testing.T) {
	t.Parallel()
	d := small()
	c, _ := fakeCluster(owned(d)...)
	if err := c.CheckOwnership(context.Background(), d); err != nil {
		t.Errorf("own objects: %v", err)
	}
	c, _ = fakeCluster()
	if err := c.CheckOwnership(context.Background(), d); err != nil {
		t.Errorf("no objects: %v", err)
	}
	// Another llmserve deployment's Service under this name (its instance label differs).
	other := d
	other.Name = "other"
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: d.Namespace, Labels: other.objectLabels()}}
	c, _ = fakeCluster(svc)
	var taken *NameTakenError
	if err := c.CheckOwnership(context.Background(), d); !errors.As(err, &taken) || taken.Kind != "Service" {
		t.Errorf("foreign Service: %v", err)
	}
}

// Replicas are the ready pods of this deployment only, not going away, by name, each with
// the address its access mode reaches.
func TestReplicas(t *testing.T) {
	t.Parallel()
	d := small()
	other := d
	other.Name = "other"
	leaving := pod(d, "qwen-c", true)
	leaving.DeletionTimestamp = ptr(metav1.Now())
	leaving.Finalizers = []string{"example.com/hold"}
	c, _ := fakeCluster(pod(d, "qwen-b", true), pod(d, "qwen-a", true), pod(d, "qwen-d", false), leaving, pod(other, "other-e", true))

	reps, err := c.Replicas(context.Background(), d, 30000, PodNetwork)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range reps {
		got = append(got, r.Pod+" "+r.Base)
	}
	want := "qwen-a http://10.0.0.a:30000,qwen-b http://10.0.0.b:30000"
	if strings.Join(got, ",") != want {
		t.Errorf("pod network replicas %q, want %q", strings.Join(got, ","), want)
	}

	reps, err = c.Replicas(context.Background(), d, 30000, APIProxy)
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 2 || reps[0].Base != "https://api.example:6443/api/v1/namespaces/inference/pods/qwen-a:30000/proxy" {
		t.Errorf("api proxy replicas %+v", reps)
	}

	// What a benchmark flushes: the ready pods on the pod network, whatever pod_access is.
	eps, err := c.ReplicaEndpoints(context.Background(), d, 30000)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(eps, ","), "http://10.0.0.a:30000,http://10.0.0.b:30000"; got != want {
		t.Errorf("replica endpoints %q, want %q", got, want)
	}
}

// ProveGenerates waits for as many ready pods as replicas and, when they never come, says
// how many it had.
func TestProveGeneratesTooFewReady(t *testing.T) {
	t.Parallel()
	d := small()
	c, _ := fakeCluster(pod(d, "qwen-a", true), pod(d, "qwen-b", false))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, n, err := c.ProveGenerates(ctx, d, 30000, PodNetwork, readinessForTest())
	if err == nil || !strings.Contains(err.Error(), "waiting for 2 ready pods of inference/qwen") || !strings.Contains(err.Error(), "(have 1)") {
		t.Fatalf("one of two ready: n=%d err=%v", n, err)
	}
}

// Read reports the drift-prone values: spec replicas as the cluster has it, ready count,
// the Service's address and the image the runtime resolved.
func TestRead(t *testing.T) {
	t.Parallel()
	d := small()
	dep := deploymentObject(d, 1)
	rec, err := d.DeploymentApply(testSpec(), nil)
	if err != nil {
		t.Fatal(err)
	}
	dep.Annotations = rec.Annotations
	dep.Spec.Replicas = ptr(int32(3)) // kubectl scale
	p := pod(d, "qwen-a", true)
	p.Status.ContainerStatuses[0].ImageID = "docker-pullable://lmsysorg/sglang@sha256:abc"
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: d.Namespace},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.7", Ports: []corev1.ServicePort{{Port: 80}}}}
	c, _ := fakeCluster(dep, p, svc)

	st, err := c.Read(context.Background(), d.Namespace, d.Name)
	if err != nil {
		t.Fatal(err)
	}
	if st.Replicas != 3 || st.ReadyReplicas != 1 || !st.ServiceFound || st.Endpoint != "http://10.96.0.7:80" ||
		st.ImageDigest != "lmsysorg/sglang@sha256:abc" || st.Record.Deployment.Name != d.Name {
		t.Errorf("status %+v", st)
	}

	c, _ = fakeCluster()
	if _, err := c.Read(context.Background(), d.Namespace, d.Name); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing Deployment: %v", err)
	}
	dep.Annotations = nil
	c, _ = fakeCluster(dep)
	if _, err := c.Read(context.Background(), d.Namespace, d.Name); err == nil || !strings.Contains(err.Error(), "was not created by llmserve") {
		t.Errorf("Deployment without the launch record: %v", err)
	}
}

// With every replica ready, ProveGenerates sends a real completion to each pod (here all
// pods share one address, so the server counts them) and reports the replica count.
func TestProveGeneratesEveryReplica(t *testing.T) {
	t.Parallel()
	var completions atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
		case "/v1/completions":
			completions.Add(1)
			_, _ = w.Write([]byte(`{"choices":[{"text":"hi"}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	host, portText, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portText)
	d := small()
	a, b := pod(d, "qwen-a", true), pod(d, "qwen-b", true)
	a.Status.PodIP, b.Status.PodIP = host, host
	c, _ := fakeCluster(a, b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, n, err := c.ProveGenerates(ctx, d, port, PodNetwork, readinessForTest())
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 || completions.Load() < 2 {
		t.Errorf("replicas %d, completions %d; want 2 and one per replica", n, completions.Load())
	}
}

// A replica that answers its completion with "!!!!" (degenerate: the rules a trial applies)
// fails ProveGenerates at once, naming the pod and quoting the output, instead of being
// polled until the timeout.
func TestProveGeneratesRefusesDegenerateOutput(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
		case "/v1/completions":
			_, _ = w.Write([]byte(`{"choices":[{"text":"!!!!!!!!!!!!!!!!"}],"usage":{"completion_tokens":16}}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	host, portText, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portText)
	d := small()
	a, b := pod(d, "qwen-a", true), pod(d, "qwen-b", true)
	a.Status.PodIP, b.Status.PodIP = host, host
	c, _ := fakeCluster(a, b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	_, _, err = c.ProveGenerates(ctx, d, port, PodNetwork, readinessForTest())
	var broken *deploy.DegenerateError
	if !errors.As(err, &broken) || !strings.Contains(err.Error(), "replica qwen-") || !strings.Contains(err.Error(), `"!!!!!!!!!!!!!!!!"`) {
		t.Fatalf("ProveGenerates error = %v, want the pod's DegenerateError quoting its output", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("ProveGenerates took %v: it polled on after a degenerate completion", d)
	}
}

// Apply (server-side, on the field-managed fake) creates the three objects, keeps the
// secret out of the Deployment, and removes its own Secret once no secret is configured;
// a Secret of that name someone else made is left and named.
func TestApplySecretLifecycle(t *testing.T) {
	t.Parallel()
	d := small()
	spec := engine.Spec{Engine: engine.SGLang, Model: "Qwen/Qwen3-8B", Port: 30000}
	cs := fake.NewClientset()
	c := &Cluster{cs: cs, rest: &rest.Config{Host: "https://api.example:6443"}, callTimeout: 5 * time.Second}
	ctx := context.Background()
	if err := c.Apply(ctx, d, spec, engine.Secrets{APIKey: "sk-secret"}); err != nil {
		t.Fatal(err)
	}
	if dep, svc, sec := exists(t, cs, d); !dep || !svc || !sec {
		t.Fatalf("after apply: Deployment %v, Service %v, Secret %v", dep, svc, sec)
	}
	dep, err := cs.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := ParseLaunchRecord(dep.Annotations[RecordAnnotation]); err != nil || rec.Deployment.Name != d.Name {
		t.Errorf("launch record %+v %v", rec, err)
	}
	if strings.Contains(dep.String(), "sk-secret") {
		t.Error("the API key is in the Deployment")
	}

	if err := c.Apply(ctx, d, spec, engine.Secrets{}); err != nil {
		t.Fatal(err)
	}
	if dep, svc, sec := exists(t, cs, d); !dep || !svc || sec {
		t.Errorf("after apply without secrets: Deployment %v, Service %v, Secret %v (want it gone)", dep, svc, sec)
	}

	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: SecretName(d.Name), Namespace: d.Namespace}}
	if _, err := cs.CoreV1().Secrets(d.Namespace).Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(ctx, d, spec, engine.Secrets{}); err == nil || !strings.Contains(err.Error(), "was not created by llmserve") {
		t.Errorf("foreign Secret: %v", err)
	}
	if _, _, sec := exists(t, cs, d); !sec {
		t.Error("the foreign Secret was deleted")
	}
}
