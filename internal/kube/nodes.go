package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// PodNodes lists the nodes that take pods, in the API's order (by name): Ready, schedulable, and not one
// of kwok's fake nodes (label type=kwok), which run no process to measure.
func PodNodes(ctx context.Context, cs kubernetes.Interface) ([]corev1.Node, error) {
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	var out []corev1.Node
	for _, n := range list.Items {
		if !n.Spec.Unschedulable && NodeReady(&n) && n.Labels["type"] != "kwok" {
			out = append(out, n)
		}
	}
	return out, nil
}

// NodeReady says whether the node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// PodReady says whether a pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// PodStartFailure says why a pod's image cannot be started (pull errors, an image a PullNever pod does not
// find on its node), nil while it still can.
func PodStartFailure(p *corev1.Pod) error {
	for _, c := range p.Status.ContainerStatuses {
		if w := c.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName", "CreateContainerError", "CreateContainerConfigError", "RunContainerError":
				return fmt.Errorf("pod %s: image %s cannot be started on node %s: %s: %s", p.Name, c.Image, p.Spec.NodeName, w.Reason, w.Message)
			}
		}
	}
	return nil
}
