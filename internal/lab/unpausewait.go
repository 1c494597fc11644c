package lab

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// What unpause waits for between its stages: the API server's /readyz, the nodes' leases (after a pause
// long enough for a lease to look stale) and the nodes' Ready condition (after a pause long enough for
// the kubelet's PLEG check to trip), before it thaws the controller manager and the scheduler.

// thawedLast are the components unpause thaws after the nodes' leases are renewed: those that act on
// a node whose lease looks stale (the controller manager's node lifecycle controller) or on the pods,
// which are the lease holders (controllerNames).
var thawedLast = controllerNames

// waitLeases waits until every lease in kube-node-lease was renewed at or after since, up to limit, and
// returns how long after since that was, or a note saying why it was not seen.
func waitLeases(ctx context.Context, kubeconfig string, since time.Time, limit time.Duration) (time.Duration, string) {
	c, err := Client(kubeconfig)
	if err != nil {
		return 0, err.Error()
	}
	err = pollAPI(ctx, 50*time.Millisecond, limit, func(ctx context.Context) error {
		leases, err := c.CoordinationV1().Leases("kube-node-lease").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, l := range leases.Items { // none (an API-server-only lab): nothing to wait for
			if l.Spec.RenewTime == nil || l.Spec.RenewTime.Time.Before(since.Truncate(time.Microsecond)) {
				return fmt.Errorf("lease %s not renewed yet", l.Name)
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Sprintf("not every node lease was renewed within %s of the thaw: the node lifecycle controller may mark a node NotReady for a moment", limit)
	}
	return time.Since(since), ""
}

// plegThreshold is the kubelet's limit on the age of its last pod lifecycle relist: a kubelet thawed
// after a longer pause reports its node NotReady ("PLEG is not healthy") until the next relist, about
// 10 s. Unpause then waits for the node to be Ready before it thaws the controller manager, so that
// no taint is added and nothing is evicted.
const plegThreshold = 3 * time.Minute

// waitNodesReady waits until every real (not kwok) node reports Ready with a heartbeat at or after
// since, up to limit, and returns how long after since that was, or a note saying why it was not seen.
func waitNodesReady(ctx context.Context, kubeconfig string, since time.Time, limit time.Duration) (time.Duration, string) {
	c, err := Client(kubeconfig)
	if err != nil {
		return 0, err.Error()
	}
	err = pollAPI(ctx, 100*time.Millisecond, limit, func(ctx context.Context) error {
		nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, n := range nodes.Items {
			if n.Annotations[kwokAnnotation] != "" {
				continue
			}
			ok := false
			for _, cond := range n.Status.Conditions {
				ok = ok || cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue &&
					!cond.LastHeartbeatTime.Time.Before(since.Truncate(time.Second))
			}
			if !ok {
				return fmt.Errorf("node %s not Ready with a fresh heartbeat yet", n.Name)
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Sprintf("a node did not report Ready within %s of the thaw (the kubelet was paused past its %s PLEG threshold): tare lab status shows it", limit, plegThreshold)
	}
	return time.Since(since), ""
}

// waitReadyz polls the API server's /readyz until it answers ok and returns when it did.
func waitReadyz(ctx context.Context, kubeconfig string, limit time.Duration) (time.Time, error) {
	c, err := Client(kubeconfig)
	if err != nil {
		return time.Time{}, err
	}
	err = pollAPI(ctx, 50*time.Millisecond, limit, func(ctx context.Context) error {
		body, err := c.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && strings.TrimSpace(string(body)) != "ok" {
			err = fmt.Errorf("answered %q", body)
		}
		return err
	})
	if err != nil {
		return time.Now(), fmt.Errorf("/readyz: %w", err)
	}
	return time.Now(), nil
}

// pollAPI asks try, each call with a 2 s deadline, every interval until it returns nil or limit has
// passed (or ctx ended); then it returns why, with try's last answer.
func pollAPI(ctx context.Context, every, limit time.Duration, try func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, every, limit, true, func(ctx context.Context) (bool, error) {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		last = try(rctx)
		return last == nil, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("%w (last answer: %w)", err, last)
	}
	return err
}
