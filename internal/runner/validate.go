package runner

// What a runner's settings must be for its engine to accept them, checked before anything is
// created (the provider applies these at plan): the Docker Engine refuses an empty or
// malformed container reference or image with a message of its own only once the run
// begins, and a cluster refuses a namespace that is no DNS label, or a kubelet an image it
// cannot parse, only once the Job is created.

import (
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
)

// containerRefRE is Docker's rule for a container name (the leading / is how docker inspect
// writes one); a container id, or a unique prefix of one, is lowercase hex and matches it too.
var containerRefRE = regexp.MustCompile(`^/?[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// runnerImageExample is the image the release publishes, as the messages suggest it.
const runnerImageExample = "ghcr.io/llmserve/llmserve-runner:1.0.0"

// CheckDocker reports the Docker runner's settings the engine would refuse: container, the
// server container by id or name (at.container), and image (at.image) when it is set
// (imageSet: an unset image is built on the engine).
func CheckDocker(at attrpath.Path, container, image string, imageSet bool) []problem.Problem {
	var out []problem.Problem
	switch c := at.At("container"); {
	case strings.TrimSpace(container) == "":
		out = append(out, problem.At(c, "is empty; give the server container's id or name, e.g. llmserve_inference_server.<name>.id"))
	case !containerRefRE.MatchString(container):
		out = append(out, problem.At(c, "%q is not a container id or name (letters, digits and _ . - after the first character, as Docker names containers); "+
			"give the server container's id or name, e.g. llmserve_inference_server.<name>.id", container))
	}
	if imageSet {
		out = append(out, deploy.CheckImage(at.At("image"), image, "the runner image (or remove image to build one on the engine)", runnerImageExample)...)
	}
	return out
}

// CheckKubernetes reports the Kubernetes runner's settings the cluster would refuse: the
// namespace (at.namespace), a DNS-1123 label as every namespace name is, and the image
// (at.image), as the kubelet parses it.
func CheckKubernetes(at attrpath.Path, namespace, image string) []problem.Problem {
	var out []problem.Problem
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		out = append(out, problem.At(at.At("namespace"), "%q is not a namespace name: %s; give the server's namespace, e.g. llmserve_inference_deployment.<name>.namespace",
			namespace, strings.Join(errs, "; ")))
	}
	return append(out, deploy.CheckKubernetesImage(at.At("image"), image, "the runner image", runnerImageExample)...)
}
