package experiment

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tare-dev/tare/internal/compare"
	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/summary"
)

// daemonSets are a trial's installed manifests (none for a variant without any) and the DaemonSets' pods,
// Ready when the warm-up began. A nil *daemonSets is an experiment without manifests: it does nothing.
type daemonSets struct {
	in      *installer
	objs    []*unstructured.Unstructured
	pods    []compare.DaemonSetPod
	metrics bool // the spec asks for the daemonset family
}

// installDaemonSets first removes whatever any variant's manifests or release left installed (a killed tare's trial),
// then installs the variant's (its chart rendered by helm), with the images they name that the lab builds on demand, and waits until
// every DaemonSet's pods are Ready. A failure leaves nothing installed and stops the experiment (ErrStart):
// the next trial of the variant would fail the same way.
func (r *Runner) installDaemonSets(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, v Variant) (*daemonSets, error) {
	spec := r.Store.Spec
	if !spec.hasManifests() || spec.Target.Lab == nil {
		return nil, nil
	}
	in, err := newInstaller(cfg, cs, spec.Name)
	if err != nil {
		return nil, err
	}
	var all, objs []*unstructured.Unstructured
	for _, x := range spec.Variants {
		if !x.installs() {
			continue
		}
		xs, err := r.objectsOf(ctx, in, x)
		if err != nil {
			return nil, fmt.Errorf("%w: variant %s: %w", ErrStart, x.Name, err)
		}
		all = append(all, xs...)
		if x.Name == v.Name {
			objs = xs
		}
	}
	if err := in.remove(ctx, all); err != nil {
		return nil, err
	}
	d := &daemonSets{in: in, metrics: len(spec.Metrics) == 0 || slices.Contains(spec.Metrics, compare.DaemonSetFamily)}
	if !v.installs() {
		return d, nil
	}
	l, err := lab.Open(r.LabDir())
	if err == nil {
		err = l.ImportHostImages(ctx, imagesOf(objs))
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	start := time.Now()
	if err = in.install(ctx, objs); err == nil {
		d.pods, err = in.waitReady(ctx, objs)
	}
	if err != nil {
		if rerr := in.remove(context.WithoutCancel(ctx), objs); rerr != nil {
			r.say("  warning: %v", rerr)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	d.objs = objs
	r.say("  installed %d objects; %d DaemonSet pods Ready in %.1f s", len(objs), len(d.pods), time.Since(start).Seconds())
	return d, nil
}

// removeAfter removes the trial's manifests and waits for their pods to go, also when the trial failed or
// was interrupted. Its failure becomes the trial's error when the trial had none.
func (d *daemonSets) removeAfter(ctx context.Context, err *error, say func(string, ...any)) {
	if d == nil || len(d.objs) == 0 {
		return
	}
	rerr := d.in.remove(context.WithoutCancel(ctx), d.objs)
	switch {
	case rerr == nil:
	case *err == nil:
		*err = rerr
	default:
		say("  warning: %v", rerr)
	}
}

// cost adds the daemonset family to a trial's metrics: zeros for a variant that installs nothing, else the
// cost of the pods that were Ready before the window, which must be the pods Ready after it (a pod
// replaced during the window would have been measured in part).
func (d *daemonSets) cost(ctx context.Context, sum summary.Summary, metrics map[string]float64) error {
	if d == nil || !d.metrics {
		return nil
	}
	if len(d.objs) == 0 {
		for k, v := range compare.NoDaemonSet() {
			metrics[k] = v
		}
		return nil
	}
	after, err := d.in.waitReady(ctx, d.objs)
	if err != nil {
		return fmt.Errorf("after the window: %w", err)
	}
	if !samePods(d.pods, after) {
		return fmt.Errorf("the DaemonSet's pods changed during the window (%d Ready before, %d after, not the same pods): a pod was replaced", len(d.pods), len(after))
	}
	c, err := compare.DaemonSetCost(sum, d.pods)
	if err != nil {
		return err
	}
	for k, v := range c {
		metrics[k] = v
	}
	return nil
}

// samePods says whether a and b hold the same pods (by UID), in any order.
func samePods(a, b []compare.DaemonSetPod) bool {
	if len(a) != len(b) {
		return false
	}
	uids := map[string]bool{}
	for _, p := range a {
		uids[p.UID] = true
	}
	for _, p := range b {
		if !uids[p.UID] {
			return false
		}
	}
	return true
}

// imagesOf lists the images the pod templates (and pods) among objs name, containers and init containers.
func imagesOf(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		path := []string{"spec", "template", "spec"}
		if o.GetKind() == "Pod" {
			path = []string{"spec"}
		}
		for _, field := range []string{"initContainers", "containers"} {
			cs, _, _ := unstructured.NestedSlice(o.Object, append(slices.Clone(path), field)...)
			for _, c := range cs {
				if m, ok := c.(map[string]any); ok {
					if img, ok := m["image"].(string); ok && img != "" && !slices.Contains(out, img) {
						out = append(out, img)
					}
				}
			}
		}
	}
	return out
}
