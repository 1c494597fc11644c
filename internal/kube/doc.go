// Package kube is tare's access to the Kubernetes API: it finds a kubeconfig the way kubectl does and names
// the pods and containers that the sampler recognises by UID and container ID from cgroup paths. The
// measure verb creates a PodNamer and hands it to the sampler.
package kube
