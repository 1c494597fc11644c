package experiment

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// guardObjects: the guard's Deployment, marked deleted as a foreground deletion leaves it, and one of
// its pods.
func guardObjects() []runtime.Object {
	now := metav1.Now()
	return []runtime.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: guardName, Namespace: "default", DeletionTimestamp: &now,
			Finalizers: []string{metav1.FinalizerDeleteDependents}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: guardName + "-x", Namespace: "default", Labels: map[string]string{"app": guardName}}},
	}
}

// TestRemoveGuardWaitsForTheDeployment: removeGuard returns only once the Deployment itself is gone, not
// as soon as its pods are (the collector of a restarted kube-controller-manager removes a foreground-
// deleted Deployment last, and a guard created before then has no pod: two CI trials waited 2 minutes).
// The fake clientset keeps the Deployment for its first gets, as the collector would.
func TestRemoveGuardWaitsForTheDeployment(t *testing.T) {
	cs := fake.NewClientset(guardObjects()...)
	// Delete removes the pod at once (the kubelet's part) but leaves the Deployment to the collector,
	// which removes it after the third get.
	cs.PrependReactor("delete", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		_ = cs.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "default", guardName+"-x")
		return true, nil, nil
	})
	var gets atomic.Int32
	cs.PrependReactor("get", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		if gets.Add(1) == 3 {
			_ = cs.Tracker().Delete(appsv1.SchemeGroupVersion.WithResource("deployments"), "default", guardName)
		}
		return false, nil, nil
	})
	if err := removeGuard(context.Background(), cs); err != nil {
		t.Fatal(err)
	}
	if n := gets.Load(); n < 3 {
		t.Errorf("removeGuard returned after %d get(s) of the Deployment, while it was still there", n)
	}
	if _, err := cs.AppsV1().Deployments("default").Get(context.Background(), guardName, metav1.GetOptions{}); err == nil {
		t.Error("the Deployment is still there")
	}
}

// TestRemoveGuardGivesUp: a Deployment that never goes (no collector runs) ends the wait with an error
// that says so, when the context ends.
func TestRemoveGuardGivesUp(t *testing.T) {
	cs := fake.NewClientset(guardObjects()...)
	cs.PrependReactor("delete", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err := removeGuard(ctx, cs)
	if err == nil || !strings.Contains(err.Error(), "guard") {
		t.Fatalf("removeGuard: %v, want an error naming the guard", err)
	}
}

// TestReachableRefusesAGuardBeingDeleted: a Deployment still there when the guard is created again is an
// error at once, not 2 minutes of waiting for a pod that will not come.
func TestReachableRefusesAGuardBeingDeleted(t *testing.T) {
	cs := fake.NewClientset()
	// removeGuard finds nothing; the create then meets a Deployment that appeared meanwhile.
	cs.PrependReactor("create", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewAlreadyExists(appsv1.Resource("deployments"), guardName)
	})
	start := time.Now()
	err := reachable(context.Background(), cs, "web")
	if err == nil || !strings.Contains(err.Error(), "creating the guard Deployment") {
		t.Fatalf("reachable: %v, want the create's error", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("reachable took %v to fail", d)
	}
}
