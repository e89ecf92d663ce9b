package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
	"github.com/llmserve/terraform-provider-llmserve/internal/httpbody"
)

// ErrNotFound means the Deployment does not exist.
var ErrNotFound = errors.New("deployment not found")

// Apply creates or updates the Secret, Deployment and Service with server-side apply. Force
// takes fields back from a manager that changed them by hand (kubectl scale), which is what
// applying a configuration means.
func (c *Cluster) Apply(ctx context.Context, d Deployment, s engine.Spec, sec engine.Secrets) error {
	opts := metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	var keys []string
	if sa := d.SecretApply(s, sec); sa != nil {
		if err := c.apply(ctx, func(ctx context.Context) error {
			_, err := c.cs.CoreV1().Secrets(d.Namespace).Apply(ctx, sa, opts)
			return err
		}); err != nil {
			return fmt.Errorf("applying Secret %s/%s: %w", d.Namespace, SecretName(d.Name), err)
		}
		for k := range secretData(s, sec) {
			keys = append(keys, k)
		}
		slices.Sort(keys)
	} else if err := c.deleteOwned(ctx, "Secret", d, c.secretLabels, c.deleteSecret); err != nil {
		return err
	}
	// The template before the pods that reference it: a pod whose template is missing waits.
	if err := c.applyClaimTemplate(ctx, d, s, opts); err != nil {
		return err
	}
	da, err := d.DeploymentApply(s, keys)
	if err != nil {
		return err
	}
	if err := c.apply(ctx, func(ctx context.Context) error {
		_, err := c.cs.AppsV1().Deployments(d.Namespace).Apply(ctx, da, opts)
		return err
	}); err != nil {
		return fmt.Errorf("applying Deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	if err := c.apply(ctx, func(ctx context.Context) error {
		_, err := c.cs.CoreV1().Services(d.Namespace).Apply(ctx, d.ServiceApply(s), opts)
		return err
	}); err != nil {
		return fmt.Errorf("applying Service %s/%s: %w", d.Namespace, d.Name, err)
	}
	return nil
}

// apply runs one server-side apply under the request bound, explaining a cluster failure.
func (c *Cluster) apply(ctx context.Context, f func(context.Context) error) error {
	callCtx, cancel := c.bound(ctx)
	defer cancel()
	return c.explain(ctx, f(callCtx))
}

// CheckOwnership fails with a *NameTakenError when a Deployment, Service, Secret or
// ResourceClaimTemplate of d's names exists that this provider did not create for d:
// server-side apply with Force would otherwise take it over, and destroy would then delete
// someone else's object. A cluster it cannot ask is a *ClusterError.
func (c *Cluster) CheckOwnership(ctx context.Context, d Deployment) error {
	for _, o := range []struct {
		kind, name string
		get        labelsFunc
	}{{"Deployment", d.Name, c.deploymentLabels}, {"Service", d.Name, c.serviceLabels}, {"Secret", SecretName(d.Name), c.secretLabels},
		{"ResourceClaimTemplate", ClaimTemplateName(d.Name), c.claimTemplateLabels}} {
		l, err := o.get(ctx, d.Namespace, d.Name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading %s %s/%s: %w", o.kind, d.Namespace, o.name, c.explain(ctx, err))
		}
		if l[ManagedByLabel] != managedBy || l[InstanceLabel] != d.Name {
			return &NameTakenError{Kind: o.kind, Namespace: d.Namespace, Name: o.name}
		}
	}
	return nil
}

// Status is what the cluster reports about a deployment; the values that drift.
type Status struct {
	Record        LaunchRecord
	Replicas      int32 // spec.replicas as the cluster has it (kubectl scale shows here)
	ReadyReplicas int32
	ServiceFound  bool
	Endpoint      string
	ImageDigest   string
}

// Read reports the deployment's state; ErrNotFound (wrapped) when the Deployment is gone.
func (c *Cluster) Read(ctx context.Context, namespace, name string) (Status, error) {
	getCtx, cancel := c.bound(ctx)
	defer cancel()
	dep, err := c.cs.AppsV1().Deployments(namespace).Get(getCtx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Status{}, fmt.Errorf("%s/%s: %w", namespace, name, ErrNotFound)
	}
	if err != nil {
		return Status{}, fmt.Errorf("reading Deployment %s/%s: %w", namespace, name, c.explain(ctx, err))
	}
	rec, err := ParseLaunchRecord(dep.Annotations[RecordAnnotation])
	if err != nil {
		return Status{}, fmt.Errorf("Deployment %s/%s: %w", namespace, name, err)
	}
	st := Status{Record: rec, ReadyReplicas: dep.Status.ReadyReplicas, Replicas: 1}
	if dep.Spec.Replicas != nil {
		st.Replicas = *dep.Spec.Replicas
	}
	pods, err := c.readyPods(ctx, rec.Deployment)
	if err != nil {
		return Status{}, err
	}
	svcCtx, cancel := c.bound(ctx)
	defer cancel()
	svc, err := c.cs.CoreV1().Services(namespace).Get(svcCtx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return Status{}, fmt.Errorf("reading Service %s/%s: %w", namespace, name, c.explain(ctx, err))
	default:
		st.ServiceFound = true
		st.Endpoint = endpoint(svc, pods)
	}
	if len(pods) > 0 {
		st.ImageDigest = imageDigest(pods[0])
	}
	return st, nil
}

