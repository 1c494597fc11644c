package fit

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/kube"
)

// ReadNode reads a node's allocatable and what the pods on it already request. name "" picks the only Ready
// node that takes pods (kwok's fake nodes aside).
func ReadNode(ctx context.Context, cs kubernetes.Interface, name string) (Node, error) {
	node, err := pick(ctx, cs, name)
	if err != nil {
		return Node{}, err
	}
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node.Name).String()})
	if err != nil {
		return Node{}, fmt.Errorf("listing the pods of node %s: %w", node.Name, err)
	}
	n := Node{Name: node.Name, Capacity: node.Status.Capacity.DeepCopy(), Allocatable: node.Status.Allocatable.DeepCopy(), Used: corev1.ResourceList{}, DaemonSet: corev1.ResourceList{}}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		n.Pods++
		req := PodRequests(p)
		addAll(n.Used, req)
		for _, o := range p.OwnerReferences {
			if o.Kind == "DaemonSet" {
				addAll(n.DaemonSet, req)
			}
		}
	}
	return n, nil
}

func pick(ctx context.Context, cs kubernetes.Interface, name string) (*corev1.Node, error) {
	if name != "" {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("node %q does not exist (kubectl get nodes lists them)", name)
		}
		if err != nil {
			return nil, fmt.Errorf("reading node %s: %w", name, err)
		}
		return n, nil
	}
	found, err := kube.PodNodes(ctx, cs)
	if err != nil {
		return nil, err
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("%d Ready nodes take pods: give --node", len(found))
	}
	return &found[0], nil
}

// RuntimeClassOverhead returns the overhead.podFixed of a RuntimeClass (nil when it has none).
func RuntimeClassOverhead(ctx context.Context, cs kubernetes.Interface, name string) (corev1.ResourceList, error) {
	rc, err := cs.NodeV1().RuntimeClasses().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("RuntimeClass %q does not exist (tare density prints one to apply)", name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading RuntimeClass %s: %w", name, err)
	}
	if rc.Overhead == nil {
		return nil, nil
	}
	return rc.Overhead.PodFixed, nil
}
