// Package lab gets and runs real upstream Kubernetes components on this machine: etcd from Debian's
// packages, kube-apiserver (and, later, the other components) built from the upstream k8s.io/kubernetes Go
// module at a pinned version, cached outside the repository. Today it starts a control plane of etcd and
// kube-apiserver, which tare's tests use to check pod naming against the real API; `tare lab` will grow
// from it.
package lab