// endpoint is the Service's base URL as a client of the replicated service uses it: the
// load balancer's address, a node port on a node running a replica, or the cluster IP
// (reachable inside the cluster network). Empty while a load balancer is pending.
func endpoint(svc *corev1.Service, pods []corev1.Pod) string {
	if len(svc.Spec.Ports) == 0 {
		return ""
	}
	p := svc.Spec.Ports[0]
	url := func(host string, port int32) string {
		return "http://" + net.JoinHostPort(host, strconv.Itoa(int(port)))
	}
	switch svc.Spec.Type {
	case corev1.ServiceTypeLoadBalancer:
		for _, in := range svc.Status.LoadBalancer.Ingress {
			if in.IP != "" {
				return url(in.IP, p.Port)
			}
			if in.Hostname != "" {
				return url(in.Hostname, p.Port)
			}
		}
		return ""
	case corev1.ServiceTypeNodePort:
		for _, pod := range pods {
			if pod.Status.HostIP != "" {
				return url(pod.Status.HostIP, p.NodePort)
			}
		}
		return ""
	}
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return ""
	}
	return url(svc.Spec.ClusterIP, p.Port)
}

// imageDigest is the image the runtime resolved, from pod status: repo@sha256:... where
// the runtime reports it.
func imageDigest(pod corev1.Pod) string {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == engineContainer {
			id := cs.ImageID
			for _, p := range []string{"docker-pullable://", "docker://"} {
				id = strings.TrimPrefix(id, p)
			}
			return id
		}
	}
	return ""
}

// readyPods are the deployment's pods that are Ready and not going away, by name.
func (c *Cluster) readyPods(ctx context.Context, d Deployment) ([]corev1.Pod, error) {
	listCtx, cancel := c.bound(ctx)
	defer cancel()
	list, err := c.cs.CoreV1().Pods(d.Namespace).List(listCtx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(d.selector()).String()})
	if err != nil {
		return nil, fmt.Errorf("listing pods of %s/%s: %w", d.Namespace, d.Name, c.explain(ctx, err))
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && podReady(p) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitingFailures are container states that do not heal by waiting: fail the rollout at
// once instead of running out the timeout.
var waitingFailures = []string{"CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "InvalidImageName",
	"CreateContainerConfigError", "CreateContainerError", "RunContainerError"}

// RolloutError is a rollout that did not complete: the Deployment's own words and, for each
// pod that is not ready, its state, events and last log lines.
type RolloutError struct {
	Namespace, Name string
	Reason          string
	Pods            []string // one diagnosis per pod
}

func (e *RolloutError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rollout of Deployment %s/%s did not complete: %s", e.Namespace, e.Name, e.Reason)
	for _, p := range e.Pods {
		b.WriteString("\n\n")
		b.WriteString(p)
	}
	return b.String()
}

// WaitRollout waits until every replica of the current template is updated, ready and
// available and no old pod is left, or fails with the failing pods' events and log lines.
// ctx bounds the wait; s is the engine spec the replicas run.
func (c *Cluster) WaitRollout(ctx context.Context, d Deployment, s engine.Spec, redact []string) error {
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	var lastErr error
	for {
		// A failed read is retried until the deadline: an API server that hiccups once must
		// not fail a rollout that is going well.
		dep, err := c.cs.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("Deployment %s/%s was deleted during its rollout", d.Namespace, d.Name)
		}
		lastErr = err
		if err == nil {
			if rolledOut(dep) {
				return nil
			}
			for _, cond := range dep.Status.Conditions {
				if cond.Type == appsv1.DeploymentProgressing && cond.Status == corev1.ConditionFalse {
					return c.rolloutError(context.WithoutCancel(ctx), d, s, cond.Reason+": "+cond.Message, redact)
				}
			}
			if reason, failing := c.failingPod(ctx, d); failing {
				return c.rolloutError(context.WithoutCancel(ctx), d, s, reason, redact)
			}
		}
		select {
		case <-ctx.Done():
			reason := fmt.Sprintf("timed out (readiness_timeout); %d of %d replicas ready", readyOf(dep), d.Replicas)
			if lastErr != nil {
				reason += fmt.Sprintf(" (last read of the Deployment failed: %v)", lastErr)
			}
			diagCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
			defer cancel()
			return c.rolloutError(diagCtx, d, s, reason, redact)
		case <-ticker.C:
		}
	}
}

