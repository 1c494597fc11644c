package lab

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/kube"
)

// client is the clientset Up and Retune use. Its client-side rate limit is well above client-go's default
// (5 a second): their polls every waitPoll and the controller accounts created at once would otherwise
// queue behind it, and on a lab of one machine nothing else shares the API server.
func (l *lab) client() (kubernetes.Interface, error) {
	return labClient(l.st.Kubeconfig, kube.Options{UserAgent: "tare-lab", QPS: 100, Burst: 100})
}

// Client returns a clientset for a lab's kubeconfig (the admin one). It takes that file only, never the
// user's $KUBECONFIG or ~/.kube/config: the lab deletes nodes and leases.
func Client(kubeconfig string) (kubernetes.Interface, error) {
	return labClient(kubeconfig, kube.Options{UserAgent: "tare-lab"})
}

func labClient(kubeconfig string, o kube.Options) (kubernetes.Interface, error) {
	if kubeconfig == "" {
		return nil, errors.New("the lab's state names no kubeconfig: run tare lab down, then tare lab up")
	}
	c, err := kube.NewClient(kubeconfig, o)
	if err != nil {
		return nil, err
	}
	return c.Clientset()
}

// nodeReady says whether a node is Ready with a heartbeat at or after since (a warm start finds the
// previous run's Ready condition in etcd).
func nodeReady(ctx context.Context, c kubernetes.Interface, name string, since time.Time) error {
	n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			if cond.Status == corev1.ConditionTrue && !cond.LastHeartbeatTime.Time.Before(since.Truncate(time.Second)) {
				return nil
			}
			return fmt.Errorf("node %s not Ready: %s", name, cond.Message)
		}
	}
	return fmt.Errorf("node %s has no Ready condition yet", name)
}

// nodeSchedulable says whether a node has lost the taints that keep new pods off a node not yet known to
// be Ready (node.kubernetes.io/not-ready and unreachable, which the controller manager's node lifecycle
// controller lifts once it has seen the node Ready).
func nodeSchedulable(ctx context.Context, c kubernetes.Interface, name string) error {
	n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return fmt.Errorf("node %s still has the %s taint", name, t.Key)
		}
	}
	return nil
}
