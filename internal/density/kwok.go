package density

import (
	"context"
	"fmt"
	"math/rand/v2"
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

// DefaultKwokCounts are the pod counts of --kwok when --pods is not given.
var DefaultKwokCounts = []int{0, 500, 1000, 2000}

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
		return Report{}, fmt.Errorf("--kwok puts the pods on kwok nodes (label %s) and none is Ready: start the lab with tare lab up --kwok-nodes 2", KwokLabel)
	}
	slices.Sort(nodes)
	if err := CheckCounts(o.Counts, maxPods, 0); err != nil {
		return Report{}, fmt.Errorf("--pods on the kwok nodes: %w", err)
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
	for i, st := range Order(o.Counts, o.Trials, rand.New(rand.NewPCG(o.Seed, o.Seed+1))) {
		say("step %d/%d (trial %d): %d pods on %s", i+1, len(o.Counts)*o.Trials, st.Trial, st.Pods, where)
		if err := scale(ctx, cs, o, nodes, st.Pods); err != nil {
			return finish(err)
		}
		select {
		case <-ctx.Done():
			return finish(ctx.Err())
		case <-time.After(o.Settle):
		}
		w, err := measure(ctx, o, st, charged)
		if err != nil {
			return finish(err)
		}
		rep.Steps = append(rep.Steps, w)
		if ctx.Err() != nil {
			return finish(ctx.Err())
		}
	}
	return finish(nil)
}
