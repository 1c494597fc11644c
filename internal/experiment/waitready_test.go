package experiment

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// exporterDaemonSet is a DaemonSet of two nodes as its controller reports it when all is rolled out,
// ready says how many of its pods are Ready, and its two pods (one Ready only if ready is 2).
func exporterDaemonSet(ready int32) (*appsv1.DaemonSet, []*corev1.Pod) {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "exporter", Namespace: "monitoring", UID: "ds-uid", Generation: 1},
		Spec:       appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "exporter"}}},
		Status: appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 2, CurrentNumberScheduled: 2,
			UpdatedNumberScheduled: 2, NumberReady: ready, NumberAvailable: ready},
	}
	yes := true
	var pods []*corev1.Pod
	for i, node := range []string{"node-1", "node-2"} {
		cond := corev1.ConditionTrue
		var statuses []corev1.ContainerStatus
		if int32(i) >= ready {
			cond = corev1.ConditionFalse
			statuses = []corev1.ContainerStatus{{Name: "exporter", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason: "CreateContainerError", Message: "path / is mounted on / but it is not a shared or slave mount"}}}}
		}
		pods = append(pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "exporter-" + node, Namespace: "monitoring", UID: k8stypes.UID("pod-" + node),
				Labels:          map[string]string{"app": "exporter"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "exporter", UID: "ds-uid", Controller: &yes}}},
			Spec:   corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: cond}}, ContainerStatuses: statuses},
		})
	}
	return ds, pods
}

func daemonSetObject() []*unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("DaemonSet")
	u.SetName("exporter")
	u.SetNamespace("monitoring")
	return []*unstructured.Unstructured{u}
}

// TestWaitReadyFake: waitReady, on client-go's fake clientset, returns a DaemonSet's pods with their
// nodes once its controller reports them all Ready (here at the third get), not before; a DaemonSet whose
// second pod never starts ends the wait with its pods' waiting reason, as kubectl describe shows it.
func TestWaitReadyFake(t *testing.T) {
	ds, pods := exporterDaemonSet(1)
	cs := fake.NewClientset(ds, pods[0], pods[1])
	var gets atomic.Int32
	cs.PrependReactor("get", "daemonsets", func(k8stesting.Action) (bool, runtime.Object, error) {
		if gets.Add(1) < 3 {
			return false, nil, nil // the tracker's: one of two Ready
		}
		ready, readyPods := exporterDaemonSet(2)
		for _, p := range readyPods {
			_ = cs.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), p, p.Namespace)
		}
		return true, ready, nil
	})
	in := &installer{cs: cs}
	got, err := in.waitReady(context.Background(), daemonSetObject())
	if err != nil {
		t.Fatal(err)
	}
	if gets.Load() < 3 || len(got) != 2 || got[0].Node != "node-1" || got[1].Node != "node-2" {
		t.Errorf("waitReady after %d gets: %+v, want both pods once the third get said Ready", gets.Load(), got)
	}

	ds, pods = exporterDaemonSet(1)
	in = &installer{cs: fake.NewClientset(ds, pods[0], pods[1])}
	ctx, cancel := context.WithTimeout(context.Background(), 2*pollEvery+500*time.Millisecond)
	defer cancel()
	_, err = in.waitReady(ctx, daemonSetObject())
	if err == nil || !strings.Contains(err.Error(), "1 of 2 pods Ready") || !strings.Contains(err.Error(), "exporter-node-2: CreateContainerError: path / is mounted") {
		t.Errorf("waitReady of a DaemonSet never Ready: %v, want the count and the waiting reason", err)
	}
}
