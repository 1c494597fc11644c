package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/lab/machine"
	"github.com/tare-dev/tare/internal/output"
)

// UpOptions configure Up.
type UpOptions struct {
	Dir              string
	Profile          string   // upstream (default) or tuned
	Sets             []Tuning // --set COMPONENT.FLAG=VALUE, applied after the profile
	Audit            bool     // audit log at Metadata level, JSON, in DIR/audit/audit.log
	KwokNodes        int      // fake nodes served by kwok
	Nodes            int      // real nodes (0 means 1): the machine, then one network namespace each (ExtraNode); root
	ControlPlaneOnly bool     // no containerd, kubelet or kube-proxy (forced without root)
	// APIServerOnly starts etcd and kube-apiserver and nothing else: no controller manager, scheduler,
	// nodes, kwok or probe pod (it implies ControlPlaneOnly, and KwokNodes is ignored). Up returns once
	// /readyz is ok; with no controller manager, nobody makes a namespace's default service account.
	APIServerOnly bool
	// StopWithCaller has the kernel send every component SIGTERM when the process that called Up dies,
	// so that a test that panics or times out before its Down leaves no daemons behind. A lab for users
	// outlives tare and leaves it unset.
	StopWithCaller bool
	// PortOffset moves every port the lab listens on (etcd's, the API server's, the controller manager's
	// and the scheduler's) by this much, so that it runs beside another lab whose offset differs by a
	// multiple of 100 (then no two moved ports meet; Up refuses a port in use in any case). Only a
	// control-plane-only lab: a lab with nodes has the machine's bridge, cgroups, iptables and containerd,
	// which a second one would share.
	PortOffset int
	BinDir     string // Kubernetes binaries to use instead of tare's cache
	Progress   func(Step)
}

