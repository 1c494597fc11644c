package lab

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tare-dev/tare/internal/component"
)

// InstallAPIServer makes sure what Up needs with APIServerOnly is installed: Debian's etcd (installed with
// apt as root when missing) and kube-apiserver, built into tare's cache the first time (minutes on a fresh
// machine).
func InstallAPIServer(ctx context.Context) error {
	if _, err := EnsureEtcd(ctx); err != nil {
		return err
	}
	for _, name := range (UpOptions{APIServerOnly: true}).components() {
		if labOf(name).Source != component.SourceUpstream {
			continue
		}
		if _, err := Build(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// apiserverArgs are kube-apiserver's flags: etcd over loopback, serving on host (the machine's own
// address: the API server refuses to advertise a loopback one) with the lab CA's certificates, Node and
// RBAC authorization, and profiling.
func apiserverArgs(pki *PKI, host string, ports portSet) []string {
	return []string{"--etcd-servers", ports.etcdURL(),
		"--bind-address", host, "--secure-port", strconv.Itoa(ports.apiserver()), "--advertise-address", host,
		"--client-ca-file", pki.Path("ca.crt"), "--tls-cert-file", pki.Path("apiserver.crt"), "--tls-private-key-file", pki.Path("apiserver.key"),
		"--kubelet-client-certificate", pki.Path("apiserver-kubelet-client.crt"), "--kubelet-client-key", pki.Path("apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority", pki.Path("ca.crt"),
		"--service-account-issuer", "https://kubernetes.default.svc", "--service-account-key-file", pki.Path("sa.pub"),
		"--service-account-signing-key-file", pki.Path("sa.key"),
		"--authorization-mode", "Node,RBAC", "--service-cluster-ip-range", serviceCIDR, "--allow-privileged=true",
		// Debian's etcd 3.4 lacks RequestWatchProgress: without this, watches from resourceVersion 0 fail.
		"--feature-gates", "WatchList=false", "--profiling",
		// Reach a kubelet (logs, exec, configz through the node proxy) by the node's address first: no
		// resolver knows the extra nodes' names, and node 1's is the machine's host name, which /etc/hosts
		// often maps to a loopback address, which the API server refuses to proxy to ("address not allowed").
		"--kubelet-preferred-address-types", "InternalIP,Hostname,InternalDNS,ExternalDNS,ExternalIP"}
}

// auditPolicy logs every request at Metadata level (who, what, when; no bodies, so no secrets).
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
`

// auditArgs are the flags that turn on kube-apiserver's audit log: JSON lines at the level policy sets,
// rotated at 100 MB with three old files kept.
func auditArgs(policy, log string) []string {
	return []string{"--audit-policy-file", policy, "--audit-log-path", log,
		"--audit-log-format", "json", "--audit-log-maxsize", "100", "--audit-log-maxbackup", "3"}
}

// startAPIServer starts kube-apiserver (with the audit log if asked). It may start before etcd answers:
// the API server retries its storage for up to --storage-initialization-timeout (a minute), and its own
// start (flags, certificates, admission plugins) overlaps etcd's.
func (l *lab) startAPIServer(tunings []Tuning) error {
	if l.opts.Audit {
		if err := os.MkdirAll(l.p.join("audit"), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(l.p.join("audit", "policy.yaml"), []byte(auditPolicy), 0o600); err != nil {
			return err
		}
		l.mu.Lock() // the runtimes' goroutine may be saving the state
		l.st.Audit = l.p.join("audit", "audit.log")
		l.mu.Unlock()
	}
	_, err := l.launch(component.APIServer, l.args(component.APIServer), tunings)
	return err
}

// waitAPIServer waits until kube-apiserver's /readyz is ok.
func (l *lab) waitAPIServer(ctx context.Context) error {
	err := l.waitFor(ctx, component.APIServer, 90*time.Second, l.healthy(component.APIServer))
	l.step("kube-apiserver ready")
	return err
}

// controlPlanePKI issues what kube-apiserver's TLS needs: the serving certificate
// with the names and addresses clients use, the kubelet client certificate and the admin's.
func controlPlanePKI(dir string, adv net.IP) (*PKI, error) {
	p, err := NewPKI(dir)
	if err != nil {
		return nil, err
	}
	dns := []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"}
	ips := []net.IP{net.IPv4(127, 0, 0, 1), adv, net.IPv4(10, 96, 0, 1)}
	if err := p.Serving("apiserver", dns, ips); err != nil {
		return nil, err
	}
	if err := p.Client("apiserver-kubelet-client", APIServerKubeletIdentity); err != nil {
		return nil, err
	}
	return p, p.Client("admin", AdminIdentity)
}

// advertiseAddress is the machine's first non-loopback IPv4 address (kube-apiserver refuses loopback).
func advertiseAddress() (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && !ip.IP.IsLoopback() && ip.IP.To4() != nil {
			return ip.IP.String(), nil
		}
	}
	return "", fmt.Errorf("no non-loopback IPv4 address to advertise the API server on: %w", ErrPrerequisite)
}

// advertised is the address the API server listens on and advertises.
func (l *lab) advertised() string {
	host, _, _ := net.SplitHostPort(strings.TrimPrefix(l.st.Server, "https://"))
	return host
}
