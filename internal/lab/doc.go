// Package lab gets and runs a real, local Kubernetes cluster for tare's users and tests: upstream
// components (etcd from Debian's packages; kube-apiserver, kube-controller-manager, kube-scheduler, kubelet
// and kube-proxy built from the k8s.io/kubernetes module at a pinned version; containerd; kwok for fake
// nodes) run as plain processes with everything under one directory, and stopped without leaving anything
// on the machine. The lab verbs in internal/cli (tare lab install, up, status, down), tare datapath,
// internal/experiment and the tests of internal/cli and internal/kube call it. It imports client-go,
// internal/component, internal/kube, internal/lab/images (the images and programs it installs and imports
// into its nodes), internal/output (the last lines of a failed command), internal/pprof and internal/kernel (/proc/stat and a link's MTU), and no package of
// tare's above it.
//
// Where things are, by subsystem:
//
//   - Getting the programs: install.go (the cache, etcd, building the Kubernetes components),
//     components.go (Install: Debian packages, kwok, the lab's images built by internal/lab/images;
//     InstallDatapathTools: the datapath tools' packages and their image), binaries.go (finding the
//     programs at up), prometheus.go (upstream Prometheus), helm.go (helm, which installs the agent's chart)
//     and prometheusoperator.go (the Prometheus Operator and its CRDs, from its module). The images and
//     tare-crr are built by internal/lab/images, which talks to no lab; lab imports them into its nodes.
//   - Starting and stopping: up.go (Up and UpOptions: the start sequence, its supervision and why a start
//     failed), down.go (Down and Leftovers), reaper.go (the child process that stops the labs of a
//     tare, or a test binary, killed before it could: an experiment's labs, and tests' labs through
//     WatchWithProcess; tare lab up's labs outlive tare and have none), marked.go (processes found by a
//     mark in their environment, as an experiment's run commands are, and ended), process.go (one
//     daemon: start, follow, stop; stray lab processes), state.go (DIR/state.json, which down and status
//     read), handle.go (Lab, a lab opened once from its directory by Open, whose methods are the verbs on
//     a running lab), usercontext.go (Lab.AddUserContext: the lab's context in the user's kubeconfig, as
//     kubectl writes it, which tare lab up adds and Down takes out).
//   - One file per start stage, holding the settings of the components it starts (their flags, etcdArgs,
//     apiserverArgs, …, and configuration files) and the start itself: etcd.go, apiserver.go (also the
//     audit policy, the API server's certificates and address), controllers.go (kube-controller-manager
//     and kube-scheduler, and the accounts of the controller manager's controllers), containerd.go (also
//     the CNI configuration and importing the lab's images), node.go (kubelet and kube-proxy), kwok.go (kwok and its fake nodes),
//     nodes.go (the extra real nodes of UpOptions.Nodes: their containerd, kubelet and kube-proxy in a
//     network namespace each), probe.go (the pod that proves the lab works). Each stage starts its
//     components and waits for them apart, so that (*lab).run starts a component as soon as what it needs
//     answers. kube.go holds the lab's client and the node Ready and schedulable checks; ports.go the
//     ports, addresses and names; paths.go the lab directory's layout; pki.go the certificates.
//   - Tuning: profile.go (profiles and --set), checksets.go (--set checked against a component's --help).
//   - Changes to the machine live in internal/lab/machine, one file per subsystem, each undo next to its
//     do: the kubelet's cgroup root, mounts and pod network namespaces, the extra nodes' network, the
//     overlay's VXLAN devices, iptables chains, sysctls and the components' residue. Here, nodes.go makes
//     the nodes' network at up and overlay.go (SetOverlay and CurrentOverlay: pods between nodes routed or
//     over VXLAN, switched while the lab runs) plans the overlay the machine package makes; podmtu.go sets
//     the pod links' MTU; Down calls the undos in order (restoreMachine in down.go).
//   - A running lab: status.go, pprof.go (the components' pprof endpoints), toolsimport.go
//     (ImportToolsImage and ImportHostImages: the tools and exporters images into every node's containerd,
//     when tare datapath or an experiment asks), pause.go (Pause and Unpause: the control plane and node
//     agents frozen, their state in state.json) with
//     freezer.go (Freezer, the choice of the v1 or v2 freezer; the freezer and cpuacct hierarchies, and
//     moving processes between cgroups) and unpausewait.go (the staged thaw: leases renewed and the node
//     Ready before the controllers wake), retune.go (Retune: the components whose flags change restarted
//     alone, in order, while the rest of the lab runs) with startsettings.go (each component's flags and
//     health check, the one home Up and Retune both start from).
//
// Which components an up runs comes from the component registry (internal/component), filtered by the
// options (UpOptions.components): the programs it looks for (binaries.go), the ports it checks (ports.go),
// the pprof targets, what down stops first and recognises as strays. A new component of the lab is an entry
// in the registry, plus a start stage file with its flags, called from (*lab).run in up.go, and its ports
// in ports.go. A new change to the machine is recorded by Up (before), made and undone in
// internal/lab/machine, called from restoreMachine and checked by Leftovers.
//
// Imports: component, kernel, kube, lab/images, lab/machine, output, pprof, userfile
package lab
