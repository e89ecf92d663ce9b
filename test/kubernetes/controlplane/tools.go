//go:build tools

// Package controlplane only pins the Kubernetes commands that scripts/kube-controlplane.sh
// builds; nothing imports it.
package controlplane

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
