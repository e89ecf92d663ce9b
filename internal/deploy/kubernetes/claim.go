package kubernetes

// Accelerators claimed through Dynamic Resource Allocation (resource.k8s.io/v1, GA in
// Kubernetes 1.34): a ResourceClaimTemplate that each pod of the Deployment references, so
// the resourceclaim controller makes one ResourceClaim per pod and the scheduler allocates
// it from the devices the drivers publish in ResourceSlices (Intel's resource driver
// publishes Arc GPUs under the DeviceClass gpu.intel.com). The alternative, an extended
// resource (accelerator_resource), is the device plugin's way; a deployment uses one.

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	resourcev1ac "k8s.io/client-go/applyconfigurations/resource/v1"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
)

// AcceleratorClaim is what each replica claims: Count devices of DeviceClass, each matching
// every CEL expression of Selectors (device.driver, device.attributes["…"], …).
type AcceleratorClaim struct {
	DeviceClass string `json:"device_class"`
	// Count is the devices per replica as configured; 0 leaves it to tensor_parallel_size
	// (DeviceCount), so an import restores an unset count as unset.
	Count     int64    `json:"count,omitempty"`
	Selectors []string `json:"selectors,omitempty"`
}

// claimName names the claim in the pod spec and the one device request in the template.
const claimName = "accelerator"

// MaxClaimDevices bounds accelerator_claim.count: the API's most results of one allocation
// (resource.k8s.io/v1 AllocationResultsMaxSize).
const MaxClaimDevices = resourcev1.AllocationResultsMaxSize

// ClaimTemplateName is the ResourceClaimTemplate of the deployment name.
func ClaimTemplateName(name string) string { return name + "-" + claimName }

// DeviceCount is how many devices a replica claims: Count, or one per tensor-parallel rank
// when unset.
func (a AcceleratorClaim) DeviceCount(tensorParallel int) int64 {
	if a.Count > 0 {
		return a.Count
	}
	return int64(max(tensorParallel, 1))
}

// describe says what a replica claims, for messages: `2 devices of DeviceClass
// "gpu.intel.com" matching 1 selector`.
func (a AcceleratorClaim) describe(tensorParallel int) string {
	n := a.DeviceCount(tensorParallel)
	s := fmt.Sprintf("%d device", n)
	if n != 1 {
		s += "s"
	}
	s += fmt.Sprintf(" of DeviceClass %q", a.DeviceClass)
	switch len(a.Selectors) {
	case 0:
	case 1:
		s += fmt.Sprintf(" matching the selector %q", a.Selectors[0])
	default:
		s += fmt.Sprintf(" matching %d selectors (%s)", len(a.Selectors), strings.Join(a.Selectors, " && "))
	}
	return s
}

// validate applies the API's rules to the claim, which the API server would otherwise
// enforce only at apply, under at.
func (a AcceleratorClaim) validate(at attrpath.Path) []problem.Problem {
	var out []problem.Problem
	add := func(p attrpath.Path, format string, args ...any) {
		out = append(out, problem.At(p, format, args...))
	}
	if errs := validation.IsDNS1123Subdomain(a.DeviceClass); len(errs) > 0 || strings.ContainsFunc(a.DeviceClass, unicode.IsControl) {
		add(at.At("device_class"), "%q is not a DeviceClass name such as \"gpu.intel.com\" (kubectl get deviceclasses lists the cluster's): %s", a.DeviceClass, strings.Join(errs, "; "))
	}
	if a.Count < 0 || a.Count > MaxClaimDevices {
		add(at.At("count"), "must be between 1 and %d (the most devices one claim allocates), got %d; omit it for one device per tensor-parallel rank", MaxClaimDevices, a.Count)
	}
	if len(a.Selectors) > resourcev1.DeviceSelectorsMaxSize {
		add(at.At("selectors"), "lists %d expressions, at most %d are allowed; join them with &&", len(a.Selectors), resourcev1.DeviceSelectorsMaxSize)
	}
	for i, sel := range a.Selectors {
		f := at.At("selectors").Index(i)
		switch {
		case strings.TrimSpace(sel) == "":
			add(f, "must be a CEL expression over device, such as `device.driver == \"gpu.intel.com\"`, not empty")
		case len(sel) > resourcev1.CELSelectorExpressionMaxLength:
			add(f, "is %d bytes long, at most %d are allowed", len(sel), resourcev1.CELSelectorExpressionMaxLength)
		case strings.ContainsFunc(sel, deployControl):
			add(f, "contains control characters; only tab and newline are allowed")
		}
	}
	return out
}

// ClaimTemplateApply is the ResourceClaimTemplate the pods reference, or nil without a
// claim. The claims made from it carry the deployment's labels (the template's metadata),
// so destroy can wait until they are gone.
func (d Deployment) ClaimTemplateApply(tensorParallel int) *resourcev1ac.ResourceClaimTemplateApplyConfiguration {
	a := d.AcceleratorClaim
	if a == nil {
		return nil
	}
	req := resourcev1ac.ExactDeviceRequest().WithDeviceClassName(a.DeviceClass).
		WithAllocationMode(resourcev1.DeviceAllocationModeExactCount).WithCount(a.DeviceCount(tensorParallel))
	for _, sel := range a.Selectors {
		req.WithSelectors(resourcev1ac.DeviceSelector().WithCEL(resourcev1ac.CELDeviceSelector().WithExpression(sel)))
	}
	return resourcev1ac.ResourceClaimTemplate(ClaimTemplateName(d.Name), d.Namespace).
		WithLabels(d.objectLabels()).WithAnnotations(d.Annotations).
		WithSpec(resourcev1ac.ResourceClaimTemplateSpec().
			WithLabels(d.objectLabels()).
			WithSpec(resourcev1ac.ResourceClaimSpec().WithDevices(resourcev1ac.DeviceClaim().
				WithRequests(resourcev1ac.DeviceRequest().WithName(claimName).WithExactly(req)))))
}

