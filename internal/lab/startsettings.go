package lab

import (
	"context"
	"crypto/tls"
	"net/http"
	"strconv"

	"github.com/tare-dev/tare/internal/component"
)

// What Up and Retune start each component with, before its tunings, and how they know it is up: one home,
// so that a component restarted alone runs exactly as Up started it.

// args are a component's flags before tunings, on node 1 or the control plane. The API server's include
// the audit log's when the lab writes one (Up sets State.Audit first).
func (l *lab) args(name string) []string {
	switch name {
	case component.Etcd:
		return etcdArgs(l.p, l.st.ports())
	case component.APIServer:
		args := apiserverArgs(l.pki, l.advertised(), l.st.ports())
		if l.st.Audit != "" {
			args = append(args, auditArgs(l.p.join("audit", "policy.yaml"), l.st.Audit)...)
		}
		return args
	case component.ControllerManager:
		return controllerManagerArgs(l.p, l.pki, l.st.ports())
	case component.Scheduler:
		return schedulerArgs(l.p, l.st.ports())
	case component.Kubelet:
		return kubeletArgs(l.p, l.st.Node, l.advertised())
	default: // kube-proxy
		return kubeProxyArgs(l.p, l.st.Node)
	}
}

// nodeArgs are a node component's flags before tunings on an extra node (its own directory, name and
// address).
func (l *lab) nodeArgs(name string, n ExtraNode) []string {
	p := l.p.node(n.Name)
	if name == component.Kubelet {
		return kubeletArgs(p, n.Name, n.Address)
	}
	return kubeProxyArgs(p, n.Name)
}

// healthy is a component's health check on node 1 or the control plane (Up and Retune wait for it): etcd's
// /health, the API server's /readyz, the others' /healthz.
func (l *lab) healthy(name string) func(context.Context) error {
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // #nosec G402 -- self-signed healthz
	switch name {
	case component.Etcd:
		return httpOK(http.DefaultClient, l.st.ports().etcdURL()+"/health")
	case component.APIServer:
		return l.apiOK("/readyz")
	case component.ControllerManager:
		return httpOK(insecure, "https://127.0.0.1:"+strconv.Itoa(l.st.ports().kcm())+"/healthz")
	case component.Scheduler:
		return httpOK(insecure, "https://127.0.0.1:"+strconv.Itoa(l.st.ports().scheduler())+"/healthz")
	case component.Kubelet:
		return httpOK(http.DefaultClient, "http://127.0.0.1:"+strconv.Itoa(kubeletHealthz)+"/healthz")
	default:
		return httpOK(http.DefaultClient, "http://127.0.0.1:"+strconv.Itoa(proxyHealthz)+"/healthz")
	}
}

// serving says whether the API server answers requests at all (/version, which no health check gates),
// before its post-start hooks are done and /readyz is ok.
func (l *lab) serving() func(context.Context) error { return l.apiOK("/version") }

// apiOK checks that a GET of path on the API server, as the lab's admin, is ok.
func (l *lab) apiOK(path string) func(context.Context) error {
	client, err := l.pki.HTTPClient("admin")
	if err != nil {
		return func(context.Context) error { return err }
	}
	return httpOK(client, l.st.Server+path)
}
