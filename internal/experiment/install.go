package experiment

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/tare-dev/tare/internal/compare"
)

// ownerLabel marks the objects an experiment installed (its value is the spec's name): tare removes only
// what carries it, and refuses to take over an object that exists without it.
const ownerLabel = "tare.dev/experiment"

// fieldManager is the server-side apply field manager of what experiments install.
const fieldManager = "tare-experiment"

// Time limits of the install and the removal: a DaemonSet's pods on the lab are Ready in seconds (the
// images are local).
const (
	readyTimeout  = 3 * time.Minute
	removeTimeout = 2 * time.Minute
	pollEvery     = 500 * time.Millisecond
)

// installer applies and removes manifests' objects, as kubectl apply --server-side and kubectl delete do.
type installer struct {
	owner  string
	dyn    dynamic.Interface
	cs     kubernetes.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newInstaller(cfg *rest.Config, cs kubernetes.Interface, owner string) (*installer, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &installer{owner: owner, dyn: dyn, cs: cs, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}, nil
}

// resource is the client of o's resource, in o's namespace (ns, set on o, for a namespaced object that
// names none). A kind the server does not know yet (a custom resource whose definition was just
// applied) is looked up again once.
func (in *installer) resource(o *unstructured.Unstructured, ns string) (dynamic.ResourceInterface, error) {
	gvk := o.GroupVersionKind()
	m, err := in.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		in.mapper.Reset()
		m, err = in.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyOf(o), err)
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return in.dyn.Resource(m.Resource), nil
	}
	if o.GetNamespace() == "" {
		o.SetNamespace(ns)
	}
	return in.dyn.Resource(m.Resource).Namespace(o.GetNamespace()), nil
}

// setNamespaces puts every namespaced object among objs that names no namespace in ns.
func (in *installer) setNamespaces(objs []*unstructured.Unstructured, ns string) error {
	for _, o := range objs {
		if o.GetNamespace() != "" {
			continue
		}
		if _, err := in.resource(o, ns); err != nil {
			return err
		}
	}
	return nil
}

// install applies objs in installPlan's order, each labelled as the experiment's. An object that exists
// without the label is not taken over (tare would remove it after the trial): that is an error.
func (in *installer) install(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, o := range installPlan(objs) {
		o = o.DeepCopy()
		r, err := in.resource(o, metav1.NamespaceDefault)
		if err != nil {
			return err
		}
		if cur, err := r.Get(ctx, o.GetName(), metav1.GetOptions{}); err == nil && cur.GetLabels()[ownerLabel] != in.owner {
			return fmt.Errorf("%s exists and is not this experiment's (no label %s=%s): tare removes what it installs after each trial, so it will not take it over; delete it or rename it in the manifest", keyOf(o), ownerLabel, in.owner)
		} else if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("%s: %w", keyOf(o), err)
		}
		labels := o.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[ownerLabel] = in.owner
		o.SetLabels(labels)
		if _, err := r.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
			return fmt.Errorf("applying %s: %w", keyOf(o), err)
		}
	}
	return nil
}

// remove deletes, in removePlan's order, those of objs that exist with the experiment's label (in the
// foreground: a DaemonSet goes once its pods have), then waits until every one of them and every pod of
// their DaemonSets is gone. Objects that are absent or not the experiment's are left alone, so it also
// clears what a killed tare left (--resume) at no cost when there is nothing.
func (in *installer) remove(ctx context.Context, objs []*unstructured.Unstructured) error {
	ctx, cancel := context.WithTimeout(ctx, removeTimeout)
	defer cancel()
	fg := metav1.DeletePropagationForeground
	var gone []func() (bool, error)
	for _, o := range removePlan(objs) {
		o = o.DeepCopy()
		r, err := in.resource(o, metav1.NamespaceDefault)
		if err != nil {
			return err
		}
		cur, err := r.Get(ctx, o.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", keyOf(o), err)
		}
		if cur.GetLabels()[ownerLabel] != in.owner {
			continue
		}
		if err := r.Delete(ctx, o.GetName(), metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s: %w", keyOf(o), err)
		}
		name, key := o.GetName(), keyOf(o)
		gone = append(gone, func() (bool, error) {
			_, err := r.Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			if err != nil {
				return false, fmt.Errorf("%s: %w", key, err)
			}
			return false, nil
		})
		if isDaemonSet(o) {
			sel, err := selectorOf(cur)
			if err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			ns := o.GetNamespace()
			gone = append(gone, func() (bool, error) {
				pods, err := in.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
				if err != nil {
					return false, fmt.Errorf("the pods of %s: %w", key, err)
				}
				return len(ownedPods(pods.Items, cur.GetUID())) == 0, nil
			})
		}
	}
	for _, g := range gone {
		if err := poll(ctx, g); err != nil {
			return fmt.Errorf("removing the variant's manifests: %w", err)
		}
	}
	return nil
}