// draGroupVersion is the Dynamic Resource Allocation API a claim is made in.
const draGroupVersion = "resource.k8s.io/v1"

// NoClaimAPIError is a cluster that does not serve resource.k8s.io/v1.
type NoClaimAPIError struct{ Err error }

func (e *NoClaimAPIError) Error() string {
	return "accelerator_claim needs Dynamic Resource Allocation's API " + draGroupVersion + " (GA and served by default since Kubernetes 1.34; " +
		"1.32 and 1.33 serve only v1beta1 and v1beta2, which this provider does not speak), and this cluster does not serve it: " + e.Err.Error() +
		". Upgrade the cluster, or request the devices through the device plugin's extended resource with accelerator_resource"
}
func (e *NoClaimAPIError) Unwrap() error { return e.Err }

// NoDeviceClassError is a claim whose DeviceClass the cluster does not have.
type NoDeviceClassError struct{ Class string }

func (e *NoDeviceClassError) Error() string {
	return fmt.Sprintf("accelerator_claim.device_class: the cluster has no DeviceClass %q (kubectl get deviceclasses lists them; a resource driver installs its own, Intel's gpu.intel.com); "+
		"no replica could be scheduled. Install the driver or name one of the cluster's classes", e.Class)
}

// checkClaim makes sure the claim can be made before anything is applied: the cluster
// serves resource.k8s.io/v1 and has the DeviceClass.
func (c *Cluster) checkClaim(ctx context.Context, a AcceleratorClaim) error {
	callCtx, cancel := c.bound(ctx)
	defer cancel()
	if _, err := c.cs.Discovery().ServerResourcesForGroupVersion(draGroupVersion); err != nil {
		if apierrors.IsNotFound(err) {
			return &NoClaimAPIError{Err: err}
		}
		return fmt.Errorf("asking the cluster for %s: %w", draGroupVersion, c.explain(ctx, err))
	}
	_, err := c.cs.ResourceV1().DeviceClasses().Get(callCtx, a.DeviceClass, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return &NoDeviceClassError{Class: a.DeviceClass}
	case err != nil:
		return fmt.Errorf("reading DeviceClass %s: %w", a.DeviceClass, c.explain(ctx, err))
	}
	return nil
}

// applyClaimTemplate applies the deployment's ResourceClaimTemplate, or removes one it made
// earlier when the deployment claims nothing.
func (c *Cluster) applyClaimTemplate(ctx context.Context, d Deployment, s engine.Spec, opts metav1.ApplyOptions) error {
	ta := d.ClaimTemplateApply(s.TensorParallel)
	if ta == nil {
		return c.deleteOwned(ctx, "ResourceClaimTemplate", d, c.claimTemplateLabels, c.deleteClaimTemplate)
	}
	if err := c.checkClaim(ctx, *d.AcceleratorClaim); err != nil {
		return err
	}
	err := c.apply(ctx, func(ctx context.Context) error {
		_, err := c.cs.ResourceV1().ResourceClaimTemplates(d.Namespace).Apply(ctx, ta, opts)
		return err
	})
	if err != nil {
		return fmt.Errorf("applying ResourceClaimTemplate %s/%s: %w", d.Namespace, ClaimTemplateName(d.Name), err)
	}
	return nil
}

// claimTemplateLabels reads the labels of the deployment's template; a cluster without the
// API has none, which reads as not found.
func (c *Cluster) claimTemplateLabels(ctx context.Context, ns, name string) (map[string]string, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	o, err := c.cs.ResourceV1().ResourceClaimTemplates(ns).Get(ctx, ClaimTemplateName(name), metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return o.Labels, nil
}

func (c *Cluster) deleteClaimTemplate(ctx context.Context, ns, name string) error {
	return c.cs.ResourceV1().ResourceClaimTemplates(ns).Delete(ctx, ClaimTemplateName(name), metav1.DeleteOptions{})
}

// claimsLeft counts the claims made from the deployment's template that still exist (the
// resourceclaim controller deletes a pod's claim once the pod is gone); 0 on a cluster
// without the API.
func (c *Cluster) claimsLeft(ctx context.Context, d Deployment) (int, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	list, err := c.cs.ResourceV1().ResourceClaims(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(d.selector()).String()})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return len(list.Items), nil
}

// unallocatedClaim explains a pod the scheduler could not place while the deployment claims
// devices: what each replica asked for, and the scheduler's own words. "" when the pod is
// not unschedulable or the deployment claims nothing.
func unallocatedClaim(d Deployment, s engine.Spec, p corev1.Pod) string {
	if d.AcceleratorClaim == nil {
		return ""
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
			return fmt.Sprintf("no node could allocate accelerator_claim for pod %s: %s per replica (the scheduler: %s). "+
				"Check what the class's driver publishes (kubectl get resourceslices), lower accelerator_claim.count or loosen its selectors",
				p.Name, d.AcceleratorClaim.describe(s.TensorParallel), strings.TrimSpace(cond.Message))
		}
	}
	return ""
}
