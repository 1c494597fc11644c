// Package machine holds every change a lab makes to the machine outside its own directory, each next to
// its undo and to the check that finds it left behind: internal/lab decides what a lab needs, and up
// records what it changed in the lab's state; down undoes it in order (lab's restoreMachine) and lists
// anything still there (lab's Leftovers). A change of the machine that a new component of the lab makes
// gets its do, its undo and its check here.
//
//   - cgroups.go: the kubelet's cgroup root in every hierarchy (CgroupRoots; MakeCgroupRoot; RemoveCgroups
//     after KillCgroupTree; CgroupRootLeftovers; CgroupPIDs and CgroupDirs, which pause and down also
//     read).
//   - mounts.go: the kubelet's and containerd's mounts under the lab directory and the pod network
//     namespaces in /run/netns (NetnsNames before up; Unmount).
//   - nodenet.go: the extra nodes' network (MakeNodesBridge, MakeNodeNetwork: the tare-nodes bridge,
//     each node's namespace, veth, address, routes and masquerade; RemoveNodeNetworks;
//     NodeNetworkLeftovers). ExtraNode describes a node's network.
//   - vtep.go: the VXLAN overlay's devices, routes and entries, in a node's namespace through a netlink
//     handle opened there (MakeVTEP, ReplaceRoute, DeleteVTEP; RemoveMachineVTEP; VTEPLeftovers). Which
//     VTEPs and routes an overlay wants is the lab's (overlay.go there).
//   - iptables.go: the KUBE- and CNI- chains the components add (RemoveRuleChains; RuleChains).
//   - sysctl.go: the kernel settings kubelet, kube-proxy and the bridge plugin change (ReadSysctls at up;
//     RestoreSysctls).
//   - residue.go: what the components leave outside the lab directory whatever they are told: machine
//     directories (AbsentDirs of Dirs at up; RemoveDirs), container log links, shim sockets, libcni's
//     cached results, the pod bridge (RemoveLink; HasLink).
//
// Everything here needs root, and is checked on the real machine by internal/lab's tests (a lab up and
// down, then no leftovers); the pure parts (iptables-save scripts, which mounts are the lab's) have unit
// tests on fixtures captured from a lab.
//
// Imports: kernel
package machine
