// Package fit answers how many pods of a given request fit a node, the way the scheduler counts: the
// node's allocatable (capacity minus kube-reserved, system-reserved and the eviction threshold, as the
// kubelet reports it), minus the requests (and overhead) of the pods already on it, divided by the new
// pod's request plus its per-pod overhead (a RuntimeClass's, or one tare density measured); and the
// inverse, the largest request that still fits N pods. `tare fit` calls it. count.go is pure; read.go
// reads the node, its pods and a RuntimeClass from the API server; allocatable.go is the measured
// allocatable document (tare density --allocatable-out writes it, tare fit --allocatable counts against it)
// and eviction.go reads the kubelet's evictionHard memory threshold from its configz.
//
// It imports kube (the client), output and userfile (the document read within a bound), and client-go's types; nothing of the lab or the sampler. A new
// resource to count goes in count.go (pure, table-tested); a new source of per-pod overhead in read.go.
//
// Imports: kube, output, userfile
package fit
