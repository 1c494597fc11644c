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

func (l *lab) client() (kubernetes.Interface, error) { return Client(l.st.Kubeconfig) }

// Client returns a clientset for a lab's kubeconfig (the admin one). It takes that file only, never the
// user's $KUBECONFIG or ~/.kube/config: the lab deletes nodes and leases.
func Client(kubeconfig string) (kubernetes.Interface, error) {
	if kubeconfig == "" {
		return nil, errors.New("the lab's state names no kubeconfig: run tare lab down, then tare lab up")
	}
	c, err := kube.NewClient(kubeconfig, kube.Options{UserAgent: "tare-lab"})
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