// selectorOf is a DaemonSet's pod selector as a label selector string.
func selectorOf(u *unstructured.Unstructured) (string, error) {
	var ds appsv1.DaemonSet
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &ds); err != nil {
		return "", err
	}
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return "", err
	}
	return sel.String(), nil
}

// waitReady waits until every DaemonSet among objs has all its desired pods scheduled, updated and Ready,
// and returns those pods.
func (in *installer) waitReady(ctx context.Context, objs []*unstructured.Unstructured) ([]compare.DaemonSetPod, error) {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	var out []compare.DaemonSetPod
	for _, o := range objs {
		if !isDaemonSet(o) {
			continue
		}
		ns := o.GetNamespace()
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		var why string
		var pods []compare.DaemonSetPod
		err := poll(ctx, func() (bool, error) {
			ds, err := in.cs.AppsV1().DaemonSets(ns).Get(ctx, o.GetName(), metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
			if err != nil {
				return false, err
			}
			list, err := in.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
			if err != nil {
				return false, err
			}
			var ok bool
			pods, ok, why = daemonSetReady(ds, ownedPods(list.Items, ds.UID))
			return ok, nil
		})
		if err != nil {
			return nil, fmt.Errorf("DaemonSet %s/%s not ready: %s: %w", ns, o.GetName(), why, err)
		}
		out = append(out, pods...)
	}
	return out, nil
}

// daemonSetReady says whether a DaemonSet is rolled out and all its pods Ready: its controller has seen its
// latest spec, it wants at least one pod, and every desired pod is scheduled, up to date, Ready and
// available; pods are the DaemonSet's own (not being deleted). When not, why says what is missing.
func daemonSetReady(ds *appsv1.DaemonSet, pods []corev1.Pod) (ready []compare.DaemonSetPod, ok bool, why string) {
	st := ds.Status
	d := st.DesiredNumberScheduled
	switch {
	case st.ObservedGeneration < ds.Generation:
		return nil, false, "its controller has not seen its latest spec"
	case d == 0:
		return nil, false, "it wants no pod (no node matches its node selector, affinity and tolerations)"
	case st.CurrentNumberScheduled != d || st.UpdatedNumberScheduled != d:
		return nil, false, fmt.Sprintf("%d of %d pods scheduled, %d up to date", st.CurrentNumberScheduled, d, st.UpdatedNumberScheduled)
	case st.NumberReady != d || st.NumberAvailable != d:
		return nil, false, fmt.Sprintf("%d of %d pods Ready, %d available%s", st.NumberReady, d, st.NumberAvailable, waiting(pods))
	}
	var notReady []string
	for _, p := range pods {
		if p.DeletionTimestamp != nil || !podReady(p) {
			notReady = append(notReady, p.Name)
			continue
		}
		ready = append(ready, compare.DaemonSetPod{UID: string(p.UID), Namespace: p.Namespace, Name: p.Name, Node: p.Spec.NodeName})
	}
	if len(notReady) > 0 || int32(len(ready)) != d {
		return nil, false, fmt.Sprintf("%d of %d pods Ready (not: %s)", len(ready), d, strings.Join(notReady, ", "))
	}
	return ready, true, ""
}

// waiting says why the pods' containers are not running, as kubectl describe's events would (the first
// of each pod: "; POD: REASON: MESSAGE"), or nothing.
func waiting(pods []corev1.Pod) string {
	var b strings.Builder
	for _, p := range pods {
		for _, c := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			if w := c.State.Waiting; w != nil && w.Reason != "" {
				fmt.Fprintf(&b, "; %s: %s", p.Name, w.Reason)
				if w.Message != "" {
					fmt.Fprintf(&b, ": %s", w.Message)
				}
				break
			}
		}
	}
	return b.String()
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// ownedPods are the pods whose controller is the object with uid.
func ownedPods(pods []corev1.Pod, uid types.UID) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if c := metav1.GetControllerOf(&p); c != nil && string(c.UID) == string(uid) {
			out = append(out, p)
		}
	}
	return out
}

// poll calls done every pollEvery until it says true, fails, or ctx ends.
func poll(ctx context.Context, done func() (bool, error)) error {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		ok, err := done()
		if ok {
			return nil
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
