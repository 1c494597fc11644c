package density

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/kube"
)

// churner creates a pod every 1/rate seconds and deletes each as soon as it runs, noting when each was
// created and first seen Running. It follows the pods with a watch, not by listing them: its own requests
// are then one create and one delete per pod, as any controller's, and nothing polls the API server in
// the churning windows that the quiet ones would not.
type churner struct {
	cs      kubernetes.Interface
	o       Options
	node    string
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	created []time.Time
	running []time.Time
	err     error
}

// churnLabel is podLabel's value on the churned pods; idleLabel on the idle ones.
const (
	churnLabel = "churn"
	idleLabel  = "idle"
)

// churnGrace is the churned pods' deletion grace period: not 0, so that the API server keeps each pod
// until its kubelet has torn it down, and stop's wait covers the teardown (with 0 the object goes at once
// and the teardown spills into the next window).
const churnGrace = int64(1)

// startChurn starts the churn on node; stop ends it.
func startChurn(ctx context.Context, cs kubernetes.Interface, o Options, node string) *churner {
	cctx, cancel := context.WithCancel(ctx)
	c := &churner{cs: cs, o: o, node: node, cancel: cancel, done: make(chan struct{})}
	go c.run(cctx)
	return c
}

// run creates pods on a ticker and deletes each once its watch event says it runs, until ctx ends.
func (c *churner) run(ctx context.Context) {
	defer close(c.done)
	pods := c.cs.CoreV1().Pods(c.o.Namespace)
	sel := metav1.ListOptions{LabelSelector: podLabel + "=" + churnLabel}
	w, err := pods.Watch(ctx, sel)
	if err != nil {
		c.fail(ctx, fmt.Errorf("watching the churned pods: %w", err))
		return
	}
	defer func() { w.Stop() }()
	create := time.NewTicker(time.Duration(float64(time.Second) / c.o.Churn))
	defer create.Stop()
	seen := map[string]bool{}
	grace := churnGrace
	n := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-create.C:
			p := idlePod(c.o, c.node, fmt.Sprintf("churn-%d", n))
			p.Labels[podLabel] = churnLabel
			n++
			if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
				c.fail(ctx, fmt.Errorf("creating pod %s: %w", p.Name, err))
				return
			}
			c.mu.Lock()
			c.created = append(c.created, time.Now())
			c.mu.Unlock()
		case ev, ok := <-w.ResultChan():
			if !ok { // the server ended the watch: start another from now
				if w, err = pods.Watch(ctx, sel); err != nil {
					c.fail(ctx, fmt.Errorf("watching the churned pods: %w", err))
					return
				}
				continue
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod || ev.Type == watch.Deleted {
				continue
			}
			if err := kube.PodStartFailure(p); err != nil {
				c.fail(ctx, err)
				return
			}
			if p.Status.Phase != corev1.PodRunning || seen[p.Name] {
				continue
			}
			seen[p.Name] = true
			c.mu.Lock()
			c.running = append(c.running, time.Now())
			c.mu.Unlock()
			if err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil && !apierrors.IsNotFound(err) {
				c.fail(ctx, fmt.Errorf("deleting pod %s: %w", p.Name, err))
				return
			}
		}
	}
}

// fail records the churn's first error, unless ctx has ended (stop cancels it: a request cut short then
// is no failure).
func (c *churner) fail(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
}

// counts says how many pods were first seen Running, and how many were created, within [from, to].
func (c *churner) counts(from, to time.Time) (starts, created int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	in := func(ts []time.Time) int {
		k := 0
		for _, t := range ts {
			if !t.Before(from) && !t.After(to) {
				k++
			}
		}
		return k
	}
	return in(c.running), in(c.created)
}

// stop ends the churn, deletes the churned pods left and waits until they are gone (their kubelet has
// torn them down); it returns the first error the churn met.
func (c *churner) stop(ctx context.Context) error {
	c.cancel()
	<-c.done
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	pods := c.cs.CoreV1().Pods(c.o.Namespace)
	grace := churnGrace
	sel := metav1.ListOptions{LabelSelector: podLabel + "=" + churnLabel}
	if derr := pods.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &grace}, sel); derr != nil && err == nil {
		err = fmt.Errorf("deleting the churned pods: %w", derr)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; {
		list, lerr := pods.List(ctx, sel)
		if lerr == nil && len(list.Items) == 0 {
			return err
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("churned pods still there after 2 minutes (kubectl -n %s get pods -l %s=%s)", c.o.Namespace, podLabel, churnLabel)
			}
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}
