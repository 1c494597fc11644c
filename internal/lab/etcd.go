package lab

import (
	"context"
	"strconv"
	"time"

	"github.com/tare-dev/tare/internal/component"
)

// etcdURL is where the lab's etcd serves its clients: plain HTTP on loopback, on etcdClientPort (moved by
// the lab's offset) rather than 2379, which Debian's own etcd may hold.
func (s portSet) etcdURL() string { return "http://127.0.0.1:" + strconv.Itoa(s.etcdClient()) }

// etcdArgs are etcd's flags: a single member named tare-lab with its data in DIR/etcd, peers and clients
// on loopback, and pprof served on the client port.
func etcdArgs(p paths, ports portSet) []string {
	url := ports.etcdURL()
	peer := "http://127.0.0.1:" + strconv.Itoa(ports.etcdPeer())
	return []string{"--name", "tare-lab", "--data-dir", p.join("etcd"),
		"--listen-client-urls", url, "--advertise-client-urls", url,
		"--listen-peer-urls", peer,
		"--initial-advertise-peer-urls", peer,
		"--initial-cluster", "tare-lab=" + peer,
		"--enable-pprof"}
}

// startEtcd starts etcd; waitEtcd waits until it reports healthy.
func (l *lab) startEtcd(tunings []Tuning) error {
	_, err := l.launch(component.Etcd, l.args(component.Etcd), tunings)
	return err
}

func (l *lab) waitEtcd(ctx context.Context) error {
	err := l.waitFor(ctx, component.Etcd, 30*time.Second, l.healthy(component.Etcd))
	l.step("etcd healthy")
	return err
}
