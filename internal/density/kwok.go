package density

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/kube"
)

// The control-plane variant (--kwok): the pods go to kwok's fake nodes, where no container runs and kwok
// only reports them Running, so the cost that grows with them is the control plane's (API server, etcd,
// controller manager, scheduler) and kwok's own, on the machine tare measures. Counts there are in the
// thousands; tables give the cost per 1,000 pods. There is no RuntimeClass or kube-reserved: no node's
// agents ran the pods.

// KwokLabel selects the kwok nodes (the tare lab's label them type=kwok, as kwok's examples do).
const KwokLabel = "type=kwok"

// KwokCounts are the pod counts of --kwok when --pods is not given: none, a quarter, half and all of the
// kwok nodes' pods (each rounded down to a multiple of 10).
func KwokCounts(capacity int) []int {
	r := func(n int) int { return n / 10 * 10 }
	return []int{0, r(capacity / 4), r(capacity / 2), r(capacity)}
}

// runKwok is Run on the kwok nodes.
func runKwok(ctx context.Context, cs kubernetes.Interface, o Options, say func(string, ...any)) (Report, error) {
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: KwokLabel})
	if err != nil {
		return Report{}, fmt.Errorf("listing the kwok nodes: %w", err)
	}
	var nodes []string
	maxPods := 0
	for _, n := range list.Items {
		if kube.NodeReady(&n) {
			nodes = append(nodes, n.Name)
			if q, ok := n.Status.Allocatable[corev1.ResourcePods]; ok {
				maxPods += int(q.Value())
			}
		}
	}
	if len(nodes) == 0 {
		return Report{}, fmt.Errorf("--kwok puts the pods on kwok nodes (label %s) and none is Ready: start the lab with tare lab up --kwok-nodes 10 (110 pods each)", KwokLabel)
	}
	slices.Sort(nodes)
	if len(o.Counts) == 0 {
		o.Counts = KwokCounts(maxPods)
	}
	if err := CheckCounts(o.Counts, maxPods, 0); err != nil {
		return Report{}, fmt.Errorf("--pods on the kwok nodes (110 pods each on the tare lab: more with tare lab up --kwok-nodes N): %w", err)
	}
	if err := kube.CreateRunNamespace(ctx, cs, o.Namespace, "tare density"); err != nil {
		return Report{}, err
	}
	defer func() {
		if err := kube.DeleteNamespace(context.WithoutCancel(ctx), cs, o.Namespace, 5*time.Minute); err != nil {
			say("warning: %v", err)
		}
	}()
	where := fmt.Sprintf("%d kwok nodes (%s to %s)", len(nodes), nodes[0], nodes[len(nodes)-1])
	rep := Report{Node: where, Kwok: true, Image: o.Image, Containers: max(1, o.Containers), Counts: o.Counts, Trials: o.Trials,
		Window: o.Window.String(), Seed: o.Seed, Started: time.Now()}
	charged := map[string]map[bool]bool{}
	finish := func(err error) (Report, error) {
		rep.Took = time.Since(rep.Started).Round(time.Second).String()
		rep.Model = Fitted(rep.Steps, chargedTo(charged), o.Seed)
		return rep, err
	}
	return finish(runSteps(ctx, cs, o, nodes, where, &rep, charged, say))
}
