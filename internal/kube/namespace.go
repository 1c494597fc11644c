package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ErrNamespaceExists says a run's namespace is already there: runs that delete their namespace at the end
// (tare density, tare datapath) never take one they did not create.
var ErrNamespaceExists = errors.New("namespace exists")

// CreateRunNamespace creates the namespace a run (verb: "tare density") keeps everything in, labelled as
// tare's. It fails with ErrNamespaceExists, saying what to do, when the namespace is there already.
func CreateRunNamespace(ctx context.Context, cs kubernetes.Interface, name, verb string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/managed-by": "tare"}}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("namespace %s: %w: %s deletes its namespace when done, so it uses a new one (delete it, or give another --namespace)", name, ErrNamespaceExists, verb)
		}
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// DeleteNamespace deletes a namespace with no grace period and waits until it is gone, at most wait.
func DeleteNamespace(ctx context.Context, cs kubernetes.Interface, name string, wait time.Duration) error {
	zero := int64(0)
	err := cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting namespace %s: %w (kubectl delete namespace %s)", name, err, name)
	}
	deadline := time.Now().Add(wait)
	for {
		if _, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("namespace %s still terminating after %s (kubectl get namespace %s)", name, wait, name)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for namespace %s to go: %w", name, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}
