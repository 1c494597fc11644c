package netpath

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/datapath"
)

// The run's pods: the client and the server on the first node, the remote server on a second node, and
// a hostNetwork pod on the first node; and the Service in front of the server.
const (
	clientPod  = "client"
	serverPod  = "server"
	remotePod  = "remote"
	hostNetPod = "hostnet"
	remoteHost = "remote-host" // a hostNetwork pod on the second node: the server of host-cross-node
	service    = "server"
)

// endpoint is where a lane's client runs and the server it talks to.
type endpoint struct {
	pod          string // the pod the client runs in; "" on the machine
	addr         string
	iperfPort    int
	sockperfPort int
	crrPort      int
}

// endpoints are what a run created: pods by name with their IPs, the Service's ClusterIP, the host servers.
type endpoints struct {
	ips     map[string]string
	svcIP   string
	servers []*exec.Cmd
	exited  []chan error // one per server: its Wait's result
}

// endpointOf says where the lane's client runs and whom it reaches.
func (e *endpoints) endpointOf(p Path) endpoint {
	switch p {
	case Host:
		return endpoint{addr: "127.0.0.1", iperfPort: hostIperfPort, sockperfPort: hostSockperfPort, crrPort: hostCRRPort}
	case HostCrossNode:
		return endpoint{addr: e.ips[remoteHost], iperfPort: hostNetIperfPort, sockperfPort: hostNetSockperfPort, crrPort: hostNetCRRPort}
	case HostNetPod:
		return endpoint{pod: hostNetPod, addr: "127.0.0.1", iperfPort: hostNetIperfPort, sockperfPort: hostNetSockperfPort, crrPort: hostNetCRRPort}
	case PodSameNode:
		return endpoint{pod: clientPod, addr: e.ips[serverPod], iperfPort: podIperfPort, sockperfPort: podSockperfPort, crrPort: podCRRPort}
	case ClusterIP:
		return endpoint{pod: clientPod, addr: e.svcIP, iperfPort: podIperfPort, sockperfPort: podSockperfPort, crrPort: podCRRPort}
	default: // PodCrossNode, VXLAN
		return endpoint{pod: clientPod, addr: e.ips[remotePod], iperfPort: podIperfPort, sockperfPort: podSockperfPort, crrPort: podCRRPort}
	}
}

// podsFor lists the pods the paths need, with their nodes.
func podsFor(paths map[Path]bool, node, remote string) map[string]string {
	out := map[string]string{}
	if paths[PodSameNode] || paths[PodCrossNode] || paths[VXLAN] || paths[ClusterIP] {
		out[clientPod] = node
	}
	if paths[PodSameNode] || paths[ClusterIP] {
		out[serverPod] = node
	}
	if paths[PodCrossNode] || paths[VXLAN] {
		out[remotePod] = remote
	}
	if paths[HostNetPod] {
		out[hostNetPod] = node
	}
	if paths[HostCrossNode] {
		out[remoteHost] = remote
	}
	return out
}

// toolsPod is a pod running both servers, each in its own container, ready once it listens, and with crr
// tare-crr's server (crr names it on the image's PATH; "" for none). The check is a startup probe: it
// stops once the server listens, so no probe connects while a trial runs.
func toolsPod(name, node, image string, pullNever bool, crr string) *corev1.Pod {
	pull := corev1.PullIfNotPresent
	if pullNever {
		pull = corev1.PullNever
	}
	iperfPort, sockPort := podIperfPort, podSockperfPort
	hostNet := name == hostNetPod || name == remoteHost
	if hostNet {
		iperfPort, sockPort = hostNetIperfPort, hostNetSockperfPort
	}
	iperf, sock := serverCommands(iperfPort, sockPort)
	probe := func(port int) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}},
			PeriodSeconds: 1, FailureThreshold: 60}
	}
	iperfProbe, sockProbe := probe(iperfPort), probe(sockPort)
	crrPort, crrBind := podCRRPort, ""
	var env []corev1.EnvVar
	switch {
	case name == hostNetPod:
		// On the node's network the servers listen on loopback only, out of the network's reach; the
		// kubelet's probe cannot reach them there, so Run waits for them itself.
		iperf, sock = append(iperf, "--bind", "127.0.0.1"), append(sock, "--ip", "127.0.0.1")
		iperfProbe, sockProbe = nil, nil
		crrPort, crrBind = hostNetCRRPort, "127.0.0.1"
	case hostNet:
		// The remote node's servers listen on its node address only (the kubelet expands $(HOST_IP)): the
		// node network reaches them, for the run's minutes, as it reaches the node's other services.
		env = []corev1.EnvVar{{Name: "HOST_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}}}
		iperf, sock = append(iperf, "--bind", "$(HOST_IP)"), append(sock, "--ip", "$(HOST_IP)")
		crrPort, crrBind = hostNetCRRPort, "$(HOST_IP)"
	}
	zero, no := int64(0), false
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{datapath.RoleLabel: name}},
		Spec: corev1.PodSpec{
			NodeName: node, HostNetwork: hostNet, TerminationGracePeriodSeconds: &zero, AutomountServiceAccountToken: &no,
			EnableServiceLinks: &no,
			Tolerations:        []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{
				{Name: "iperf3", Image: image, ImagePullPolicy: pull, Command: iperf, StartupProbe: iperfProbe, Env: env,
					Ports: []corev1.ContainerPort{{ContainerPort: int32(iperfPort)}, {ContainerPort: int32(iperfPort), Protocol: corev1.ProtocolUDP}}},
				{Name: "sockperf", Image: image, ImagePullPolicy: pull, Command: sock, StartupProbe: sockProbe, Env: env,
					Ports: []corev1.ContainerPort{{ContainerPort: int32(sockPort)}}},
			},
		},
	}
	if crr != "" {
		c := corev1.Container{Name: "crr", Image: image, ImagePullPolicy: pull, Command: crrServer(crr, crrPort, crrBind), Env: env,
			Ports: []corev1.ContainerPort{{ContainerPort: int32(crrPort)}}}
		if name != hostNetPod {
			c.StartupProbe = probe(crrPort)
		}
		pod.Spec.Containers = append(pod.Spec.Containers, c)
	}
	return pod
}

