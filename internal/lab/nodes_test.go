package lab

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/lab/images"
	"github.com/tare-dev/tare/internal/lab/machine"
	"github.com/tare-dev/tare/internal/testenv"
)

// TestUpThreeNodes starts a real three-node lab (the machine plus two network namespaces), checks that
// every node is Ready within a minute, that a pod on node 3 reaches a pod on node 1 by its IP, that a
// ClusterIP Service whose endpoint is on node 2 answers from a pod on node 3 and from node 1, that the pod
// traffic between nodes switches to VXLAN and back (checkOverlay), and that Down, with the overlay on,
// leaves nothing: no process, namespace, link, route, mount, cgroup or iptables chain.
func TestUpThreeNodes(t *testing.T) {
	ctx, st := upLab(t, UpOptions{Nodes: 3}, 5*time.Minute)
	dir := st.Dir
	for _, s := range st.Steps {
		t.Logf("%8s %s", s.At.Round(time.Millisecond), s.Name)
	}
	i := slices.IndexFunc(st.Steps, func(s Step) bool { return s.Name == "3 nodes Ready" })
	if i < 0 || st.Steps[i].At > time.Minute {
		t.Errorf("steps %v: want 3 nodes Ready within a minute", st.Steps)
	}
	c, err := Client(st.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{st.Node, "tare-node-2", "tare-node-3"}
	for _, n := range names {
		if err := nodeReady(ctx, c, n, st.Started); err != nil {
			t.Fatal(err)
		}
	}

	var pods []*corev1.Pod
	for i, node := range names {
		pods = append(pods, runWeb(ctx, t, c, fmt.Sprintf("web-%d", i+1), node))
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web-2"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web-2"},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	svc, err = c.CoreV1().Services(metav1.NamespaceDefault).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svcURL := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "80") + "/"
	fromPod3 := podNetnsClient(t, podPID(t, st, pods[2]))
	get(ctx, t, "pod on node 3 → pod on node 1 by IP", fromPod3, "http://"+net.JoinHostPort(pods[0].Status.PodIP, "8080")+"/", "web-1")
	get(ctx, t, "pod on node 3 → Service (node 2)", fromPod3, svcURL, "web-2")
	get(ctx, t, "node 1 → Service (node 2)", &http.Client{Timeout: 2 * time.Second}, svcURL, "web-2")
	sourceKept(ctx, t, fromPod3, pods[2].Status.PodIP)
	checkOverlay(ctx, t, st, pods[0], pods[1]) // leaves the overlay on: down must remove it too
	// The API server reaches an extra node's kubelet (logs, exec) by its address, with its own certificate.
	if _, err := c.CoreV1().Pods(metav1.NamespaceDefault).GetLogs(pods[2].Name, &corev1.PodLogOptions{}).DoRaw(ctx); err != nil {
		t.Errorf("logs of a pod on tare-node-3: %v", err)
	}

	r, err := Down(ctx, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range st.Processes {
		if alive(p) {
			t.Errorf("%s (pid %d, node %q) still runs after down", p.Name, p.PID, p.Node)
		}
	}
	if left := Leftovers(dir, true); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	// Ground truth from ip(8), not the netlink reader Leftovers uses: no route into the lab's networks at all.
	routes, err := exec.Command("ip", "-4", "route", "show", "table", "all").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(routes), "\n") {
		if strings.Contains(l, "10.244.") || strings.Contains(l, "10.250.") {
			t.Errorf("route left behind: %s", l)
		}
	}
	for _, n := range machine.NetnsNames() {
		if !slices.Contains(st.NetnsBefore, n) {
			t.Errorf("network namespace %s left behind", n)
		}
	}
	if r.Kept {
		t.Errorf("down kept %s", dir)
	}
}

// runWeb runs the lab's web image on a node (nodeName, bypassing the scheduler) and waits until it is
// Running with an IP.
func runWeb(ctx context.Context, t *testing.T, c kubernetes.Interface, name, node string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: new(int64), AutomountServiceAccountToken: new(bool),
			Containers: []corev1.Container{{Name: "web", Image: images.Web.Name, ImagePullPolicy: corev1.PullNever}}},
	}
	pods := c.CoreV1().Pods(metav1.NamespaceDefault)
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s on %s not Running after 60s: %v %v", name, node, err, p.Status)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// podPID finds a process of a pod through its cgroup (kubepods/…/podUID under the lab's cgroups).
func podPID(t *testing.T, st *State, pod *corev1.Pod) int {
	t.Helper()
	for _, root := range st.Cgroups {
		for _, d := range machine.CgroupDirs([]string{root}) {
			if filepath.Base(filepath.Dir(d)) != "pod"+string(pod.UID) {
				continue
			}
			if pids := machine.CgroupPIDs(d); len(pids) > 0 {
				return pids[0]
			}
		}
	}
	t.Fatalf("no process of pod %s in the lab's cgroups %v", pod.Name, st.Cgroups)
	return 0
}

// podNetnsClient is an HTTP client whose connections start in the network namespace of process pid.
func podNetnsClient(t *testing.T, pid int) *http.Client {
	t.Helper()
	dial := testenv.DialFrom("/proc/" + strconv.Itoa(pid) + "/ns/net")
	return &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true}}
}

