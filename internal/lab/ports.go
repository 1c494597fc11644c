package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/kernel"
)

// The ports where the lab's components serve (and /metrics and /debug/pprof are read) are their upstream
// defaults, as the component registry has them.
var (
	apiserverPort = metricsPort(component.APIServer)
	kcmPort       = metricsPort(component.ControllerManager)
	schedulerPort = metricsPort(component.Scheduler)
	kubeletPort   = metricsPort(component.Kubelet)
	proxyMetrics  = metricsPort(component.KubeProxy)
)

func metricsPort(name string) int {
	e, _ := component.Lookup(name)
	return e.Metrics.Port
}

// Addresses and ports of a lab. Ports are the upstream defaults, except etcd's: Debian's etcd-server
// package may already run a system etcd on 2379.
const (
	etcdClientPort  = 12379
	etcdPeerPort    = 12380
	kubeletHealthz  = 10248
	proxyHealthz    = 10256
	podCIDR         = "10.244.0.0/24"
	clusterCIDR     = "10.244.0.0/16"
	serviceCIDR     = "10.96.0.0/16"
	bridgeName      = "tare0"
	cgroupRootName  = "tare-lab"
	cniNetworkName  = "tare-lab"
	containerdNS    = "k8s.io"
	labManagedLabel = "tare.dev/lab"
)

// labPort is a port the lab listens on and the component that listens on it.
type labPort struct {
	Port      int
	Component string
	Use       string // what the port is for, when it is not the component's main port
}

// String names the port's holder as an error message does: "etcd (peer)".
func (p labPort) String() string {
	if p.Use == "" {
		return p.Component
	}
	return p.Component + " (" + p.Use + ")"
}

// allPorts are the ports the lab's components listen on, in the registry's order of their components.
var allPorts = []labPort{
	{etcdClientPort, component.Etcd, ""}, {etcdPeerPort, component.Etcd, "peer"},
	{apiserverPort, component.APIServer, ""},
	{kcmPort, component.ControllerManager, ""}, {schedulerPort, component.Scheduler, ""},
	{kubeletPort, component.Kubelet, ""}, {kubeletHealthz, component.Kubelet, "healthz"},
	{proxyMetrics, component.KubeProxy, "metrics"}, {proxyHealthz, component.KubeProxy, "healthz"},
}

// portSet is where one lab listens: every port above moved by the lab's port offset (UpOptions.PortOffset,
// kept in State.PortOffset), so that control-plane-only labs with different offsets run side by side.
type portSet struct{ offset int }

func (s portSet) etcdClient() int { return etcdClientPort + s.offset }
func (s portSet) etcdPeer() int   { return etcdPeerPort + s.offset }
func (s portSet) apiserver() int  { return apiserverPort + s.offset }
func (s portSet) kcm() int        { return kcmPort + s.offset }
func (s portSet) scheduler() int  { return schedulerPort + s.offset }

// maxPortOffset keeps the highest moved port (etcd's peer port) a valid port.
const maxPortOffset = 65535 - etcdPeerPort

// CheckPortOffset refuses an offset that moves a port out of range, or one on a lab with nodes.
func (o UpOptions) CheckPortOffset() error {
	switch {
	case o.PortOffset < 0 || o.PortOffset > maxPortOffset:
		return fmt.Errorf("port offset %d: want 0 to %d (every port the lab listens on moves by it)", o.PortOffset, maxPortOffset)
	case o.PortOffset != 0 && !o.ControlPlaneOnly:
		return fmt.Errorf("port offset %d: only a control-plane-only lab (--control-plane-only) can run beside another; a lab with nodes uses the machine's bridge, cgroups, iptables and containerd", o.PortOffset)
	}
	return nil
}

// of lists the ports the lab components named (UpOptions.components) listen on.
func (s portSet) of(components []string) []labPort {
	var out []labPort
	for _, p := range allPorts {
		if slices.Contains(components, p.Component) {
			p.Port += s.offset
			out = append(out, p)
		}
	}
	return out
}

// portsFree checks that no port the lab listens on is taken, naming the process that holds it.
func portsFree(ports []labPort) error {
	var errs []error
	for _, p := range ports {
		l, err := net.Listen("tcp", ":"+strconv.Itoa(p.Port))
		if err != nil {
			errs = append(errs, fmt.Errorf("port %d (for %s) is in use%s", p.Port, p, portOwner(p.Port)))
			continue
		}
		_ = l.Close()
	}
	if len(errs) > 0 {
		return fmt.Errorf("cannot start the lab: %w (stop what holds it, or tare lab down if it is an earlier lab)", errors.Join(errs...))
	}
	return nil
}

// WaitPortsFree waits until no process holds a port that a lab started with opts listens on, looking
// every two seconds, and returns the last refusal when ctx ends first. Up itself does not wait (it refuses
// at once); tests wait, since another test, or another package's tests, may run a lab meanwhile.
func WaitPortsFree(ctx context.Context, opts UpOptions) error {
	for {
		err := portsFree(portSet{opts.PortOffset}.of(opts.components()))
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("another lab still holds the ports: %w", err)
		case <-time.After(2 * time.Second):
		}
	}
}

// portOwner names the process listening on a TCP port, as " by PID N (comm)", or "" if it cannot tell.
func portOwner(port int) string {
	l, found, err := kernel.FindListener(procRoot, port)
	switch {
	case err != nil:
		return ""
	case found:
		return fmt.Sprintf(" by PID %d (%s)", l.PID, l.Comm)
	}
	return " (by a process tare cannot see; try: ss -ltnp)"
}
