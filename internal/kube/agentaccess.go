package kube

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
)

// Reviews returns the clients a server that delegates its callers' checks to the API server sends its
// reviews with (tare agent, as the kubelet): TokenReviews and SubjectAccessReviews, without a whole clientset.
func (c *Client) Reviews() (authnclient.TokenReviewInterface, authzclient.SubjectAccessReviewInterface, error) {
	authn, err := authnclient.NewForConfig(c.Config)
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig %s: %w", c.Source, err)
	}
	authz, err := authzclient.NewForConfig(c.Config)
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig %s: %w", c.Source, err)
	}
	return authn.TokenReviews(), authz.SubjectAccessReviews(), nil
}

// ClientCAConfigMap is where the API server publishes the CA its client certificates are signed by
// (key client-ca-file), readable with the Role extension-apiserver-authentication-reader in kube-system.
const (
	ClientCANamespace = "kube-system"
	ClientCAConfigMap = "extension-apiserver-authentication"
	ClientCARole      = "extension-apiserver-authentication-reader"
)

// ClientCAs returns the pool of CAs the cluster's client certificates are signed by: those of file when it
// is not empty, else those the API server publishes in kube-system/extension-apiserver-authentication.
func (c *Client) ClientCAs(ctx context.Context, file string) (*x509.CertPool, error) {
	var pem []byte
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading the client CA: %w", err)
		}
		pem = b
	} else {
		core, err := corev1client.NewForConfig(c.Config)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", c.Source, err)
		}
		cm, err := core.ConfigMaps(ClientCANamespace).Get(ctx, ClientCAConfigMap, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading the cluster's client CA (%s/%s): %w", ClientCANamespace, ClientCAConfigMap, err)
		}
		if pem = []byte(cm.Data["client-ca-file"]); len(pem) == 0 {
			return nil, fmt.Errorf("%s/%s has no client-ca-file: the API server takes no client certificates", ClientCANamespace, ClientCAConfigMap)
		}
		file = ClientCANamespace + "/" + ClientCAConfigMap
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("the client CA %s holds no PEM certificate", file)
	}
	return pool, nil
}

// AgentHTTPClient returns an HTTP client that presents the kubeconfig's credentials (client certificate,
// bearer token, exec plugin) to servers other than the API server that check them with it: tare agents.
// Their serving certificates are their own (self-made at start unless one is mounted), so the client
// verifies them against caFile when given and does not verify them otherwise.
func (c *Client) AgentHTTPClient(caFile string) (*http.Client, error) {
	cfg := rest.CopyConfig(c.Config)
	cfg.ServerName = ""
	cfg.CAData, cfg.CAFile = nil, caFile
	cfg.Insecure = caFile == ""
	if cfg.BearerToken == "" && cfg.BearerTokenFile == "" && cfg.ExecProvider == nil && cfg.AuthProvider == nil &&
		len(cfg.CertData) == 0 && cfg.CertFile == "" {
		return nil, errors.New("the kubeconfig's user has no credentials to present to the agents (no token, client certificate or exec plugin)")
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", c.Source, err)
	}
	return hc, nil
}
