// Package kube is tare's access to the Kubernetes API. NewClient is the one way tare builds a client: it
// loads a kubeconfig as kubectl does (--kubeconfig, else $KUBECONFIG's files merged, else ~/.kube/config;
// its current context, or Options.Context as kubectl's --context) and hands out the REST configuration, a typed clientset or an authenticated HTTP client. On top of it,
// PodNamer names the pods and containers the sampler recognises by UID and container ID from cgroup paths
// (measure hands one to the sampler), and Cluster reads explain's facts, the API server's metrics and its
// pprof targets. The lab and experiments build their clients with NewClient too. PathOptions are kubectl's
// rules for writing to the files NewClient reads (tare lab up adds its context with them).
//
// It imports client-go and, of tare's, internal/component, internal/bounded (bodies read within a bound), and the packages whose plain types it fills:
// internal/explain (ClusterFacts) and internal/pprof (Target, the input of pprof.Fetch). Those types live
// with the package that consumes them, not here. A new way to reach the API belongs here, built on
// NewClient.
package kube
