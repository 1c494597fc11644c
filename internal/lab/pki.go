package lab

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// PKI is the lab's certificate authority and every certificate its components use, laid out as kubeadm
// does (ca.crt, apiserver.crt, sa.key, admin and component client certificates).
type PKI struct {
	Dir    string
	ca     *x509.Certificate
	caKey  crypto.Signer
	serial int64
}

// Identity is a client certificate subject: CN is the user, Orgs are the groups.
type Identity struct {
	CN   string
	Orgs []string
}

// Client identities of the control plane, as RBAC's default bindings expect them.
var (
	AdminIdentity             = Identity{CN: "kubernetes-admin", Orgs: []string{"system:masters"}}
	ControllerManagerIdentity = Identity{CN: "system:kube-controller-manager"}
	SchedulerIdentity         = Identity{CN: "system:kube-scheduler"}
	KubeProxyIdentity         = Identity{CN: "system:kube-proxy"}
	APIServerKubeletIdentity  = Identity{CN: "kube-apiserver-kubelet-client", Orgs: []string{"system:masters"}}
)

// KubeletIdentity is the node's client identity (the Node authorizer keys on it).
func KubeletIdentity(node string) Identity {
	return Identity{CN: "system:node:" + node, Orgs: []string{"system:nodes"}}
}

// NewPKI creates a CA and the service-account key pair in dir.
func NewPKI(dir string) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "tare-lab-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("creating the lab CA: %w", err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	p := &PKI{Dir: dir, ca: ca, caKey: key, serial: 1}
	if err := p.write("ca", der, key); err != nil {
		return nil, err
	}
	sa, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(sa.Public())
	if err != nil {
		return nil, err
	}
	if err := writePEM(filepath.Join(dir, "sa.pub"), "PUBLIC KEY", pub); err != nil {
		return nil, err
	}
	return p, writeKey(filepath.Join(dir, "sa.key"), sa)
}

// Path returns the path of a file of the PKI (e.g. Path("ca.crt")).
func (p *PKI) Path(name string) string { return filepath.Join(p.Dir, name) }

// Serving issues a server certificate (name.crt, name.key) for the given DNS names and IPs.
func (p *PKI) Serving(name string, dns []string, ips []net.IP) error {
	return p.issue(name, pkix.Name{CommonName: name}, x509.ExtKeyUsageServerAuth, dns, ips)
}

// Client issues a client certificate (name.crt, name.key) for an identity.
func (p *PKI) Client(name string, id Identity) error {
	return p.issue(name, pkix.Name{CommonName: id.CN, Organization: id.Orgs}, x509.ExtKeyUsageClientAuth, nil, nil)
}

func (p *PKI) issue(name string, subject pkix.Name, usage x509.ExtKeyUsage, dns []string, ips []net.IP) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	p.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     dns,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, key.Public(), p.caKey)
	if err != nil {
		return fmt.Errorf("issuing the %s certificate: %w", name, err)
	}
	return p.write(name, der, key)
}

func (p *PKI) write(name string, der []byte, key *ecdsa.PrivateKey) error {
	if err := writePEM(p.Path(name+".crt"), "CERTIFICATE", der); err != nil {
		return err
	}
	return writeKey(p.Path(name+".key"), key)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der)
}

func writePEM(path, typ string, der []byte) error {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// Kubeconfig writes a kubeconfig for the client certificate name that trusts the lab CA.
func (p *PKI) Kubeconfig(path, name, server string) error {
	read := func(f string) (string, error) {
		b, err := os.ReadFile(p.Path(f))
		return base64.StdEncoding.EncodeToString(b), err
	}
	ca, err1 := read("ca.crt")
	crt, err2 := read(name + ".crt")
	key, err3 := read(name + ".key")
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			return fmt.Errorf("kubeconfig for %s: %w", name, err)
		}
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: lab
  context: {cluster: lab, user: %s}
current-context: lab
`, server, ca, name, crt, key, name)
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// HTTPClient returns a client that trusts the lab CA and presents the client certificate name.
func (p *PKI) HTTPClient(name string) (*http.Client, error) {
	cert, err := tls.LoadX509KeyPair(p.Path(name+".crt"), p.Path(name+".key"))
	if err != nil {
		return nil, fmt.Errorf("loading the %s certificate: %w", name, err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(p.ca)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
	}}}, nil
}

// LoadPKI opens the CA a previous NewPKI left in dir (a warm start keeps every certificate).
func LoadPKI(dir string) (*PKI, error) {
	crtPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, "ca.key"))
	if err != nil {
		return nil, err
	}
	cb, _ := pem.Decode(crtPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, fmt.Errorf("%s: the lab CA is not PEM", dir)
	}
	ca, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return &PKI{Dir: dir, ca: ca, caKey: key, serial: time.Now().UnixNano()}, nil
}
