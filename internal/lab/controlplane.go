package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// ControlPlane is a running etcd and kube-apiserver. Stop it with Stop.
type ControlPlane struct {
	Dir        string
	Kubeconfig string
	Server     string
	procs      []*exec.Cmd
}

// StartControlPlane starts etcd and kube-apiserver with data, keys and logs under dir, waits until the
// API server is ready, and writes an admin kubeconfig. On failure everything started is stopped and the
// error carries the failing component's last log lines.
func StartControlPlane(ctx context.Context, dir, etcd, apiserver string) (_ *ControlPlane, err error) {
	if err := os.MkdirAll(filepath.Join(dir, "pki"), 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	cp := &ControlPlane{Dir: dir}
	defer func() {
		if err != nil {
			cp.Stop()
		}
	}()
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	if err := cp.start("etcd", etcd, "--data-dir", filepath.Join(dir, "etcd"), "--listen-client-urls", etcdURL,
		"--advertise-client-urls", etcdURL, "--listen-peer-urls", "http://127.0.0.1:"+strconv.Itoa(ports[1]),
		"--enable-pprof"); err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, http.DefaultClient, etcdURL+"/health", 30*time.Second); err != nil {
		return nil, cp.failed("etcd", err)
	}
	adv, err := advertiseAddress()
	if err != nil {
		return nil, err
	}
	pki, err := controlPlanePKI(filepath.Join(dir, "pki"), net.ParseIP(adv))
	if err != nil {
		return nil, err
	}
	cp.Server = "https://127.0.0.1:" + strconv.Itoa(ports[2])
	if err := cp.start("kube-apiserver", apiserver, "--etcd-servers", etcdURL, "--bind-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(ports[2]), "--advertise-address", adv,
		"--client-ca-file", pki.Path("ca.crt"), "--tls-cert-file", pki.Path("apiserver.crt"), "--tls-private-key-file", pki.Path("apiserver.key"),
		"--kubelet-client-certificate", pki.Path("apiserver-kubelet-client.crt"), "--kubelet-client-key", pki.Path("apiserver-kubelet-client.key"),
		"--service-account-issuer", "https://kubernetes.default.svc", "--service-account-key-file", pki.Path("sa.pub"),
		"--service-account-signing-key-file", pki.Path("sa.key"),
		"--authorization-mode", "Node,RBAC", "--service-cluster-ip-range", "10.96.0.0/16",
		"--feature-gates", "WatchList=false", "--profiling"); err != nil {
		return nil, err
	}
	client, err := pki.HTTPClient("admin")
	if err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, client, cp.Server+"/readyz", 90*time.Second); err != nil {
		return nil, cp.failed("kube-apiserver", err)
	}
	cp.Kubeconfig = filepath.Join(dir, "kubeconfig")
	return cp, pki.Kubeconfig(cp.Kubeconfig, "admin", cp.Server)
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

func (cp *ControlPlane) start(name, bin string, args ...string) error {
	log, err := os.Create(filepath.Join(cp.Dir, name+".log"))
	if err != nil {
		return fmt.Errorf("creating the %s log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("starting %s: %w", name, err)
	}
	go func() { _ = cmd.Wait(); log.Close() }()
	cp.procs = append(cp.procs, cmd)
	return nil
}

func (cp *ControlPlane) failed(name string, err error) error {
	b, _ := os.ReadFile(filepath.Join(cp.Dir, name+".log"))
	return fmt.Errorf("%s did not become ready: %w; last log lines:\n%s", name, err, tail(b, 15))
}

// PIDs returns the process IDs of the running components.
func (cp *ControlPlane) PIDs() []int {
	var out []int
	for _, c := range cp.procs {
		out = append(out, c.Process.Pid)
	}
	return out
}

// Stop terminates every component (SIGTERM, then SIGKILL after 10 s) and waits for it.
func (cp *ControlPlane) Stop() {
	for i := len(cp.procs) - 1; i >= 0; i-- {
		p := cp.procs[i].Process
		_ = p.Signal(syscall.SIGTERM)
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) && p.Signal(syscall.Signal(0)) == nil {
			time.Sleep(50 * time.Millisecond)
		}
		_ = p.Kill()
	}
	cp.procs = nil
}

func waitHTTP(ctx context.Context, c *http.Client, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	check := httpOK(c, url)
	for {
		last := check(ctx)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
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
