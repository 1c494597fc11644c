package lab

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tare-dev/tare/internal/component"
)

// controllerManagerArgs are kube-controller-manager's flags: its own kubeconfig for the API and for
// delegated authentication and authorization, HTTPS on loopback, the lab CA to sign with and the
// service-account key, one service account per controller, and profiling.
func controllerManagerArgs(p paths, pki *PKI, ports portSet) []string {
	kc := p.kubeconfig("controller-manager")
	return []string{"--kubeconfig", kc,
		"--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(ports.kcm()),
		"--service-account-private-key-file", pki.Path("sa.key"), "--root-ca-file", pki.Path("ca.crt"),
		"--cluster-signing-cert-file", pki.Path("ca.crt"), "--cluster-signing-key-file", pki.Path("ca.key"),
		"--use-service-account-credentials=true", "--service-cluster-ip-range", serviceCIDR, "--profiling"}
}

// schedulerArgs are kube-scheduler's flags: its own kubeconfig for the API and for delegated
// authentication and authorization, HTTPS on loopback, and profiling.
func schedulerArgs(p paths, ports portSet) []string {
	ks := p.kubeconfig("scheduler")
	return []string{"--kubeconfig", ks,
		"--authentication-kubeconfig", ks, "--authorization-kubeconfig", ks,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(ports.scheduler()), "--profiling"}
}

// startControllers starts kube-controller-manager and kube-scheduler together, and creates the controller
// manager's service accounts while it starts.
func (l *lab) startControllers(ctx context.Context, tunings []Tuning) error {
	if err := l.dropStaleLeases(ctx); err != nil {
		return err
	}
	for _, name := range controllerNames {
		if _, err := l.launch(name, l.args(name), tunings); err != nil {
			return err
		}
	}
	return l.controllerAccounts(ctx)
}

// waitControllers waits until kube-controller-manager and kube-scheduler are healthy.
func (l *lab) waitControllers(ctx context.Context) error {
	for _, name := range controllerNames {
		if err := l.waitFor(ctx, name, 60*time.Second, l.healthy(name)); err != nil {
			return err
		}
	}
	l.step("controller-manager and scheduler healthy")
	return nil
}

// controllerNames are the lab's components that hold a leader-election lease (the registry's Lease): the
// controller manager and the scheduler, in the registry's order. They start together, are waited on
// together, have their stale leases dropped, and are thawed last after a pause.
var controllerNames = component.Names(func(e component.Entry) bool { return e.InLab() && e.Lease != "" })

// controllerAccounts creates the service accounts the controller manager's controllers run as
// (--use-service-account-credentials): the kube-system subjects of the API server's bootstrap
// system:controller:* cluster role bindings, all at once. The controller manager starts its controllers one
// after the other and, for each, looks its account up, then checks the namespace and creates the account
// when missing: on a cold start three requests under its client-side limit of 20 a second, about 4 s for
// its 30-odd controllers, before it starts its informers and so before its node lifecycle controller can lift
// a new node's not-ready taint. Finding the account there, it makes one request. It creates them
// itself all the same (racing creations are fine: it re-reads an account that already exists), so this
// changes when the accounts appear, not which. The cloud provider's controllers, which a lab does not run,
// get none.
func (l *lab) controllerAccounts(ctx context.Context) error {
	c, err := l.client()
	if err != nil {
		return err
	}
	crbs, err := c.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the controllers' cluster role bindings: %w", err)
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, b := range crbs.Items {
		if !strings.HasPrefix(b.Name, controllerRolePrefix) {
			continue
		}
		for _, s := range b.Subjects {
			if s.Kind != rbacv1.ServiceAccountKind || s.Namespace != metav1.NamespaceSystem || slices.Contains(cloudControllerAccounts, s.Name) {
				continue
			}
			g.Go(func() error {
				sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace}}
				_, err := c.CoreV1().ServiceAccounts(s.Namespace).Create(gctx, sa, metav1.CreateOptions{})
				if err != nil && !apierrors.IsAlreadyExists(err) {
					return fmt.Errorf("creating the controller service account %s: %w", s.Name, err)
				}
				return nil
			})
		}
	}
	return g.Wait()
}

// controllerRolePrefix names the API server's bootstrap cluster role bindings of the controller manager's
// controllers, each to the service account the controller runs as.
const controllerRolePrefix = "system:controller:"

// cloudControllerAccounts are the accounts of controllers that run only with a cloud provider.
var cloudControllerAccounts = []string{"route-controller", "service-controller"}

// dropStaleLeases removes the leader-election leases a warm start finds in etcd: their holders were the
// previous run's controller manager and scheduler, stopped by down, and the new ones would otherwise wait
// out the 15 s lease before doing anything (the node's not-ready taint would stay as long).
func (l *lab) dropStaleLeases(ctx context.Context) error {
	return l.dropLeases(ctx, controllerNames)
}
