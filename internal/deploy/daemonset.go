package deploy

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Where the agent's container sees the host's files, passed as --proc-root, --sys-root and --host-root.
const (
	HostProc = "/host/proc"
	HostSys  = "/host/sys"
	HostRoot = "/host/root" // only the host's /boot is mounted under it, for /boot/config-RELEASE
)

// capabilities are those the agent's container gets; it drops every other one, and is not privileged.
//   - NET_ADMIN: per-task accounting from taskstats and exit events from the proc connector (both netlink,
//     both refused without it).
//   - SYS_PTRACE: /proc/PID/io, smaps_rollup and fd of every process pass the kernel's ptrace access check.
//   - DAC_READ_SEARCH: /proc and cgroup directories owned by other users.
//   - BPF, PERFMON: the BPF task iterator that reads every task's CPU in one pass (kernels 5.8 and later;
//     older kernels want SYS_ADMIN for it, and the agent falls back to reading /proc without it).
func capabilities() []corev1.Capability {
	return []corev1.Capability{"NET_ADMIN", "SYS_PTRACE", "DAC_READ_SEARCH", "BPF", "PERFMON"}
}

// resources are those of the agent's container, from tare's own cost measured by `make bench-overhead` (the README,
// "Benchmarks" then, now docs/benchmarks.md; 2-core VM, 2026-11-23): `tare measure --interval 1s` took 4.8–7.9 millicores with ~300
// processes on the node and 26–47 with 3,000, at a peak RSS of 39–61 MiB.
//   - CPU request 20m: a typical node (a few hundred to a thousand processes) at the default 1 s interval.
//     It reserves, it does not cap.
//   - No CPU limit: CFS throttling would delay samples and skew the intervals the agent measures over; the
//     agent reports its own CPU (tare_self_cpu_seconds_total), so its cost stays visible.
//   - Memory request 64Mi: above the measured peak RSS.
//   - Memory limit 256Mi: four times the request. The agent's ring of samples is bounded and so are its
//     connections (a flood of callers holds at most a few MiB), so only a leak reaches it; then the kernel
//     stops the agent and the kubelet restarts it, rather than the node paying.
func resources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dMi", memoryLimitMiB))},
	}
}

// memoryLimitMiB is the container's memory limit, and goMemLimit the Go runtime's soft limit (GOMEMLIMIT)
// under it: three quarters, leaving a quarter for what the runtime's limit does not count or cannot
// collect at once (goroutine stacks above the heap's goal, the kernel's socket buffers and BPF maps, which
// the memory cgroup charges to the agent, and the page cache of the files it reads). With GOMEMLIMIT equal
// to the limit, the runtime would collect hardest only when the kernel was about to kill it.
const (
	memoryLimitMiB = 256
	goMemLimit     = memoryLimitMiB * 3 / 4
)

// daemonSet runs one agent on every node, control-plane nodes included.
//
// It uses the host's network namespace: the proc connector, which names short-lived processes by their
// full command line, exists only in the host's (initial) network namespace; in a pod's own namespace the
// kernel refuses the subscription (measured on this machine: `unshare -n tare measure` reports "proc
// connector: connection refused"). A consequence: the agent's port is the node's, reachable as NODE_IP:PORT,
// which Prometheus's kubernetes_sd (role pod) and tare cluster measure use as the pod IP.
func daemonSet(o Options) *appsv1.DaemonSet {
	l := labels()
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: o.Namespace, Labels: l},
		Spec: appsv1.DaemonSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{NameLabel: Name}},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels: l,
					Annotations: map[string]string{
						"prometheus.io/scrape": "true",
						"prometheus.io/port":   strconv.Itoa(o.Port),
						"prometheus.io/path":   "/metrics",
						"prometheus.io/scheme": "https",
					},
				},
				Spec: podSpec(o),
			},
		},
	}
}

