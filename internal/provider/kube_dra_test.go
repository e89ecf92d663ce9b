package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/kubernetes"
)

// A stand-in DRA driver: no kubelet plugin (kwok has no kubelet), only what a driver
// publishes for the scheduler: a DeviceClass selecting its devices and one ResourceSlice per
// node, four devices each. The scheduler's allocation is real: the kube-scheduler of the
// test control plane, its DynamicResources plugin, reading these slices.
const (
	standInDriver = "gpu.llmserve.test"
	standInClass  = "gpu.llmserve.test"
	standInModel  = "stand-in-b70"
)

// publishStandInDriver creates the class and the slices, and removes them when the test ends.
func publishStandInDriver(t *testing.T, cs k8s.Interface) {
	t.Helper()
	ctx := context.Background()
	class := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: standInClass},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "` + standInDriver + `"`}}}}}
	if _, err := cs.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating DeviceClass %s (does the API server serve resource.k8s.io/v1?): %v", standInClass, err)
	}
	t.Cleanup(func() {
		_ = cs.ResourceV1().DeviceClasses().Delete(context.Background(), standInClass, metav1.DeleteOptions{})
	})
	for _, node := range []string{"kwok-gpu-0", "kwok-gpu-1"} {
		slice := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-" + standInDriver},
			Spec: resourcev1.ResourceSliceSpec{Driver: standInDriver, NodeName: &node,
				Pool: resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}}}
		for i := range 4 {
			model := standInModel
			slice.Spec.Devices = append(slice.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("gpu-%d", i),
				Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"model": {StringValue: &model}}})
		}
		if _, err := cs.ResourceV1().ResourceSlices().Create(ctx, slice, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("publishing ResourceSlice %s: %v", slice.Name, err)
		}
		t.Cleanup(func() {
			_ = cs.ResourceV1().ResourceSlices().Delete(context.Background(), slice.Name, metav1.DeleteOptions{})
		})
	}
}

// kubeClaimConfig is kubeAccConfig's tiny llama.cpp deployment with its devices claimed
// through DRA instead of an extended resource.
func kubeClaimConfig(kubeconfig, name string, replicas int, class string, count int, readiness string) string {
	cfg := kubeAccConfig(kubeconfig, name, replicas, 0, "")
	claim := fmt.Sprintf(`accelerator_claim    = {
    device_class = %q
    count        = %d
    selectors    = ["device.attributes[\"%s\"].model == \"%s\""]
  }`, class, count, standInDriver, standInModel)
	cfg = strings.Replace(cfg, `accelerator_resource = "nvidia.com/gpu"`, claim, 1)
	cfg = strings.Replace(cfg, "  accelerator_count    = 0\n", "", 1)
	return strings.Replace(cfg, `readiness_timeout    = "2m"`, fmt.Sprintf("readiness_timeout    = %q", readiness), 1)
}

// TestAccInferenceDeployment_draClaim: accelerator_claim against the real API server,
// controller manager and scheduler, with a stand-in driver's slices published by hand. Two
// replicas get a claim each from the template, allocated two devices of the class on the
// node each pod was scheduled to; import restores the claim; destroy removes the template and
// the claims. A claim no node can satisfy fails the rollout naming the class and the count,
// and a class the cluster lacks fails the apply before anything is created.
func TestAccInferenceDeployment_draClaim(t *testing.T) {
	kubeconfig, cs := kubeTestEnv(t)
	engines := startKubeEngines(t, cs, "default")
	publishStandInDriver(t, cs)
	ctx := context.Background()
	const name = "claimed"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             kubeClaimsGone(cs, "default", name),
		Steps: []resource.TestStep{
			{
				Config: kubeClaimConfig(kubeconfig, name, 2, standInClass, 2, "2m"),
				ConfigStateChecks: []statecheck.StateCheck{
					// The claim asks for the devices: no extended resource planned.
					statecheck.ExpectKnownValue(kubeAccResource, tfjsonpath.New("accelerator_resource"), knownvalue.StringExact("")),
					statecheck.ExpectKnownValue(kubeAccResource, tfjsonpath.New("accelerator_count"), knownvalue.Int64Exact(0)),
					statecheck.ExpectKnownValue(kubeAccResource, tfjsonpath.New("accelerator_claim").AtMapKey("device_class"), knownvalue.StringExact(standInClass)),
				},
				Check: func(*terraform.State) error { return kubeCheckAllocated(t, ctx, cs, name, 2, 2, engines) },
			},
			{
				ResourceName:            kubeAccResource,
				ImportState:             true,
				ImportStateId:           "default/" + name,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
		},
	})

	const unsatisfiable = "too-many"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             kubeClaimsGone(cs, "default", unsatisfiable),
		Steps: []resource.TestStep{{
			// Four devices a node: five on one node is nothing the scheduler can allocate.
			Config: kubeClaimConfig(kubeconfig, unsatisfiable, 1, standInClass, 5, "15s"),
			ExpectError: regexp.MustCompile(`(?s)did not roll out.*` + words("no node could allocate accelerator_claim for pod") + `\s+too-many-[a-z0-9-]+:\s+` +
				words(`5 devices of DeviceClass "`+standInClass+`"`)),
		}},
	})
	if err := kubeClaimsGone(cs, "default", unsatisfiable)(nil); err != nil {
		t.Errorf("the failed create left objects behind: %v", err)
	}

	const missing = "no-class"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             kubeClaimsGone(cs, "default", missing),
		Steps: []resource.TestStep{{
			Config:      kubeClaimConfig(kubeconfig, missing, 1, "gpu.missing.test", 1, "15s"),
			ExpectError: regexp.MustCompile(words(`the cluster has no DeviceClass "gpu.missing.test"`)),
		}},
	})
	if _, err := cs.AppsV1().Deployments("default").Get(ctx, missing, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a Deployment was created for a class the cluster lacks (err %v)", err)
	}
}

// kubeCheckAllocated checks the DRA objects as the scheduler left them: the template, one
// claim per pod made from it and reserved for that pod, each allocated count devices of the
// stand-in driver from the pool of the pod's node, no device given twice; and an engine per
// replica. It logs the allocation, the figure the note quotes.
func kubeCheckAllocated(t *testing.T, ctx context.Context, cs k8s.Interface, name string, replicas, count int, engines *kubeEngines) error {
	tmpl, err := cs.ResourceV1().ResourceClaimTemplates("default").Get(ctx, kubernetes.ClaimTemplateName(name), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("template: %w", err)
	}
	req := tmpl.Spec.Spec.Devices.Requests
	if len(req) != 1 || req[0].Exactly == nil || req[0].Exactly.DeviceClassName != standInClass || req[0].Exactly.Count != int64(count) {
		return fmt.Errorf("template requests %+v", req)
	}
	t.Logf("ResourceClaimTemplate %s: %d x DeviceClass %s, selectors %d, labels %v", tmpl.Name, req[0].Exactly.Count, req[0].Exactly.DeviceClassName,
		len(req[0].Exactly.Selectors), tmpl.Spec.Labels)
	pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: kubernetes.InstanceLabel + "=" + name})
	if err != nil {
		return err
	}
	if len(pods.Items) != replicas {
		return fmt.Errorf("%d pods, want %d", len(pods.Items), replicas)
	}
	given := map[string]string{}
	for _, p := range pods.Items {
		if len(p.Spec.ResourceClaims) != 1 || p.Spec.ResourceClaims[0].ResourceClaimTemplateName == nil || *p.Spec.ResourceClaims[0].ResourceClaimTemplateName != tmpl.Name {
			return fmt.Errorf("pod %s claims %+v", p.Name, p.Spec.ResourceClaims)
		}
		if len(p.Status.ResourceClaimStatuses) != 1 || p.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
			return fmt.Errorf("pod %s has no claim made for it: %+v", p.Name, p.Status.ResourceClaimStatuses)
		}
		claim, err := cs.ResourceV1().ResourceClaims("default").Get(ctx, *p.Status.ResourceClaimStatuses[0].ResourceClaimName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if claim.Labels[kubernetes.InstanceLabel] != name {
			return fmt.Errorf("claim %s labels %v: destroy could not find it", claim.Name, claim.Labels)
		}
		if !slices.ContainsFunc(claim.Status.ReservedFor, func(r resourcev1.ResourceClaimConsumerReference) bool { return r.Name == p.Name }) {
			return fmt.Errorf("claim %s is reserved for %+v, not pod %s", claim.Name, claim.Status.ReservedFor, p.Name)
		}
		alloc := claim.Status.Allocation
		if alloc == nil || len(alloc.Devices.Results) != count {
			return fmt.Errorf("claim %s of pod %s (node %q): allocation %+v, want %d devices", claim.Name, p.Name, p.Spec.NodeName, alloc, count)
		}
		var devs []string
		for _, r := range alloc.Devices.Results {
			if r.Driver != standInDriver || r.Pool != p.Spec.NodeName || r.Request != "accelerator" {
				return fmt.Errorf("claim %s: device %+v is not the stand-in's on the pod's node %s", claim.Name, r, p.Spec.NodeName)
			}
			id := r.Pool + "/" + r.Device
			if other, dup := given[id]; dup {
				return fmt.Errorf("device %s allocated to both %s and %s", id, other, p.Name)
			}
			given[id] = p.Name
			devs = append(devs, id)
		}
		t.Logf("pod %s on %s: ResourceClaim %s allocated %v (driver %s, request accelerator), reserved for the pod", p.Name, p.Spec.NodeName, claim.Name, devs, standInDriver)
	}
	if n := engines.running(); n != replicas {
		return fmt.Errorf("want %d engines running on pod IPs, have %s", replicas, engines)
	}
	return nil
}

// kubeClaimsGone is kubeCheckGone plus the template and the claims, which must be gone too:
// a claim left would hold its devices.
func kubeClaimsGone(cs k8s.Interface, ns, name string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		if err := kubeCheckGone(cs, ns, name)(s); err != nil {
			return err
		}
		ctx := context.Background()
		if _, err := cs.ResourceV1().ResourceClaimTemplates(ns).Get(ctx, kubernetes.ClaimTemplateName(name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("ResourceClaimTemplate %s still there (err %v)", kubernetes.ClaimTemplateName(name), err)
		}
		// The resourceclaim controller deletes a pod's claim once the pod is gone; destroy waits
		// for it, so none may be left when it returns.
		deadline := time.Now().Add(time.Second)
		for {
			claims, err := cs.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{LabelSelector: kubernetes.InstanceLabel + "=" + name})
			if err != nil {
				return err
			}
			if len(claims.Items) == 0 {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%d ResourceClaims of %s still there", len(claims.Items), name)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
