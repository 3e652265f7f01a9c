//go:build tools

// Package tools pins the Kubernetes commands that scripts/k8s/build.sh builds
// for the local test cluster (make k8s-up). Kubernetes and its staging modules
// live only in this module, never in the product's go.mod.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