func readyOf(dep *appsv1.Deployment) int32 {
	if dep == nil {
		return 0
	}
	return dep.Status.ReadyReplicas
}

func rolledOut(dep *appsv1.Deployment) bool {
	want := int32(1)
	if dep.Spec.Replicas != nil {
		want = *dep.Spec.Replicas
	}
	s := dep.Status
	return s.ObservedGeneration >= dep.Generation && s.UpdatedReplicas == want && s.ReadyReplicas == want &&
		s.AvailableReplicas == want && s.Replicas == want
}

// failingPod says whether a pod is in a state waiting cannot fix.
func (c *Cluster) failingPod(ctx context.Context, d Deployment) (string, bool) {
	list, err := c.cs.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(d.selector()).String()})
	if err != nil {
		return "", false
	}
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodFailed {
			return fmt.Sprintf("pod %s failed: %s", p.Name, p.Status.Message), true
		}
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && slices.Contains(waitingFailures, w.Reason) {
				return fmt.Sprintf("pod %s: container %s is %s", p.Name, cs.Name, w.Reason), true
			}
		}
	}
	return "", false
}

func (c *Cluster) rolloutError(ctx context.Context, d Deployment, s engine.Spec, reason string, redact []string) error {
	e := &RolloutError{Namespace: d.Namespace, Name: d.Name, Reason: reason}
	list, err := c.cs.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(d.selector()).String()})
	if err != nil {
		e.Pods = append(e.Pods, fmt.Sprintf("(listing pods failed: %v)", err))
		return e
	}
	// A claim no node can satisfy is said first, in the configuration's terms: the
	// scheduler's own message ("cannot allocate all claims") names neither class nor count.
	for _, p := range list.Items {
		if why := unallocatedClaim(d, s, p); why != "" {
			e.Reason += "; " + why
			break
		}
	}
	const maxPods = 3 // one failing pod usually explains all; three bound the message
	for _, p := range list.Items {
		if podReady(p) || len(e.Pods) == maxPods {
			continue
		}
		e.Pods = append(e.Pods, httpbody.NewRedactor(redact...).String(c.diagnose(ctx, p)))
	}
	return e
}

