package lab

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tare-dev/tare/internal/lab/images"
)

// probePodName is the pod Up runs to prove the lab works.
const probePodName = "tare-lab-probe"

// probe runs a pod to completion of its start (Running) and deletes it: the proof that scheduling,
// the sandbox, CNI and the image all work. With a real node it returns once the node also takes pods
// that tolerate nothing.
func (l *lab) probe(ctx context.Context) error {
	c, err := l.client()
	if err != nil {
		return err
	}
	pods := c.CoreV1().Pods(metav1.NamespaceDefault)
	_ = pods.Delete(ctx, probePodName, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: probePodName, Labels: map[string]string{labManagedLabel: "probe"}},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{{Name: "probe", Image: images.Pause.Name, ImagePullPolicy: corev1.PullNever}},
			TerminationGracePeriodSeconds: new(int64),
			AutomountServiceAccountToken:  new(bool),
		},
	}
	if l.opts.ControlPlaneOnly {
		pod.Spec.NodeSelector = map[string]string{"type": "kwok"}
		pod.Spec.Tolerations = []corev1.Toleration{{Key: kwokAnnotation, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	} else {
		// The node is Ready when the probe starts, but keeps its not-ready taint until the controller
		// manager's node lifecycle controller has seen it so (a second or so later on a cold start). The
		// probe tolerates the taint so that its sandbox and container start meanwhile; up still returns
		// only once the taint is gone, when the node takes any pod.
		pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": l.st.Node}
		pod.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	}
	// Admission refuses pods until the namespace's default service account exists; the controller
	// manager makes it seconds after it starts, so make it now (the controller then finds it there).
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: metav1.NamespaceDefault}}
	if _, err := c.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the default service account: %w", err)
	}
	if err := l.waitFor(ctx, "probe pod creation", 60*time.Second, func(ctx context.Context) error {
		_, err := pods.Create(ctx, pod, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}); err != nil {
		return err
	}
	err = l.waitFor(ctx, "probe pod", 120*time.Second, func(ctx context.Context) error {
		p, err := pods.Get(ctx, probePodName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("probe pod is %s%s", p.Status.Phase, podWaiting(p))
		}
		if l.opts.ControlPlaneOnly {
			return nil
		}
		return nodeSchedulable(ctx, c, l.st.Node)
	})
	if err != nil {
		return err
	}
	l.step("probe pod Running")
	return pods.Delete(context.WithoutCancel(ctx), probePodName, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
}

func podWaiting(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			return ": " + w.Reason + " " + w.Message
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			return ": " + c.Message
		}
	}
	return ""
}
