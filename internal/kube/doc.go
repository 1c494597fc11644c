// Package kube is tare's access to the Kubernetes API. NewClient is the one way tare builds a client: it
// loads a kubeconfig as kubectl does (--kubeconfig, else $KUBECONFIG's files merged, else ~/.kube/config;
// its current context, or Options.Context as kubectl's --context) and hands out the REST configuration, a typed clientset or an authenticated HTTP client. On top of it,
// PodNamer names the pods and containers the sampler recognises by UID and container ID from cgroup paths
// (measure hands one to the sampler), and Cluster reads the API server's metrics and gives its pprof
// targets and its clientset (explain's collector reads the cluster's facts through it). The lab and experiments build their clients with NewClient too. PathOptions are kubectl's
// rules for writing to the files NewClient reads (tare lab up adds its context with them).
//
// It imports client-go and, of tare's, internal/component, internal/bounded (bodies read within a bound),
// and internal/pprof, whose plain type it fills (Target, the input of pprof.Fetch); never explain or any
// other package above it. A new way to reach the API belongs here, built on
// NewClient.
//
// Imports: bounded, component, pprof
package kube
