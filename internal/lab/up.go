package lab

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// UpOptions configure Up.
type UpOptions struct {
	Dir              string
	Profile          string   // upstream (default) or tuned
	Sets             []Tuning // --set COMPONENT.FLAG=VALUE, applied after the profile
	Audit            bool     // audit log at Metadata level, JSON, in DIR/audit/audit.log
	KwokNodes        int      // fake nodes served by kwok
	ControlPlaneOnly bool     // no containerd, kubelet or kube-proxy (forced without root)
	BinDir           string   // Kubernetes binaries to use instead of tare's cache
	Progress         func(Step)
}

// ErrAlreadyRunning says a lab already runs in the directory.
var ErrAlreadyRunning = errors.New("a lab is already running")

// lab is one `up` in progress.
type lab struct {
	opts    UpOptions
	st      *State
	p       paths
	bin     binaries
	pki     *PKI
	start   time.Time
	last    time.Time
	mu      sync.Mutex
	daemons []*daemon
}

// Up starts a lab: PKI and kubeconfigs, etcd, kube-apiserver, controller-manager, scheduler and (as root)
// containerd, kubelet and kube-proxy, plus kwok for fake nodes. It returns once /readyz is ok, every
// node is Ready and a probe pod ran, with the time of each step. On failure everything started is
// stopped, and the error names the component and ends with its last log lines.
func Up(ctx context.Context, opts UpOptions) (_ *State, err error) {
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	opts.Dir = dir
	if os.Geteuid() != 0 {
		opts.ControlPlaneOnly = true
	}
	if opts.ControlPlaneOnly && opts.KwokNodes == 0 {
		opts.KwokNodes = 1 // something for the scheduler to place the probe pod on
	}
	tunings, err := ProfileTunings(opts.Profile)
	if err != nil {
		return nil, err
	}
	tunings = append(tunings, opts.Sets...)
	if opts.Profile == "" {
		opts.Profile = ProfileUpstream
	}
	if old, err := LoadState(dir); err == nil {
		if running := old.Running(); len(running) > 0 {
			return nil, fmt.Errorf("%w in %s (since %s, %d processes, kubeconfig %s): use it, or stop it with tare lab down",
				ErrAlreadyRunning, dir, old.Started.Format(time.RFC3339), len(running), old.Kubeconfig)
		}
	}
	if err := portsFree(labPorts(opts.ControlPlaneOnly)); err != nil {
		return nil, err
	}
	bin, err := findBinaries(opts.BinDir, opts.ControlPlaneOnly, opts.KwokNodes > 0)
	if err != nil {
		return nil, err
	}
	l := &lab{opts: opts, p: paths{dir}, bin: bin, start: time.Now()}
	l.last = l.start
	l.st = &State{Version: stateVersion, Dir: dir, Profile: opts.Profile, ControlOnly: opts.ControlPlaneOnly,
		KwokNodes: opts.KwokNodes, Started: l.start, Tunings: tunings, NetnsBefore: netnsNames()}
	if !opts.ControlPlaneOnly {
		l.st.Sysctls = readSysctls()
		l.st.MadeDirs = absentDirs(machineDirs)
	}
	for _, d := range []string{"logs", "kubeconfigs"} {
		if err := os.MkdirAll(l.p.join(d), 0o700); err != nil {
			return nil, fmt.Errorf("creating the lab directory: %w", err)
		}
	}
	if err := l.st.save(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			// Stop what started, keep the directory (logs, data) for a look and a warm retry.
			_, derr := Down(context.WithoutCancel(ctx), dir, true)
			if derr != nil {
				err = fmt.Errorf("%w; cleaning up after the failure also failed: %w", err, derr)
			} else {
				err = fmt.Errorf("%w\n(everything the lab started was stopped; logs kept in %s)", err, l.p.join("logs"))
			}
		}
	}()
	if err := l.run(ctx, tunings); err != nil {
		return nil, err
	}
	l.st.Ready = true
	return l.st, l.st.save()
}

