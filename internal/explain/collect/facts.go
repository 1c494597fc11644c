package collect

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tare-dev/tare/internal/explain"
	"github.com/tare-dev/tare/internal/kube"
)

// clusterFacts reads nodes, kube-system leases, control-plane pods and the cluster DNS Deployment. It is
// here, not in kube, so that kube does not import the analysis whose input it is.
func clusterFacts(ctx context.Context, c *kube.Cluster) explain.ClusterFacts {
	cs := c.Clientset()
	f := explain.ClusterFacts{Source: c.Source, ControlPlanePods: map[string]int{}, Leases: []explain.LeaseFact{}}
	miss := func(what string, err error) { f.Unreadable = append(f.Unreadable, what+": "+err.Error()) }
	if nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"}); err == nil {
		f.Nodes = len(nodes.Items)
	} else {
		miss("nodes", err)
	}
	now := time.Now()
	if ls, err := cs.CoordinationV1().Leases("kube-system").List(ctx, metav1.ListOptions{}); err == nil {
		for _, l := range ls.Items {
			lf := explain.LeaseFact{Name: l.Name}
			if l.Spec.HolderIdentity != nil {
				lf.Holder = *l.Spec.HolderIdentity
			}
			if l.Spec.LeaseDurationSeconds != nil {
				lf.DurationSeconds = *l.Spec.LeaseDurationSeconds
			}
			if l.Spec.LeaseTransitions != nil {
				lf.Transitions = *l.Spec.LeaseTransitions
			}
			if l.Spec.RenewTime != nil {
				lf.RenewedAgo = now.Sub(l.Spec.RenewTime.Time).Round(100 * time.Millisecond).Seconds()
			} else {
				lf.RenewedAgo = -1
			}
			f.Leases = append(f.Leases, lf)
		}
	} else {
		miss("leases in kube-system", err)
	}
	if pods, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "component"}); err == nil {
		for _, p := range pods.Items {
			f.ControlPlanePods[p.Labels["component"]]++
		}
	} else {
		miss("pods in kube-system", err)
	}
	if ds, err := cs.AppsV1().Deployments("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"}); err == nil {
		for _, d := range ds.Items {
			r := int32(1)
			if d.Spec.Replicas != nil {
				r = *d.Spec.Replicas
			}
			f.CoreDNS = &explain.Deployment{Namespace: d.Namespace, Name: d.Name, Replicas: r}
		}
	} else {
		miss("deployments in kube-system", err)
	}
	return f
}
