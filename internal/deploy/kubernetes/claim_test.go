package kubernetes

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

// claimCluster is the field-managed fake with resource.k8s.io/v1 served (or not) and the
// given objects.
func claimCluster(t *testing.T, served bool, objs ...runtime.Object) (*Cluster, *fake.Clientset) {
	t.Helper()
	cs := fake.NewClientset(objs...)
	if served {
		cs.Resources = append(cs.Resources, &metav1.APIResourceList{GroupVersion: draGroupVersion,
			APIResources: []metav1.APIResource{{Name: "resourceclaimtemplates", Namespaced: true, Kind: "ResourceClaimTemplate"}}})
	}
	return &Cluster{cs: cs, rest: &rest.Config{Host: "https://api.example:6443"}, callTimeout: 5 * time.Second}, cs
}

func claimed() Deployment {
	d := small()
	d.AcceleratorClaim = &AcceleratorClaim{DeviceClass: "gpu.intel.com", Selectors: []string{`device.attributes["gpu.intel.com"].deviceType == "discrete"`}}
	return d
}

var twoRanks = engine.Spec{Engine: engine.LlamaCpp, Model: "/models/m.gguf", Port: 8080, TensorParallel: 2, Accelerator: engine.XPU}

// The template asks for one device per tensor-parallel rank of the class, with the
// selectors, and its claims carry the deployment's labels; the pods reference it and the
// engine container consumes the claim, with no extended resource.
func TestClaimTemplateApply(t *testing.T) {
	t.Parallel()
	d := claimed()
	ta := d.ClaimTemplateApply(twoRanks.TensorParallel)
	if *ta.Name != "qwen-accelerator" || *ta.Namespace != "inference" || ta.Labels[InstanceLabel] != "qwen" {
		t.Fatalf("template %s/%s labels %v", *ta.Namespace, *ta.Name, ta.Labels)
	}
	if ta.Spec.Labels[InstanceLabel] != "qwen" || ta.Spec.Labels[ManagedByLabel] != "llmserve" {
		t.Errorf("claims made from it are labelled %v", ta.Spec.Labels)
	}
	reqs := ta.Spec.Spec.Devices.Requests
	if len(reqs) != 1 || *reqs[0].Name != "accelerator" {
		t.Fatalf("requests %+v", reqs)
	}
	ex := reqs[0].Exactly
	if *ex.DeviceClassName != "gpu.intel.com" || *ex.AllocationMode != resourcev1.DeviceAllocationModeExactCount || *ex.Count != 2 ||
		len(ex.Selectors) != 1 || *ex.Selectors[0].CEL.Expression != `device.attributes["gpu.intel.com"].deviceType == "discrete"` {
		t.Errorf("request %+v", ex)
	}
	d.AcceleratorClaim.Count = 3
	if got := *d.ClaimTemplateApply(twoRanks.TensorParallel).Spec.Spec.Devices.Requests[0].Exactly.Count; got != 3 {
		t.Errorf("count %d, want the configured 3", got)
	}
	da, err := d.DeploymentApply(twoRanks, nil)
	if err != nil {
		t.Fatal(err)
	}
	pod := da.Spec.Template.Spec
	if len(pod.ResourceClaims) != 1 || *pod.ResourceClaims[0].Name != "accelerator" || *pod.ResourceClaims[0].ResourceClaimTemplateName != "qwen-accelerator" {
		t.Errorf("pod resource claims %+v", pod.ResourceClaims)
	}
	res := pod.Containers[0].Resources
	if res == nil || len(res.Claims) != 1 || *res.Claims[0].Name != "accelerator" || res.Limits != nil {
		t.Errorf("engine container resources %+v", res)
	}
	if small().ClaimTemplateApply(1) != nil {
		t.Error("a template without a claim")
	}
}

