package kube

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
)

// Exec runs cmd in a pod's container as kubectl exec does (no terminal, no stdin), streaming what it
// writes to stdout and stderr as it writes it. The API server carries the stream to the kubelet, over
// WebSockets where both ends speak them, else over SPDY. A command that exits non-zero is an error.
func (c *Client) Exec(ctx context.Context, cs kubernetes.Interface, ns, pod, container string, cmd []string, stdout, stderr io.Writer) error {
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(c.Config, "GET", req.URL().String())
	if err != nil {
		return fmt.Errorf("exec in pod %s/%s: %w", ns, pod, err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(c.Config, "POST", req.URL())
	if err != nil {
		return fmt.Errorf("exec in pod %s/%s: %w", ns, pod, err)
	}
	exec, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return fmt.Errorf("exec in pod %s/%s: %w", ns, pod, err)
	}
	if err := exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr}); err != nil {
		return fmt.Errorf("exec %q in pod %s/%s: %w", cmd[0], ns, pod, err)
	}
	return nil
}