// diagnose describes one pod that is not ready: phase, failing conditions, container
// states, its last events and last log lines.
func (c *Cluster) diagnose(ctx context.Context, p corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Pod %s (phase %s", p.Name, p.Status.Phase)
	if p.Spec.NodeName != "" {
		fmt.Fprintf(&b, ", node %s", p.Spec.NodeName)
	}
	b.WriteString(")")
	for _, cond := range p.Status.Conditions {
		if cond.Status != corev1.ConditionTrue && (cond.Reason != "" || cond.Message != "") {
			fmt.Fprintf(&b, "\n  %s: %s %s", cond.Type, cond.Reason, cond.Message)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		switch {
		case cs.State.Waiting != nil:
			fmt.Fprintf(&b, "\n  container %s waiting: %s %s", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
		case cs.State.Terminated != nil:
			fmt.Fprintf(&b, "\n  container %s terminated: %s (exit %d)", cs.Name, cs.State.Terminated.Reason, cs.State.Terminated.ExitCode)
		}
		if cs.RestartCount > 0 {
			fmt.Fprintf(&b, ", %d restarts", cs.RestartCount)
		}
	}
	b.WriteString("\n  Events:")
	evs, err := c.cs.CoreV1().Events(p.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Pod,involvedObject.name=" + p.Name})
	switch {
	case err != nil:
		fmt.Fprintf(&b, " (cannot list: %v)", err)
	case len(evs.Items) == 0:
		b.WriteString(" none")
	default:
		items := evs.Items
		slices.SortFunc(items, func(a, b corev1.Event) int { return eventTime(a).Compare(eventTime(b)) })
		const maxEvents = 10
		if len(items) > maxEvents {
			items = items[len(items)-maxEvents:]
		}
		for _, ev := range items {
			fmt.Fprintf(&b, "\n    %s %s %s: %s", eventTime(ev).UTC().Format(time.TimeOnly), ev.Type, ev.Reason, strings.TrimSpace(ev.Message))
		}
	}
	b.WriteString("\n  Last log lines:")
	if !started(p) {
		b.WriteString(" none, the engine container never started")
		return b.String()
	}
	tail := int64(20)
	raw, err := c.cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: engineContainer, TailLines: &tail}).DoRaw(ctx)
	if err != nil {
		fmt.Fprintf(&b, " (cannot read: %v)", err)
		return b.String()
	}
	for _, l := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
		b.WriteString("\n    " + l)
	}
	return b.String()
}

func started(p corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running != nil || cs.State.Terminated != nil || cs.RestartCount > 0 {
			return true
		}
	}
	return false
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// Delete removes the Deployment, Service, Secret and ResourceClaimTemplate this provider
// created for d (each only when it carries the provider's labels for d) and waits until its
// pods, their ResourceClaims and the Deployment itself are gone.
func (c *Cluster) Delete(ctx context.Context, d Deployment) error {
	if err := c.deleteOwned(ctx, "Service", d, c.serviceLabels, c.deleteService); err != nil {
		return err
	}
	if err := c.deleteOwned(ctx, "Deployment", d, c.deploymentLabels, c.deleteDeployment); err != nil {
		return err
	}
	if err := c.deleteOwned(ctx, "Secret", d, c.secretLabels, c.deleteSecret); err != nil {
		return err
	}
	// The template goes at once (pods keep the claims already made from it); the claims go
	// with their pods, removed by the resourceclaim controller.
	if err := c.deleteOwned(ctx, "ResourceClaimTemplate", d, c.claimTemplateLabels, c.deleteClaimTemplate); err != nil {
		return err
	}
	// Deleted in the foreground, the Deployment outlives its pods until the garbage collector
	// has removed its ReplicaSets too: done only once both are gone, and the pods' claims
	// with them, so that a check or a create of the same name right after finds nothing and
	// no device stays allocated.
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		list, err := c.cs.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(d.selector()).String()})
		podsGone := err == nil && len(list.Items) == 0
		claims := -1
		if podsGone {
			_, err = c.cs.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				if claims, err = c.claimsLeft(ctx, d); err == nil && claims == 0 {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			if claims > 0 {
				return fmt.Errorf("waiting for the %d ResourceClaims of %s/%s to go after its pods: %w", claims, d.Namespace, d.Name, ctx.Err())
			}
			if podsGone {
				return fmt.Errorf("waiting for Deployment %s/%s to go after its pods: %w", d.Namespace, d.Name, ctx.Err())
			}
			n := 0
			if list != nil {
				n = len(list.Items)
			}
			return fmt.Errorf("waiting for the pods of %s/%s to go: %w (%d left)", d.Namespace, d.Name, ctx.Err(), n)
		case <-ticker.C:
		}
	}
}

type labelsFunc func(ctx context.Context, ns, name string) (map[string]string, error)
type deleteFunc func(ctx context.Context, ns, name string) error

// deleteOwned deletes one object if it exists and is this deployment's; an object of the
// same name that someone else made is left alone and reported.
func (c *Cluster) deleteOwned(ctx context.Context, kind string, d Deployment, get labelsFunc, del deleteFunc) error {
	l, err := get(ctx, d.Namespace, d.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s %s/%s: %w", kind, d.Namespace, d.Name, c.explain(ctx, err))
	}
	if l[ManagedByLabel] != managedBy || l[InstanceLabel] != d.Name {
		return fmt.Errorf("%s %s/%s exists but was not created by llmserve for this deployment (labels %s=%q, %s=%q); it was left in place: remove or rename it",
			kind, d.Namespace, d.Name, ManagedByLabel, l[ManagedByLabel], InstanceLabel, l[InstanceLabel])
	}
	delCtx, cancel := c.bound(ctx)
	defer cancel()
	if err := del(delCtx, d.Namespace, d.Name); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s %s/%s: %w", kind, d.Namespace, d.Name, c.explain(ctx, err))
	}
	return nil
}

var foreground = metav1.DeletePropagationForeground

func (c *Cluster) deploymentLabels(ctx context.Context, ns, name string) (map[string]string, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	o, err := c.cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return o.Labels, nil
}

func (c *Cluster) deleteDeployment(ctx context.Context, ns, name string) error {
	return c.cs.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &foreground})
}

func (c *Cluster) serviceLabels(ctx context.Context, ns, name string) (map[string]string, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	o, err := c.cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return o.Labels, nil
}

func (c *Cluster) deleteService(ctx context.Context, ns, name string) error {
	return c.cs.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{})
}

func (c *Cluster) secretLabels(ctx context.Context, ns, name string) (map[string]string, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	o, err := c.cs.CoreV1().Secrets(ns).Get(ctx, SecretName(name), metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return o.Labels, nil
}

func (c *Cluster) deleteSecret(ctx context.Context, ns, name string) error {
	return c.cs.CoreV1().Secrets(ns).Delete(ctx, SecretName(name), metav1.DeleteOptions{})
}