// components lists, in the registry's order, the lab components an up with these options runs: etcd and
// kube-apiserver with APIServerOnly; else the control plane, the node's components unless ControlPlaneOnly,
// and kwok when it serves nodes. Up settles the options first (ControlPlaneOnly without root, KwokNodes).
func (o UpOptions) components() []string {
	return component.Names(func(e component.Entry) bool {
		switch {
		case !e.InLab():
			return false
		case o.APIServerOnly:
			return e.Name == component.Etcd || e.Name == component.APIServer
		case e.Lab.Node:
			return !o.ControlPlaneOnly
		case e.Role == component.RoleSimulator:
			return o.KwokNodes > 0
		}
		return true
	})
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
// node is Ready, a probe pod ran and kube-proxy is healthy (with APIServerOnly, once /readyz is ok), with
// the time of each step.
// On failure everything started is stopped, and the error names the component and ends with its last
// log lines.
func Up(ctx context.Context, opts UpOptions) (_ *State, err error) {
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	opts.Dir = dir
	if os.Geteuid() != 0 || opts.APIServerOnly {
		opts.ControlPlaneOnly = true
	}
	switch {
	case opts.APIServerOnly:
		opts.KwokNodes = 0 // no scheduler, no probe pod
	case opts.ControlPlaneOnly && opts.KwokNodes == 0:
		opts.KwokNodes = 1 // something for the scheduler to place the probe pod on
	}
	if err := opts.CheckPortOffset(); err != nil {
		return nil, err
	}
	tunings, err := ProfileTunings(opts.Profile)
	if err != nil {
		return nil, err
	}
	tunings = append(tunings, opts.Sets...)
	if opts.Profile == "" {
		opts.Profile = ProfileUpstream
	}
	if old, err := loadState(dir); err == nil {
		if running := old.Running(); len(running) > 0 {
			paused := ""
			if old.Paused != nil {
				paused = ", paused: tare lab unpause resumes it"
			}
			return nil, fmt.Errorf("%w in %s (since %s, %d processes, kubeconfig %s%s): use it, or stop it with tare lab down",
				ErrAlreadyRunning, dir, old.Started.Format(time.RFC3339), len(running), old.Kubeconfig, paused)
		}
	}
	if err := portsFree(portSet{opts.PortOffset}.of(opts.components())); err != nil {
		return nil, err
	}
	bin, err := findBinaries(opts.BinDir, opts.components())
	if err != nil {
		return nil, err
	}
	if bin.nsenter, err = opts.checkNodes(); err != nil {
		return nil, err
	}
	l := &lab{opts: opts, p: paths{dir}, bin: bin, start: time.Now()}
	l.last = l.start
	l.st = &State{Version: stateVersion, Dir: dir, Profile: opts.Profile, ControlOnly: opts.ControlPlaneOnly,
		APIServerOnly: opts.APIServerOnly, KwokNodes: opts.KwokNodes, PortOffset: opts.PortOffset, Started: l.start, Tunings: tunings,
		NetnsBefore: machine.NetnsNames()}
	if opts.StopWithCaller {
		l.st.Caller = os.Getpid()
	}
	if !opts.ControlPlaneOnly {
		l.st.Sysctls = machine.ReadSysctls()
		l.st.MadeDirs = machine.AbsentDirs(machine.Dirs)
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
	waitCRI := func() error {
		if cri == nil {
			return nil
		}
		err := <-cri
		cri = nil
		return err
	}
	// A step that fails before the node's waits for the runtimes too: Up's clean-up must find containerd
	// started (and the state's last save done) before it stops the lab and the caller removes its directory.
	defer func() { _ = waitCRI() }()
	if !l.opts.ControlPlaneOnly {
		if err := l.nodeNetworks(); err != nil {
			return err
		}
		cri = make(chan error, 1)
		go func() { cri <- l.runtimes(ctx) }()
	}
	// Each component starts as soon as what it needs answers, not once everything started before it is
	// healthy: the API server with etcd (it waits for its storage itself); the kubelet once the API server
	// serves (the node authorizer's rules for nodes are built in, so it registers its node while the API
	// server's post-start hooks still run, and its wait for its node informer, in steps of a second, is
	// over before the first pod is bound); the controller manager, the scheduler and kube-proxy once
	// /readyz is ok (kube-proxy reads its node as system:kube-proxy, which only RBAC allows, and RBAC's
	// roles are a post-start hook's: started earlier, it is refused and backs off for seconds).
	if err := l.startEtcd(tunings); err != nil {
		return err
	}
	if err := l.startAPIServer(tunings); err != nil {
		return err
	}
	if err := l.waitEtcd(ctx); err != nil {
		return err
	}
	if l.opts.APIServerOnly {
		return l.waitAPIServer(ctx)
	}
	// A lab of one node starts its kubelet once the API server serves; with extra nodes, whose runtimes
	// and images take longer, the controllers do not wait for those: the kubelet starts at /readyz.
	kubelet := func() error {
		if err := waitCRI(); err != nil {
			return err
		}
		return l.startKubelet(tunings)
	}
	kubeletEarly := !l.opts.ControlPlaneOnly && len(l.st.ExtraNodes) == 0
	if kubeletEarly {
		if err := l.waitFor(ctx, component.APIServer+" serving", 90*time.Second, l.serving()); err != nil {
			return err
		}
		if err := kubelet(); err != nil {
			return err
		}
	}
	if err := l.waitAPIServer(ctx); err != nil {
		return err
	}
	if err := l.startControllers(ctx, tunings); err != nil {
		return err
	}
	if !l.opts.ControlPlaneOnly {
		if !kubeletEarly {
			if err := kubelet(); err != nil {
				return err
			}
		}
		if err := l.startProxy(tunings); err != nil {
			return err
		}
	}
	if err := l.waitControllers(ctx); err != nil {
		return err
	}
	if !l.opts.ControlPlaneOnly {
		if err := l.waitNode(ctx); err != nil {
			return err
		}
		if err := l.startExtraNodes(ctx, tunings); err != nil {
			return err
		}
	}
	if l.opts.KwokNodes > 0 {
		if err := l.kwok(ctx, tunings); err != nil {
			return err
		}
	}
	if err := l.probe(ctx); err != nil {
		return err
	}
	if l.opts.ControlPlaneOnly {
		return nil
	}
	return l.waitProxy(ctx)
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

// launch starts a component's program with the tunings for it applied, and records it in the state at once.
func (l *lab) launch(name string, args []string, tunings []Tuning) (*daemon, error) {
	return l.launchOn(nil, name, args, tunings)
}

// launchOn is launch on an extra node (n not nil): the program runs in the node's network namespace,
// entered with nsenter (not `ip netns exec`, which mounts its own /sys and so hides the cgroup
// hierarchies from the kubelet), and logs to logs/NAME-NODE.log.
func (l *lab) launchOn(n *ExtraNode, name string, args []string, tunings []Tuning) (*daemon, error) {
	bin, args, log := l.bin.path(name), applyTunings(name, args, tunings), filepath.Join(l.p.dir, "logs", name+".log")
	if n != nil {
		args = append([]string{"--net=" + n.NetnsPath(), bin}, args...)
		bin, log = l.bin.nsenter, filepath.Join(l.p.dir, "logs", name+"-"+n.Name+".log")
	}
	d, err := startDaemon(l.p.dir, log, name, bin, args, nil, l.opts.StopWithCaller)
	if err != nil {
		return nil, err
	}
	if n != nil {
		d.Node = n.Name
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.daemons = append(l.daemons, d)
	l.st.Processes = append(l.st.Processes, d.Process)
	return d, l.st.save()
}

// waitPoll is how often waitFor checks: every check is a local request, and each poll's wait adds half of
// it on average to the lab's start.
const waitPoll = 50 * time.Millisecond

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
		case <-time.After(waitPoll):
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
	return fmt.Errorf("%s; last lines of %s:\n%s", msg, d.Log, output.LastLines(run, 15))
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
	l.st.Server = "https://" + net.JoinHostPort(adv, strconv.Itoa(l.st.ports().apiserver()))
	l.st.Kubeconfig = l.p.kubeconfig("admin")
	if p, err := LoadPKI(dir); err == nil {
		if _, err := os.Stat(l.p.kubeconfig("kube-proxy")); err == nil {
			l.pki = p
			return l.kubeconfigs()
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
	return l.kubeconfigs()
}

// kubeconfigs writes every component's kubeconfig for the lab's API server, on a warm start too (the
// server's address or port may have changed since).
func (l *lab) kubeconfigs() error {
	for who, cert := range map[string]string{"admin": "admin", "controller-manager": "controller-manager",
		"scheduler": "scheduler", "kube-proxy": "kube-proxy", "kubelet": "kubelet-client"} {
		if err := l.pki.Kubeconfig(l.p.kubeconfig(who), cert, l.st.Server); err != nil {
			return err
		}
	}
	return nil
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

// nodeName is the kubelet's node name: the host name, lower case.
func nodeName() (string, error) {
	h, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("reading the host name: %w", err)
	}
	return strings.ToLower(h), nil
}
