package lab

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"slices"
	"testing"
)

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s: no PEM block", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPKI: every certificate chains to the lab CA with the usage, names and groups its component needs.
func TestPKI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p, err := controlPlanePKI(dir, net.ParseIP("192.0.2.10"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Client("kubelet", KubeletIdentity("node-a")); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(readCert(t, p.Path("ca.crt")))
	srv := readCert(t, p.Path("apiserver.crt"))
	for _, name := range []string{"kubernetes.default.svc", "localhost"} {
		if _, err := srv.Verify(x509.VerifyOptions{Roots: roots, DNSName: name}); err != nil {
			t.Errorf("apiserver certificate for %s: %v", name, err)
		}
	}
	for _, ip := range []string{"127.0.0.1", "192.0.2.10", "10.96.0.1"} {
		if !slices.ContainsFunc(srv.IPAddresses, func(a net.IP) bool { return a.Equal(net.ParseIP(ip)) }) {
			t.Errorf("apiserver certificate lacks IP %s", ip)
		}
	}
	clients := map[string]Identity{"admin": AdminIdentity, "apiserver-kubelet-client": APIServerKubeletIdentity, "kubelet": KubeletIdentity("node-a")}
	for name, id := range clients {
		c := readCert(t, p.Path(name+".crt"))
		if _, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if c.Subject.CommonName != id.CN || !slices.Equal(c.Subject.Organization, id.Orgs) {
			t.Errorf("%s subject %v, want %+v", name, c.Subject, id)
		}
	}
	for _, f := range []string{"sa.key", "sa.pub", "ca.key", "admin.key"} {
		fi, err := os.Stat(p.Path(f))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v mode %v, want 0600", f, err, fi.Mode())
		}
	}
	if _, err := p.HTTPClient("admin"); err != nil {
		t.Error(err)
	}
}
