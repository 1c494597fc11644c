package fit

import (
	"fmt"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Node is what the scheduler weighs on one node.
type Node struct {
	Name        string              `json:"name"`
	Capacity    corev1.ResourceList `json:"capacity"`
	Allocatable corev1.ResourceList `json:"allocatable"`
	// Used sums the requests and overhead of the pods already on the node (not succeeded or failed), the
	// DaemonSets' among them; Pods counts them.
	Used      corev1.ResourceList `json:"requested_by_existing_pods"`
	DaemonSet corev1.ResourceList `json:"requested_by_daemonset_pods"`
	Pods      int                 `json:"existing_pods"`
}

// Result is how many pods of Request (plus Overhead each) fit the node, and which resource binds first.
type Result struct {
	Node     Node                `json:"node"`
	Request  corev1.ResourceList `json:"request"`
	Overhead corev1.ResourceList `json:"overhead"`
	// Fits is how many such pods the scheduler will place; Binding the resource that stops it ("pods" when
	// the node's pod limit does).
	Fits    int                         `json:"fits"`
	Binding corev1.ResourceName         `json:"binding"`
	PerRes  map[corev1.ResourceName]int `json:"fits_by_resource"`
	Free    corev1.ResourceList         `json:"free"`
}

// Count computes how many pods of request, each with overhead, fit n. Resources neither names do not limit
// it, except the node's pod count.
func Count(n Node, request, overhead corev1.ResourceList) (Result, error) {
	r := Result{Node: n, Request: request, Overhead: overhead, PerRes: map[corev1.ResourceName]int{}, Free: corev1.ResourceList{}}
	for name, alloc := range n.Allocatable {
		free := alloc.DeepCopy()
		if used, ok := n.Used[name]; ok {
			free.Sub(used)
		}
		r.Free[name] = free
	}
	pods := math.MaxInt
	if alloc, ok := n.Allocatable[corev1.ResourcePods]; ok {
		pods = max(0, int(alloc.Value())-n.Pods)
		r.PerRes[corev1.ResourcePods] = pods
	}
	r.Fits, r.Binding = pods, corev1.ResourcePods
	// A resource only the overhead names limits the count too (a RuntimeClass's memory on a cpu request).
	var names []corev1.ResourceName
	for _, l := range []corev1.ResourceList{request, overhead} {
		for name := range l {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	for _, name := range names {
		if name == corev1.ResourcePods {
			return r, fmt.Errorf("the request or overhead names pods: give cpu, memory or another resource")
		}
		per := request[name].DeepCopy()
		if o, ok := overhead[name]; ok {
			per.Add(o)
		}
		if per.Sign() <= 0 {
			continue
		}
		free, ok := r.Free[name]
		if !ok {
			return r, fmt.Errorf("node %s has no allocatable %s", n.Name, name)
		}
		k := 0
		if free.Sign() > 0 {
			k = int(free.MilliValue() / per.MilliValue())
		}
		r.PerRes[name] = k
		if k < r.Fits {
			r.Fits, r.Binding = k, name
		}
	}
	return r, nil
}

// Largest returns the largest request of each resource of the node (cpu, memory) such that pods pods,
// each with overhead, still fit: (free − pods × overhead) ÷ pods, rounded down (cpu to the millicore,
// memory to the MiB). It fails when the node cannot take that many pods at all.
func Largest(n Node, pods int, overhead corev1.ResourceList) (corev1.ResourceList, error) {
	if pods < 1 {
		return nil, fmt.Errorf("--pods %d: want 1 or more", pods)
	}
	if alloc, ok := n.Allocatable[corev1.ResourcePods]; ok && int(alloc.Value())-n.Pods < pods {
		return nil, fmt.Errorf("node %s takes %d more pods (maxPods %d, %d there), not %d", n.Name, max(0, int(alloc.Value())-n.Pods), alloc.Value(), n.Pods, pods)
	}
	out := corev1.ResourceList{}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		alloc, ok := n.Allocatable[name]
		if !ok {
			continue
		}
		free := alloc.MilliValue()
		if used, ok := n.Used[name]; ok {
			free -= used.MilliValue()
		}
		if o, ok := overhead[name]; ok {
			free -= int64(pods) * o.MilliValue()
		}
		per := free / int64(pods)
		if per <= 0 || (name == corev1.ResourceMemory && per/1000 < 1<<20) {
			return nil, fmt.Errorf("node %s has no %s left for %d pods with their overhead", n.Name, name, pods)
		}
		if name == corev1.ResourceCPU {
			out[name] = *resource.NewMilliQuantity(per, resource.DecimalSI)
		} else {
			mib := per / 1000 / (1 << 20)
			out[name] = *resource.NewQuantity(mib<<20, resource.BinarySI)
		}
	}
	return out, nil
}

// PodRequests is what the scheduler charges a pod: its containers' requests (the larger init container,
// sidecars, pod-level requests) and its overhead, as the scheduler's own helper counts them.
func PodRequests(p *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
}

func addAll(into, from corev1.ResourceList) {
	for name, q := range from {
		cur := into[name]
		cur.Add(q)
		into[name] = cur
	}
}
