package experiment

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tare-dev/tare/internal/audit"
	"github.com/tare-dev/tare/internal/compare"
)

func testPod(name, node string, owner types.UID, ready bool) corev1.Pod {
	yes := true
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
			OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", UID: owner, Controller: &yes}}},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}},
	}
}

func TestDaemonSetReady(t *testing.T) {
	t.Parallel()
	rolled := appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 2, CurrentNumberScheduled: 2,
		UpdatedNumberScheduled: 2, NumberReady: 2, NumberAvailable: 2}
	ds := func(st appsv1.DaemonSetStatus) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "ds", Generation: 2, UID: "ds-uid"}, Status: st}
	}
	two := []corev1.Pod{testPod("a", "node-1", "ds-uid", true), testPod("b", "node-2", "ds-uid", true)}
	deleting := testPod("b", "node-2", "ds-uid", true)
	deleting.DeletionTimestamp = &metav1.Time{}
	stuck := testPod("b", "node-2", "ds-uid", false)
	stuck.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason: "CreateContainerError", Message: `path "/" is mounted on "/" but it is not a shared or slave mount`}}}}
	for _, tc := range []struct {
		name string
		st   appsv1.DaemonSetStatus
		pods []corev1.Pod
		want string // "" for ready
	}{
		{"ready", rolled, two, ""},
		{"old generation", func() appsv1.DaemonSetStatus { s := rolled; s.ObservedGeneration = 1; return s }(), two, "not seen its latest spec"},
		{"no node", appsv1.DaemonSetStatus{ObservedGeneration: 2}, nil, "wants no pod"},
		{"unscheduled", func() appsv1.DaemonSetStatus { s := rolled; s.CurrentNumberScheduled = 1; return s }(), two, "1 of 2 pods scheduled"},
		{"rolling", func() appsv1.DaemonSetStatus { s := rolled; s.UpdatedNumberScheduled = 1; return s }(), two, "1 up to date"},
		{"not ready", func() appsv1.DaemonSetStatus { s := rolled; s.NumberReady = 1; return s }(), two, "1 of 2 pods Ready"},
		{"status ahead of pods", rolled, []corev1.Pod{two[0], testPod("b", "node-2", "ds-uid", false)}, "not: b"},
		{"pod going", rolled, []corev1.Pod{two[0], deleting}, "not: b"},
		{"pod missing", rolled, two[:1], "1 of 2 pods Ready"},
		{"container not created", func() appsv1.DaemonSetStatus { s := rolled; s.NumberReady = 1; return s }(), []corev1.Pod{two[0], stuck},
			`b: CreateContainerError: path "/" is mounted on "/" but it is not a shared or slave mount`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pods, ok, why := daemonSetReady(ds(tc.st), tc.pods)
			if tc.want == "" {
				want := []compare.DaemonSetPod{{UID: "uid-a", Namespace: "ns", Name: "a", Node: "node-1"}, {UID: "uid-b", Namespace: "ns", Name: "b", Node: "node-2"}}
				if !ok || why != "" {
					t.Fatalf("not ready: %s", why)
				}
				if diff := cmp.Diff(want, pods); diff != "" {
					t.Fatalf("pods (-want +got):\n%s", diff)
				}
				return
			}
			if ok || pods != nil || !strings.Contains(why, tc.want) {
				t.Fatalf("ready %v, pods %v, why %q: want not ready because %q", ok, pods, why, tc.want)
			}
		})
	}
}

func TestOwnedPods(t *testing.T) {
	t.Parallel()
	orphan := testPod("c", "node-1", "", true)
	orphan.OwnerReferences = nil
	pods := []corev1.Pod{testPod("a", "node-1", "ds-uid", true), testPod("b", "node-1", "other", true), orphan}
	got := ownedPods(pods, "ds-uid")
	if len(got) != 1 || got[0].Name != "a" {
		t.Fatalf("owned pods %v: want a alone", got)
	}
}

func TestSamePods(t *testing.T) {
	t.Parallel()
	a := []compare.DaemonSetPod{{UID: "1"}, {UID: "2"}}
	for _, tc := range []struct {
		b    []compare.DaemonSetPod
		want bool
	}{
		{[]compare.DaemonSetPod{{UID: "2"}, {UID: "1"}}, true},
		{[]compare.DaemonSetPod{{UID: "1"}}, false},
		{[]compare.DaemonSetPod{{UID: "1"}, {UID: "3"}}, false},
	} {
		if got := samePods(a, tc.b); got != tc.want {
			t.Errorf("samePods(%v, %v) = %v, want %v", a, tc.b, got, tc.want)
		}
	}
}

func TestRequestRatesWatches(t *testing.T) {
	t.Parallel()
	q := requestRates{ok: true, after: []audit.APIServerMetrics{{Watches: 7}, {Watches: 5}, {Watches: -1}}}
	if got := q.watches([]int{0, 1}); got != 12 {
		t.Errorf("watches of labs 0 and 1: %v, want 12", got)
	}
	if got := q.watches([]int{0, 2}); got != -1 {
		t.Errorf("with a lab without the gauge: %v, want -1", got)
	}
	q.ok = false
	if got := q.watches([]int{0}); got != -1 {
		t.Errorf("after a failed scrape: %v, want -1", got)
	}
}
