// Package classify names what a process is: a Kubernetes component recognised from its executable and
// command line (the components and their programs are internal/component's registry), a container of a pod
// recognised from its cgroup path (cgroup v1 and v2, cgroupfs and systemd drivers), a kernel thread, tare
// itself, or other. The sampler calls it once per new process. It imports only internal/component.
//
// Imports: component
package classify