func (l *lab) run(ctx context.Context, tunings []Tuning) error {
	if err := l.certificates(); err != nil {
		return err
	}
	l.step("pki")
	var cri chan error
	if !l.opts.ControlPlaneOnly {
		cri = make(chan error, 1)
		go func() { cri <- l.containerd(ctx) }()
	}
	if err := l.etcd(ctx, tunings); err != nil {
		return err
	}
	if err := l.apiserver(ctx, tunings); err != nil {
		return err
	}
	if err := l.controllers(ctx, tunings); err != nil {
		return err
	}
	if cri != nil {
		if err := <-cri; err != nil {
			return err
		}
		if err := l.node(ctx, tunings); err != nil {
			return err
		}
	}
	if l.opts.KwokNodes > 0 {
		if err := l.kwok(ctx, tunings); err != nil {
			return err
		}
	}
	return l.probe(ctx)
}

// step records that a stage finished.
func (l *lab) step(name string) {
	l.mu.Lock()
	now := time.Now()
	s := Step{Name: name, At: now.Sub(l.start), Took: now.Sub(l.last)}
	l.last = now
	l.st.Steps = append(l.st.Steps, s)
	_ = l.st.save()
	l.mu.Unlock()
	if l.opts.Progress != nil {
		l.opts.Progress(s)
	}
}

// launch starts a component with the tunings for it applied, and records it in the state at once.
func (l *lab) launch(name, bin string, args []string, tunings []Tuning) (*daemon, error) {
	d, err := startDaemon(l.p.dir, name, bin, applyTunings(name, args, tunings), nil)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.daemons = append(l.daemons, d)
	l.st.Processes = append(l.st.Processes, d.Process)
	return d, l.st.save()
}

// waitFor polls check until it succeeds, the timeout passes or a lab process dies (which is reported
// with the last lines of its log).
func (l *lab) waitFor(ctx context.Context, what string, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if d := l.dead(); d != nil {
			return l.died(d)
		}
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		last = check(cctx)
		ccancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if d := l.dead(); d != nil {
				return l.died(d)
			}
			if ctx.Err() == context.DeadlineExceeded {
				return fmt.Errorf("%s: not ready after %s: %w", what, timeout, last)
			}
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (l *lab) dead() *daemon {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, d := range l.daemons {
		select {
		case <-d.exited:
			return d
		default:
		}
	}
	return nil
}

func (l *lab) died(d *daemon) error {
	b, _ := os.ReadFile(d.Log)
	exit := d.err
	if exit == nil {
		exit = errors.New("exit status 0")
	}
	run := lastRun(b)
	msg := fmt.Sprintf("%s exited during start (%v)", d.Name, exit)
	if errs := errorLines(run, 5); len(errs) > 0 {
		msg += ": " + strings.Join(errs, "; ")
	}
	return fmt.Errorf("%s; last lines of %s:\n%s", msg, d.Log, tail(run, 15))
}

// lastRun is the part of an appended log written by the latest start (after its ==== marker).
func lastRun(b []byte) []byte {
	if i := bytes.LastIndex(b, []byte(logMarker)); i >= 0 {
		return b[i:]
	}
	return b
}

var errorLine = regexp.MustCompile(`(?i)\b(error|invalid|fatal|unknown flag|panic|failed)\b`)

// errorLines are the first n lines that say what went wrong: a program that exits on a bad flag prints
// the error first and then its whole usage, so the tail alone would show only the usage.
func errorLines(b []byte, n int) []string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && errorLine.MatchString(l) && !strings.HasPrefix(l, logMarker) {
			out = append(out, l)
			if len(out) == n {
				break
			}
		}
	}
	return out
}