// Apply checks the claim can be made before it applies anything: the API served, the class
// there. Then the template is applied beside the Deployment, and removed again once the
// deployment claims nothing.
func TestApplyClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := claimed()

	c, cs := claimCluster(t, false)
	err := c.Apply(ctx, d, twoRanks, engine.Secrets{})
	var noAPI *NoClaimAPIError
	if !errors.As(err, &noAPI) || !strings.Contains(err.Error(), "needs Dynamic Resource Allocation's API resource.k8s.io/v1") {
		t.Fatalf("cluster without the API: %v", err)
	}
	if dep, _, _ := exists(t, cs, d); dep {
		t.Error("the Deployment was applied although its claim cannot be made")
	}

	c, _ = claimCluster(t, true)
	err = c.Apply(ctx, d, twoRanks, engine.Secrets{})
	var noClass *NoDeviceClassError
	if !errors.As(err, &noClass) || !strings.Contains(err.Error(), `the cluster has no DeviceClass "gpu.intel.com"`) {
		t.Fatalf("missing class: %v", err)
	}

	class := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.intel.com"}}
	c, cs = claimCluster(t, true, class)
	if err := c.Apply(ctx, d, twoRanks, engine.Secrets{}); err != nil {
		t.Fatal(err)
	}
	tmpl, err := cs.ResourceV1().ResourceClaimTemplates(d.Namespace).Get(ctx, "qwen-accelerator", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.Spec.Spec.Devices.Requests[0].Exactly.Count != 2 {
		t.Errorf("applied template %+v", tmpl.Spec.Spec.Devices)
	}
	if dep, svc, _ := exists(t, cs, d); !dep || !svc {
		t.Errorf("after apply: Deployment %v, Service %v", dep, svc)
	}
	if err := c.Apply(ctx, small(), twoRanks, engine.Secrets{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ResourceV1().ResourceClaimTemplates(d.Namespace).Get(ctx, "qwen-accelerator", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the template outlived its claim: %v", err)
	}
}

// Destroy removes the template and waits until the pods' claims are gone: one that stays
// fails the delete when ctx ends, counted. A template someone else made is left.
func TestDeleteClaims(t *testing.T) {
	t.Parallel()
	d := claimed()
	tmpl := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "qwen-accelerator", Namespace: d.Namespace, Labels: d.objectLabels()}}
	claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "qwen-7d9f-abcde-accelerator-x2k4q", Namespace: d.Namespace, Labels: d.objectLabels()}}
	c, cs := claimCluster(t, true, append(owned(d), tmpl, claim)...)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := c.Delete(ctx, d)
	if err == nil || !strings.Contains(err.Error(), "waiting for the 1 ResourceClaims of inference/qwen to go after its pods") {
		t.Fatalf("a claim that stays: %v", err)
	}
	if _, err := cs.ResourceV1().ResourceClaimTemplates(d.Namespace).Get(context.Background(), tmpl.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("template left: %v", err)
	}
	if err := cs.ResourceV1().ResourceClaims(d.Namespace).Delete(context.Background(), claim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(context.Background(), d); err != nil {
		t.Errorf("with the claim gone: %v", err)
	}

	foreign := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "qwen-accelerator", Namespace: d.Namespace}}
	c, _ = claimCluster(t, true, foreign)
	var taken *NameTakenError
	if err := c.CheckOwnership(context.Background(), d); !errors.As(err, &taken) || taken.Kind != "ResourceClaimTemplate" || taken.Name != "qwen-accelerator" {
		t.Errorf("foreign template: %v", err)
	}
	if err := c.Delete(context.Background(), d); err == nil || !strings.Contains(err.Error(), "ResourceClaimTemplate inference/qwen exists but was not created by llmserve") {
		t.Errorf("delete with a foreign template: %v", err)
	}
}

// A rollout whose pod the scheduler cannot place for its claim says, in the configuration's
// terms, what each replica asked for, beside the scheduler's words.
func TestRolloutErrorNamesTheClaim(t *testing.T) {
	t.Parallel()
	d := claimed()
	d.Replicas = 1
	p := pod(d, "qwen-a", false)
	p.Status.Phase = corev1.PodPending
	p.Status.ContainerStatuses = nil
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: "0/2 nodes are available: 2 cannot allocate all claims."})
	c, _ := fakeCluster(deploymentObject(d, 0), p)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := c.WaitRollout(ctx, d, twoRanks, nil)
	want := `no node could allocate accelerator_claim for pod qwen-a: 2 devices of DeviceClass "gpu.intel.com" matching the selector ` +
		`"device.attributes[\"gpu.intel.com\"].deviceType == \"discrete\"" per replica (the scheduler: 0/2 nodes are available: 2 cannot allocate all claims.)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("rollout error:\n%v\nwant it to contain\n%s", err, want)
	}
}