// serverService is the ClusterIP Service in front of the server pod: iperf3 over TCP and UDP, sockperf.
func serverService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: service},
		Spec: corev1.ServiceSpec{Selector: map[string]string{datapath.RoleLabel: serverPod}, Ports: []corev1.ServicePort{
			{Name: "iperf3", Port: podIperfPort, TargetPort: intstr.FromInt32(podIperfPort)},
			{Name: "iperf3-udp", Port: podIperfPort, TargetPort: intstr.FromInt32(podIperfPort), Protocol: corev1.ProtocolUDP},
			{Name: "sockperf", Port: podSockperfPort, TargetPort: intstr.FromInt32(podSockperfPort)},
			{Name: "crr", Port: podCRRPort, TargetPort: intstr.FromInt32(podCRRPort)},
		}},
	}
}

// createPods creates the pods (with tare-crr's server when crr names it) and, for the clusterip path, the
// Service, and waits until every pod is Ready (its servers listen) or the wait runs out.
func createPods(ctx context.Context, cs kubernetes.Interface, ns, image string, pullNever bool, crr string, pods map[string]string, svc bool, wait time.Duration) (*endpoints, error) {
	e := &endpoints{ips: map[string]string{}}
	for name, node := range pods {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, toolsPod(name, node, image, pullNever, crr), metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating pod %s/%s: %w", ns, name, err)
		}
	}
	if svc {
		s, err := cs.CoreV1().Services(ns).Create(ctx, serverService(), metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("creating service %s/%s: %w", ns, service, err)
		}
		e.svcIP = s.Spec.ClusterIP
	}
	ips, err := datapath.WaitPodsReady(ctx, cs, ns, slices.Collect(maps.Keys(pods)), wait)
	if err != nil {
		return nil, err
	}
	e.ips = ips
	return e, nil
}

// startHostServers starts the host path's servers on loopback, with tare-crr's when crr names its program,
// and waits until each listens. They die with tare (PDEATHSIG) if it is killed before it stops them.
func (e *endpoints) startHostServers(ctx context.Context, crr string) error {
	iperf, sock := serverCommands(hostIperfPort, hostSockperfPort)
	iperf = append(iperf, "--bind", "127.0.0.1")
	sock = append(sock, "--ip", "127.0.0.1")
	servers, ports := [][]string{iperf, sock}, []int{hostIperfPort, hostSockperfPort}
	if crr != "" {
		servers, ports = append(servers, crrServer(crr, hostCRRPort, "127.0.0.1")), append(ports, hostCRRPort)
	}
	for _, argv := range servers {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("starting %s on the machine: %w", argv[0], err)
		}
		ch := make(chan error, 1)
		go func() { ch <- cmd.Wait() }()
		e.servers, e.exited = append(e.servers, cmd), append(e.exited, ch)
	}
	for i, port := range ports {
		if err := waitListening(ctx, port, 5*time.Second); err != nil {
			return err
		}
		// Something listens: make sure it is ours, not a program that had the port (ours then exits).
		select {
		case err := <-e.exited[i]:
			e.exited[i] <- err
			return fmt.Errorf("%s exited (%w): port %d is in use by another program on this machine: stop it", e.servers[i].Args[0], err, port)
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// waitListening waits until something accepts TCP connections on loopback at port.
func waitListening(ctx context.Context, port int, wait time.Duration) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(wait)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on %s after %s: is another program on the port? (%w)", addr, wait, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stopHostServers kills the host servers and reaps them.
func (e *endpoints) stopHostServers() {
	for i, c := range e.servers {
		_ = c.Process.Kill()
		if err := <-e.exited[i]; err != nil {
			continue // killed: the error says so
		}
	}
	e.servers, e.exited = nil, nil
}