// certificates creates the lab's PKI, or reuses the one a kept directory has (warm start).
func (l *lab) certificates() error {
	dir := l.p.pki()
	adv, err := advertiseAddress()
	if err != nil {
		return err
	}
	node, err := nodeName()
	if err != nil {
		return err
	}
	l.st.Node = node
	l.st.Server = "https://" + net.JoinHostPort(adv, strconv.Itoa(apiserverPort))
	l.st.Kubeconfig = l.p.kubeconfig("admin")
	if p, err := LoadPKI(dir); err == nil {
		if _, err := os.Stat(l.p.kubeconfig("kube-proxy")); err == nil {
			l.pki = p
			return nil
		}
	}
	p, err := controlPlanePKI(dir, net.ParseIP(adv))
	if err != nil {
		return err
	}
	l.pki = p
	for _, c := range []struct {
		name string
		id   Identity
	}{
		{"controller-manager", ControllerManagerIdentity}, {"scheduler", SchedulerIdentity},
		{"kube-proxy", KubeProxyIdentity}, {"kubelet-client", KubeletIdentity(node)},
	} {
		if err := p.Client(c.name, c.id); err != nil {
			return err
		}
	}
	hostIPs := []net.IP{net.IPv4(127, 0, 0, 1), net.ParseIP(adv)}
	if err := p.Serving("kubelet", []string{node, "localhost"}, hostIPs); err != nil {
		return err
	}
	for who, cert := range map[string]string{"admin": "admin", "controller-manager": "controller-manager",
		"scheduler": "scheduler", "kube-proxy": "kube-proxy", "kubelet": "kubelet-client"} {
		if err := p.Kubeconfig(l.p.kubeconfig(who), cert, l.st.Server); err != nil {
			return err
		}
	}
	return nil
}

func (l *lab) etcd(ctx context.Context, tunings []Tuning) error {
	url := "http://127.0.0.1:" + strconv.Itoa(etcdClientPort)
	if _, err := l.launch("etcd", l.bin.etcd, []string{"--name", "tare-lab", "--data-dir", l.p.join("etcd"),
		"--listen-client-urls", url, "--advertise-client-urls", url,
		"--listen-peer-urls", "http://127.0.0.1:" + strconv.Itoa(etcdPeerPort),
		"--initial-advertise-peer-urls", "http://127.0.0.1:" + strconv.Itoa(etcdPeerPort),
		"--initial-cluster", "tare-lab=http://127.0.0.1:" + strconv.Itoa(etcdPeerPort),
		"--enable-pprof"}, tunings); err != nil {
		return err
	}
	err := l.waitFor(ctx, "etcd", 30*time.Second, httpOK(http.DefaultClient, url+"/health"))
	l.step("etcd healthy")
	return err
}

