package lab

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
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
	if err := waitHTTP(ctx, http.DefaultClient, etcdURL+"/health", "", 30*time.Second); err != nil {
		return nil, cp.failed("etcd", err)
	}
	token, err := cp.writeCredentials()
	if err != nil {
		return nil, err
	}
	adv, err := advertiseAddress()
	if err != nil {
		return nil, err
	}
	cp.Server = "https://127.0.0.1:" + strconv.Itoa(ports[2])
	pki := filepath.Join(dir, "pki")
	if err := cp.start("kube-apiserver", apiserver, "--etcd-servers", etcdURL, "--bind-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(ports[2]), "--advertise-address", adv, "--cert-dir", pki,
		"--service-account-issuer", "https://kubernetes.default.svc", "--service-account-key-file", filepath.Join(pki, "sa.key"),
		"--service-account-signing-key-file", filepath.Join(pki, "sa.key"), "--token-auth-file", filepath.Join(pki, "tokens.csv"),
		"--authorization-mode", "Node,RBAC", "--service-cluster-ip-range", "10.96.0.0/16",
		"--feature-gates", "WatchList=false", "--profiling"); err != nil {
		return nil, err
	}
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the lab's self-signed serving certificate
	if err := waitHTTP(ctx, insecure, cp.Server+"/readyz", token, 90*time.Second); err != nil {
		return nil, cp.failed("kube-apiserver", err)
	}
	cp.Kubeconfig = filepath.Join(dir, "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: %s
contexts:
- name: lab
  context: {cluster: lab, user: admin}
current-context: lab
`, cp.Server, token)
	return cp, os.WriteFile(cp.Kubeconfig, []byte(kc), 0o600)
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

// writeCredentials makes the service-account key and a random admin bearer token.
func (cp *ControlPlane) writeCredentials() (string, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", err
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(filepath.Join(cp.Dir, "pki", "sa.key"), pemKey, 0o600); err != nil {
		return "", err
	}
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	token := hex.EncodeToString(raw)
	line := token + ",admin,admin,system:masters\n"
	return token, os.WriteFile(filepath.Join(cp.Dir, "pki", "tokens.csv"), []byte(line), 0o600)
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

func waitHTTP(ctx context.Context, c *http.Client, url, token string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s: %s", url, resp.Status)
		}
		last = err
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