// sourceKept checks that a pod's connection to another node's pod network arrives from the pod's own
// address (not masqueraded to its node's): a listener on node 1's pod gateway (tare0, 10.244.0.1) reads
// where a connection from the pod comes from.
func sourceKept(ctx context.Context, t *testing.T, fromPod *http.Client, podIP string) {
	t.Helper()
	ln, err := net.Listen("tcp", "10.244.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	from := make(chan string, 1)
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		select {
		case from <- host:
		default:
		}
		fmt.Fprintln(w, "seen ok")
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	get(ctx, t, "pod on node 3 → node 1's pod network", fromPod, "http://"+ln.Addr().String()+"/", "seen")
	select {
	case got := <-from:
		if got != podIP {
			t.Errorf("a connection from the pod on node 3 (%s) arrived on node 1 from %s: masqueraded", podIP, got)
		}
	default:
		t.Error("no connection from the pod on node 3 arrived")
	}
}

// get polls url until its body starts with want (kube-proxy programs a new Service within a second or two).
func get(ctx context.Context, t *testing.T, what string, c *http.Client, url, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.HasPrefix(string(b), want+" ") {
				return
			}
			last = fmt.Sprintf("%s: %q", resp.Status, b)
		} else {
			last = err.Error()
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Errorf("%s: GET %s: want an answer from %s, last: %s", what, url, want, last)
}

// TestExtraNodes checks the names, addresses and pod ranges of the extra nodes, and that their settings
// differ from node 1's only where a node must have its own.
func TestExtraNodes(t *testing.T) {
	t.Parallel()
	got := UpOptions{Nodes: 3}.extraNodes()
	want := []ExtraNode{
		{Name: "tare-node-2", Address: "10.250.0.3", PodCIDR: "10.244.1.0/24", Veth: "tare-n2"},
		{Name: "tare-node-3", Address: "10.250.0.4", PodCIDR: "10.244.2.0/24", Veth: "tare-n3"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("extra nodes of a 3-node lab (-want +got):\n%s", diff)
	}
	for _, o := range []UpOptions{{}, {Nodes: 1}} {
		if n := o.extraNodes(); len(n) != 0 {
			t.Errorf("%+v: extra nodes %v, want none", o, n)
		}
	}
	for _, o := range []UpOptions{{Nodes: 2, ControlPlaneOnly: true}, {Nodes: MaxNodes + 1}} {
		if _, err := o.checkNodes(); err == nil {
			t.Errorf("%+v: checkNodes accepted it", o)
		}
	}
	for _, n := range []string{machine.NodesBridge, "tare-n2", "tare-n200"} {
		if !machine.NodeLink(n) {
			t.Errorf("nodeLink(%q) = false", n)
		}
	}
	for _, n := range []string{bridgeName, "eth0", "cni0"} {
		if machine.NodeLink(n) {
			t.Errorf("nodeLink(%q) = true: down would delete it", n)
		}
	}
	p := paths{"/lab"}
	np := p.node("tare-node-2")
	cni := cniConfigFor(np, "10.244.1.0/24", false)
	if !strings.Contains(cni, `"subnet": "10.244.1.0/24"`) || !strings.Contains(cni, `"ipMasq": false`) || !strings.Contains(cni, "/lab/nodes/tare-node-2/cni/ipam") {
		t.Errorf("CNI configuration of tare-node-2:\n%s", cni)
	}
	kc := kubeletConfigFor(np, nodeCgroupRoot("tare-node-2"))
	for _, s := range []string{"cgroupRoot: /tare-lab/tare-node-2\n", "unix:///lab/nodes/tare-node-2/containerd/containerd.sock", `"/lab/nodes/tare-node-2/pki/kubelet.crt"`} {
		if !strings.Contains(kc, s) {
			t.Errorf("kubelet configuration of tare-node-2 lacks %q:\n%s", s, kc)
		}
	}
	if kubeletConfig(p) != kubeletConfigFor(p, cgroupRootName) || !strings.Contains(cniConfig(p), `"ipMasq": true`) {
		t.Error("node 1's configuration changed")
	}
}

// TestDownAfterCrashInNodeNetworks makes the extra nodes' networks as Up does (recorded in the state
// first) and then drops the lab as a crash would: Down, working from the state alone, must remove the
// namespaces, veths, bridge, routes and the lab's iptables chain, and put ip_forward back.
func TestDownAfterCrashInNodeNetworks(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	l := bareLab(ctx, t, 3)
	dir := l.opts.Dir
	forward := machine.ReadSysctls()["net/ipv4/ip_forward"]
	if err := l.nodeNetworks(); err != nil {
		t.Fatal(err)
	}
	made := machine.NodeNetworkLeftovers()
	if len(made) < 2+3+3 { // 2 namespaces; the bridge and 2 veths; 3 routes
		t.Errorf("after making the networks of 3 nodes the machine has %v", made)
	}
	if !slices.ContainsFunc(machine.RuleChains(), func(c string) bool { return strings.HasSuffix(c, " "+machine.MasqChain) }) {
		t.Errorf("no %s chain after making the networks", machine.MasqChain)
	}
	if _, err := Down(ctx, dir, false); err != nil {
		t.Fatal(err)
	}
	if left := Leftovers(dir, true); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if got := machine.ReadSysctls()["net/ipv4/ip_forward"]; got != forward {
		t.Errorf("ip_forward = %s after down, want %s as before", got, forward)
	}
	if got := machine.NetnsNames(); !slices.Equal(got, l.st.NetnsBefore) {
		t.Errorf("network namespaces after down: %v, want %v", got, l.st.NetnsBefore)
	}
}