func (l *lab) apiserver(ctx context.Context, tunings []Tuning) error {
	pki := l.pki.Path
	host := l.advertised()
	args := []string{"--etcd-servers", "http://127.0.0.1:" + strconv.Itoa(etcdClientPort),
		"--bind-address", host, "--secure-port", strconv.Itoa(apiserverPort), "--advertise-address", host,
		"--client-ca-file", pki("ca.crt"), "--tls-cert-file", pki("apiserver.crt"), "--tls-private-key-file", pki("apiserver.key"),
		"--kubelet-client-certificate", pki("apiserver-kubelet-client.crt"), "--kubelet-client-key", pki("apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority", pki("ca.crt"),
		"--service-account-issuer", "https://kubernetes.default.svc", "--service-account-key-file", pki("sa.pub"),
		"--service-account-signing-key-file", pki("sa.key"),
		"--authorization-mode", "Node,RBAC", "--service-cluster-ip-range", serviceCIDR, "--allow-privileged=true",
		// Debian's etcd 3.4 lacks RequestWatchProgress: without this, watches from resourceVersion 0 fail.
		"--feature-gates", "WatchList=false", "--profiling"}
	if l.opts.Audit {
		if err := os.MkdirAll(l.p.join("audit"), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(l.p.join("audit", "policy.yaml"), []byte(auditPolicy), 0o600); err != nil {
			return err
		}
		l.st.Audit = l.p.join("audit", "audit.log")
		args = append(args, "--audit-policy-file", l.p.join("audit", "policy.yaml"), "--audit-log-path", l.st.Audit,
			"--audit-log-format", "json", "--audit-log-maxsize", "100", "--audit-log-maxbackup", "3")
	}
	if _, err := l.launch("kube-apiserver", l.bin.apiserver, args, tunings); err != nil {
		return err
	}
	client, err := l.pki.HTTPClient("admin")
	if err != nil {
		return err
	}
	err = l.waitFor(ctx, "kube-apiserver", 90*time.Second, httpOK(client, l.st.Server+"/readyz"))
	l.step("kube-apiserver ready")
	return err
}

func (l *lab) controllers(ctx context.Context, tunings []Tuning) error {
	if err := l.dropStaleLeases(ctx); err != nil {
		return err
	}
	pki := l.pki.Path
	kc := l.p.kubeconfig("controller-manager")
	if _, err := l.launch("kube-controller-manager", l.bin.kcm, []string{"--kubeconfig", kc,
		"--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(kcmPort),
		"--service-account-private-key-file", pki("sa.key"), "--root-ca-file", pki("ca.crt"),
		"--cluster-signing-cert-file", pki("ca.crt"), "--cluster-signing-key-file", pki("ca.key"),
		"--use-service-account-credentials=true", "--service-cluster-ip-range", serviceCIDR, "--profiling"}, tunings); err != nil {
		return err
	}
	ks := l.p.kubeconfig("scheduler")
	if _, err := l.launch("kube-scheduler", l.bin.scheduler, []string{"--kubeconfig", ks,
		"--authentication-kubeconfig", ks, "--authorization-kubeconfig", ks,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(schedulerPort), "--profiling"}, tunings); err != nil {
		return err
	}
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // #nosec G402 -- self-signed healthz
	for _, c := range []struct {
		name string
		port int
	}{{"kube-controller-manager", kcmPort}, {"kube-scheduler", schedulerPort}} {
		if err := l.waitFor(ctx, c.name, 60*time.Second, httpOK(insecure, "https://127.0.0.1:"+strconv.Itoa(c.port)+"/healthz")); err != nil {
			return err
		}
	}
	l.step("controller-manager and scheduler healthy")
	return nil
}

// dropStaleLeases removes the leader-election leases a warm start finds in etcd: their holders were the
// previous run's controller manager and scheduler, stopped by down, and the new ones would otherwise wait
// out the 15 s lease before doing anything (the node's not-ready taint would stay as long).
func (l *lab) dropStaleLeases(ctx context.Context) error {
	c, err := l.client()
	if err != nil {
		return err
	}
	zero := int64(0)
	for _, name := range []string{"kube-controller-manager", "kube-scheduler"} {
		err := c.CoordinationV1().Leases(metav1.NamespaceSystem).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing the previous run's %s lease: %w", name, err)
		}
	}
	return nil
}

// containerd starts containerd on the lab's own socket and state and imports the lab images.
func (l *lab) containerd(ctx context.Context) error {
	for _, d := range []string{"containerd", "cni/net.d", "cni/ipam", "pod-logs", "kubelet"} {
		if err := os.MkdirAll(l.p.join(d), 0o700); err != nil {
			return err
		}
	}
	if err := os.WriteFile(l.p.join("containerd", "config.toml"), []byte(containerdConfig(l.p)), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(l.p.join("cni", "net.d", "10-tare-lab.conflist"), []byte(cniConfig(l.p)), 0o600); err != nil {
		return err
	}
	archives, err := ensureImages(ctx)
	if err != nil {
		return err
	}
	if _, err := l.launch("containerd", l.bin.containerd, []string{"--config", l.p.join("containerd", "config.toml")}, nil); err != nil {
		return err
	}
	sock := l.p.containerdSocket()
	if err := l.waitFor(ctx, "containerd", 30*time.Second, func(ctx context.Context) error {
		return exec.CommandContext(ctx, l.bin.ctr, "--address", sock, "version").Run()
	}); err != nil {
		return err
	}
	l.step("containerd ready")
	if err := importImages(ctx, l.bin.ctr, sock, archives); err != nil {
		return err
	}
	l.step("images imported")
	return nil
}

// node starts the kubelet (in the lab's cgroup root) and kube-proxy and waits for the node to be Ready.
func (l *lab) node(ctx context.Context, tunings []Tuning) error {
	cg, err := createCgroupRoot()
	l.st.Cgroups = cg
	if err != nil {
		return err
	}
	if err := os.WriteFile(l.p.join("kubelet.yaml"), []byte(kubeletConfig(l.p)), 0o600); err != nil {
		return err
	}
	adv := l.advertised()
	if _, err := l.launch("kubelet", l.bin.kubelet, []string{"--config", l.p.join("kubelet.yaml"),
		"--kubeconfig", l.p.kubeconfig("kubelet"), "--root-dir", l.p.join("kubelet"), "--cert-dir", l.p.join("kubelet", "pki"),
		"--hostname-override", l.st.Node, "--node-ip", adv}, tunings); err != nil {
		return err
	}
	if _, err := l.launch("kube-proxy", l.bin.proxy, []string{"--kubeconfig", l.p.kubeconfig("kube-proxy"),
		"--hostname-override", l.st.Node, "--proxy-mode", "iptables", "--cluster-cidr", clusterCIDR,
		// 0 leaves the machine's conntrack settings alone (the VM cannot change them, and down could not restore them).
		"--conntrack-max-per-core=0", "--conntrack-tcp-timeout-established=0", "--conntrack-tcp-timeout-close-wait=0",
		"--healthz-bind-address", "127.0.0.1:" + strconv.Itoa(proxyHealthz), "--metrics-bind-address", "127.0.0.1:" + strconv.Itoa(proxyMetrics),
		"--profiling"}, tunings); err != nil {
		return err
	}
	c, err := l.client()
	if err != nil {
		return err
	}
	if err := l.waitFor(ctx, "node "+l.st.Node, 120*time.Second, func(ctx context.Context) error { return nodeReady(ctx, c, l.st.Node, l.start) }); err != nil {
		return err
	}
	l.step("node Ready")
	return l.waitFor(ctx, "kube-proxy", 30*time.Second, httpOK(http.DefaultClient, "http://127.0.0.1:"+strconv.Itoa(proxyHealthz)+"/healthz"))
}

func httpOK(c *http.Client, url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", url, resp.Status)
		}
		return nil
	}
}

// portsFree checks that no port the lab listens on is taken, naming the process that holds it.
func portsFree(ports []labPort) error {
	var errs []error
	for _, p := range ports {
		l, err := net.Listen("tcp", ":"+strconv.Itoa(p.Port))
		if err != nil {
			errs = append(errs, fmt.Errorf("port %d (for %s) is in use%s", p.Port, p.Component, portOwner(p.Port)))
			continue
		}
		_ = l.Close()
	}
	if len(errs) > 0 {
		return fmt.Errorf("cannot start the lab: %w (stop what holds it, or tare lab down if it is an earlier lab)", errors.Join(errs...))
	}
	return nil
}

// nodeName is the kubelet's node name: the host name, lower case.
func nodeName() (string, error) {
	h, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("reading the host name: %w", err)
	}
	return strings.ToLower(h), nil
}

// advertised is the address the API server listens on and advertises.
func (l *lab) advertised() string {
	host, _, _ := net.SplitHostPort(strings.TrimPrefix(l.st.Server, "https://"))
	return host
}
