package lab

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/component"
)

// kwok's fake nodes: their names, and the annotation that hands a node to kwok (also its taint's key).
const (
	kwokNodePrefix = "kwok-node-"
	kwokAnnotation = "kwok.x-k8s.io/node"
)

// kwokArgs are kwok's flags: the lab's admin kubeconfig, its stage configurations (nodes become Ready and
// keep a lease, pods go Ready), only the nodes annotated for it, no server of its own (port 0 picks a free
// one), and node leases of 40 s.
func kwokArgs(kubeconfig, stages string) []string {
	return []string{"--kubeconfig", kubeconfig, "--config", stages,
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector", kwokAnnotation + "=fake",
		"--server-address", "127.0.0.1:0", "--node-lease-duration-seconds", "40"}
}

// kwok starts kwok and registers the fake nodes it serves.
func (l *lab) kwok(ctx context.Context, tunings []Tuning) error {
	c, err := l.client()
	if err != nil {
		return err
	}
	// A warm start finds the previous run's nodes in etcd with a Ready condition whose heartbeat kwok
	// will not refresh (it renews the node's lease, not the condition), and their leases still held by
	// the previous kwok, which a new one waits out (40 s) before taking a node. Remove both before kwok
	// starts, so it only ever meets fresh nodes, as on a cold start.
	for i := range l.opts.KwokNodes {
		if err := removeKwokNode(ctx, c, fmt.Sprintf("%s%d", kwokNodePrefix, i)); err != nil {
			return err
		}
	}
	if _, err := l.launch(component.Kwok, kwokArgs(l.st.Kubeconfig, l.bin.kwokStages), tunings); err != nil {
		return err
	}
	for i := range l.opts.KwokNodes {
		if err := createKwokNode(ctx, c, fmt.Sprintf("%s%d", kwokNodePrefix, i)); err != nil {
			return err
		}
	}
	for i := range l.opts.KwokNodes {
		name := fmt.Sprintf("%s%d", kwokNodePrefix, i)
		if err := l.waitFor(ctx, "kwok node "+name, 60*time.Second, func(ctx context.Context) error { return nodeReady(ctx, c, name, l.start) }); err != nil {
			return err
		}
	}
	l.step(fmt.Sprintf("%d kwok nodes Ready", l.opts.KwokNodes))
	return nil
}

func createKwokNode(ctx context.Context, c kubernetes.Interface, name string) error {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods: resource.MustParse("110"),
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels:      map[string]string{"type": "kwok", "kubernetes.io/hostname": name, labManagedLabel: "kwok"},
			Annotations: map[string]string{kwokAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"}},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: kwokAnnotation, Value: "fake", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	_, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating kwok node %s: %w", name, err)
	}
	return nil
}

// removeKwokNode deletes a previous run's kwok node and its lease and waits until the node is gone.
func removeKwokNode(ctx context.Context, c kubernetes.Interface, name string) error {
	zero := int64(0)
	if err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing the previous run's lease of kwok node %s: %w", name, err)
	}
	err := c.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("removing the previous run's kwok node %s: %w", name, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the previous run's kwok node %s is still there 30 s after deleting it", name)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
