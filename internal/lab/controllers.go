package lab

import (
	"context"
	"strconv"
	"time"

	"github.com/tare-dev/tare/internal/component"
)

// controllerManagerArgs are kube-controller-manager's flags: its own kubeconfig for the API and for
// delegated authentication and authorization, HTTPS on loopback, the lab CA to sign with and the
// service-account key, one service account per controller, and profiling.
func controllerManagerArgs(p paths, pki *PKI) []string {
	kc := p.kubeconfig("controller-manager")
	return []string{"--kubeconfig", kc,
		"--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(kcmPort),
		"--service-account-private-key-file", pki.Path("sa.key"), "--root-ca-file", pki.Path("ca.crt"),
		"--cluster-signing-cert-file", pki.Path("ca.crt"), "--cluster-signing-key-file", pki.Path("ca.key"),
		"--use-service-account-credentials=true", "--service-cluster-ip-range", serviceCIDR, "--profiling"}
}

// schedulerArgs are kube-scheduler's flags: its own kubeconfig for the API and for delegated
// authentication and authorization, HTTPS on loopback, and profiling.
func schedulerArgs(p paths) []string {
	ks := p.kubeconfig("scheduler")
	return []string{"--kubeconfig", ks,
		"--authentication-kubeconfig", ks, "--authorization-kubeconfig", ks,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(schedulerPort), "--profiling"}
}

// controllers starts kube-controller-manager and kube-scheduler together and waits until both are healthy.
func (l *lab) controllers(ctx context.Context, tunings []Tuning) error {
	if err := l.dropStaleLeases(ctx); err != nil {
		return err
	}
	names := []string{component.ControllerManager, component.Scheduler}
	for _, name := range names {
		if _, err := l.launch(name, l.args(name), tunings); err != nil {
			return err
		}
	}
	for _, name := range names {
		if err := l.waitFor(ctx, name, 60*time.Second, l.healthy(name)); err != nil {
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
	return l.dropLeases(ctx, component.Names(func(e component.Entry) bool { return e.Lease != "" }))
}
