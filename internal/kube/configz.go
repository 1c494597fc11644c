package kube

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
)

// KubeletConfigz reads a node's kubelet configuration as it runs, through the API server's node proxy
// (/api/v1/nodes/NAME/proxy/configz: {"kubeletconfig": {...}}). It needs the nodes/proxy permission.
func KubeletConfigz(ctx context.Context, cs kubernetes.Interface, node string) ([]byte, error) {
	b, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "configz").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the kubelet configuration of node %s (/api/v1/nodes/%s/proxy/configz; needs nodes/proxy): %w", node, node, err)
	}
	return b, nil
}