// podSpec is the agent's pod: host PID and network, the host's /proc, /sys and /boot read-only.
func podSpec(o Options) corev1.PodSpec {
	return corev1.PodSpec{
		ServiceAccountName: Name,
		HostPID:            true,
		HostNetwork:        true,
		DNSPolicy:          corev1.DNSClusterFirstWithHostNet,
		PriorityClassName:  "system-node-critical", // measuring the node is no reason to evict the agent first
		NodeSelector:       map[string]string{"kubernetes.io/os": "linux"},
		// Every node, whatever its taints: control-plane, not-ready and cordoned nodes cost too.
		Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		TerminationGracePeriodSeconds: ptr(int64(10)),
		// The container runtime's default seccomp profile. On the lab (containerd 1.6.20, runc 1.1.5) the
		// agent loads its BPF programs under it with CAP_BPF and CAP_PERFMON (TestAgentsOnThreeNodeLab: the
		// exec tracepoints load on every node); a runtime whose profile refuses bpf or perf_event_open to
		// a process without CAP_SYS_ADMIN leaves the agent reading /proc, saying so in its limitations.
		SecurityContext: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Containers:      []corev1.Container{container(o)},
		Volumes: []corev1.Volume{
			hostPathVolume("proc", "/proc", corev1.HostPathDirectory),
			hostPathVolume("sys", "/sys", corev1.HostPathDirectory),
			// Only /boot of the host's root: the kernel's build configuration when /proc/config.gz is missing.
			hostPathVolume("boot", "/boot", corev1.HostPathDirectoryOrCreate),
		},
	}
}

// container is the agent itself, listening on every address of the node at o.Port (TLS; callers checked
// with the API server, /healthz aside) and on the node's 127.0.0.1 at o.HealthPort for the kubelet's
// probes (plain HTTP, /healthz only: a flood of callers on the main port cannot fail the probes).
func container(o Options) corev1.Container {
	probe := func(initialDelay, period, failures int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Host: "127.0.0.1", Path: "/healthz", Port: intstr.FromInt32(int32(o.HealthPort)), Scheme: corev1.URISchemeHTTP,
			}},
			InitialDelaySeconds: initialDelay, PeriodSeconds: period, TimeoutSeconds: 5, FailureThreshold: failures,
		}
	}
	return corev1.Container{
		Name:            "agent",
		Image:           o.Image,
		ImagePullPolicy: corev1.PullIfNotPresent, // the lab has no registry: its image is imported, never pulled
		Args: []string{
			"agent",
			fmt.Sprintf("--listen=0.0.0.0:%d", o.Port),
			fmt.Sprintf("--health-listen=127.0.0.1:%d", o.HealthPort),
			"--interval=" + o.Interval.String(),
			"--node=$(NODE_NAME)",
			"--proc-root=" + HostProc,
			"--sys-root=" + HostSys,
			"--host-root=" + HostRoot,
		},
		Env: []corev1.EnvVar{
			{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.nodeName"}}},
			// The Go runtime collects garbage harder as the heap nears this, well before the kernel would kill
			// the agent at the memory limit.
			{Name: "GOMEMLIMIT", Value: fmt.Sprintf("%dMiB", goMemLimit)},
		},
		Ports: []corev1.ContainerPort{{Name: PortName, ContainerPort: int32(o.Port), HostPort: int32(o.Port), Protocol: corev1.ProtocolTCP}},
		// The first sample takes one interval; readiness follows it closely, liveness gives a busy node time.
		ReadinessProbe: probe(1, 2, 3),
		LivenessProbe:  probe(30, 10, 3),
		Resources:      resources(),
		SecurityContext: &corev1.SecurityContext{
			RunAsUser:                ptr(int64(0)), // root of the host: other users' /proc entries
			ReadOnlyRootFilesystem:   ptr(true),
			AllowPrivilegeEscalation: ptr(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: capabilities()},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "proc", MountPath: HostProc, ReadOnly: true},
			{Name: "sys", MountPath: HostSys, ReadOnly: true},
			{Name: "boot", MountPath: HostRoot + "/boot", ReadOnly: true},
		},
	}
}

func hostPathVolume(name, path string, t corev1.HostPathType) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path, Type: &t}}}
}

func ptr[T any](v T) *T { return &v }
