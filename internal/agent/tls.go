package agent

import (
	"crypto/tls"
	"fmt"
	"os"

	"k8s.io/client-go/util/cert"
)

// tlsConfig is the agent's TLS: its serving certificate (the files of a, else one made now and signed by a
// CA made with it, as the kubelet does without --tls-cert-file), TLS 1.2 or later, and client certificates
// verified against a.ClientCAs when given (a certificate is optional: a bearer token does as well).
func tlsConfig(a *Access, node string) (*tls.Config, error) {
	var pair tls.Certificate
	var err error
	if a.CertFile != "" || a.KeyFile != "" {
		if a.CertFile == "" || a.KeyFile == "" {
			return nil, fmt.Errorf("a serving certificate needs both --tls-cert-file and --tls-private-key-file")
		}
		pair, err = tls.LoadX509KeyPair(a.CertFile, a.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("loading the serving certificate %s: %w", a.CertFile, err)
		}
	} else {
		host := node
		if host == "" {
			host, _ = os.Hostname()
		}
		certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey(host, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("making a self-signed serving certificate: %w", err)
		}
		if pair, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
			return nil, fmt.Errorf("reading the self-signed serving certificate: %w", err)
		}
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}
	if a.ClientCAs != nil {
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
		cfg.ClientCAs = a.ClientCAs
	}
	return cfg, nil
}
