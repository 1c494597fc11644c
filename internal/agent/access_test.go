package agent

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/util/cert"
)

// fakeTokens stands in for the API server's TokenReview (pure logic of the gate: the real API server is
// asked in internal/cli's three-node lab test). Tokens maps a token to its user; others are not valid.
type fakeTokens struct {
	authnclient.TokenReviewInterface
	users map[string]string
	calls atomic.Int32
	err   error
}

func (f *fakeTokens) Create(_ context.Context, tr *authenticationv1.TokenReview, _ metav1.CreateOptions) (*authenticationv1.TokenReview, error) {
	f.calls.Add(1)
	if f.err != nil {
		return nil, f.err
	}
	out := tr.DeepCopy()
	if u, ok := f.users[tr.Spec.Token]; ok {
		out.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: u, Groups: []string{"g"}}}
	}
	return out, nil
}

// fakeRights allows the paths listed for each user.
type fakeRights struct {
	authzclient.SubjectAccessReviewInterface
	allow map[string]string // user → path
	calls atomic.Int32
	last  atomic.Pointer[authorizationv1.SubjectAccessReviewSpec]
}

func (f *fakeRights) Create(_ context.Context, sar *authorizationv1.SubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	f.calls.Add(1)
	spec := sar.Spec
	f.last.Store(&spec)
	out := sar.DeepCopy()
	out.Status.Allowed = sar.Spec.NonResourceAttributes != nil && sar.Spec.NonResourceAttributes.Verb == "get" &&
		f.allow[sar.Spec.User] == sar.Spec.NonResourceAttributes.Path
	return out, nil
}

func gateServer(t *testing.T, tokens *fakeTokens, rights *fakeRights, cas *x509.CertPool) *httptest.Server {
	t.Helper()
	g := newGate(&Access{Tokens: tokens, Rights: rights, ClientCAs: cas}, io.Discard)
	srv := httptest.NewUnstartedServer(g.wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "secret data")
	})))
	if cas != nil {
		srv.TLS = &tls.Config{ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: cas, MinVersion: tls.VersionTLS12}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func getAs(t *testing.T, c *http.Client, url, token string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// TestGateCodes: each kind of caller gets its status and, when refused, a reason and no data.
func TestGateCodes(t *testing.T) {
	t.Parallel()
	tokens := &fakeTokens{users: map[string]string{"tok-prom": "prometheus", "tok-nobody": "nobody"}}
	rights := &fakeRights{allow: map[string]string{"prometheus": "/metrics"}}
	srv := gateServer(t, tokens, rights, nil)
	c := srv.Client()
	for _, tt := range []struct {
		token, path string
		want        int
		says        string
	}{
		{"", "/metrics", 401, "no credentials"},
		{"bogus", "/metrics", 401, "not valid"},
		{"tok-nobody", "/metrics", 403, "nobody may not get /metrics"},
		{"tok-prom", "/summary", 403, "prometheus may not get /summary"},
		{"tok-prom", "/metrics", 200, "secret data"},
	} {
		code, body, h := getAs(t, c, srv.URL+tt.path, tt.token)
		if code != tt.want || !strings.Contains(body, tt.says) {
			t.Errorf("token %q GET %s: %d %q, want %d saying %q", tt.token, tt.path, code, body, tt.want, tt.says)
		}
		if code != 200 && strings.Contains(body, "secret data") {
			t.Errorf("token %q GET %s: refused but served the data", tt.token, tt.path)
		}
		if code == 401 && h.Get("WWW-Authenticate") == "" {
			t.Errorf("401 without WWW-Authenticate")
		}
	}
	if s := rights.last.Load(); s == nil || s.User != "prometheus" || len(s.Groups) != 1 || s.NonResourceAttributes.Path != "/metrics" {
		t.Errorf("the last SubjectAccessReview %+v: want the reviewed user, groups and path", s)
	}
}

// TestGateCaches: a token and a right are reviewed once within their TTL, a bad token too, whatever the
// number of requests.
func TestGateCaches(t *testing.T) {
	t.Parallel()
	tokens := &fakeTokens{users: map[string]string{"tok": "prometheus"}}
	rights := &fakeRights{allow: map[string]string{"prometheus": "/metrics"}}
	srv := gateServer(t, tokens, rights, nil)
	for range 20 {
		if code, _, _ := getAs(t, srv.Client(), srv.URL+"/metrics", "tok"); code != 200 {
			t.Fatalf("GET /metrics: %d", code)
		}
		if code, _, _ := getAs(t, srv.Client(), srv.URL+"/metrics", "bad"); code != 401 {
			t.Fatalf("GET /metrics with a bad token: %d", code)
		}
	}
	if n, m := tokens.calls.Load(), rights.calls.Load(); n != 2 || m != 1 {
		t.Errorf("%d token reviews and %d access reviews for 40 requests: want 2 and 1", n, m)
	}
}

// TestGateBounded: random tokens (each new to the cache) cost the API server at most the burst of reviews
// at once; beyond it callers get 429 with Retry-After. A failing API server is a 503 without its details.
func TestGateBounded(t *testing.T) {
	t.Parallel()
	tokens := &fakeTokens{users: map[string]string{}}
	srv := gateServer(t, tokens, &fakeRights{}, nil)
	limited := 0
	for i := range 3 * reviewsBurst {
		code, _, h := getAs(t, srv.Client(), srv.URL+"/metrics", "random-"+string(rune('a'+i%26))+strings.Repeat("x", i))
		if code == http.StatusTooManyRequests {
			limited++
			if h.Get("Retry-After") == "" {
				t.Error("429 without Retry-After")
			}
		}
	}
	// The bucket refills at reviewsPerSec while the loop runs: a fast loop sends about the burst.
	if n := int(tokens.calls.Load()); n > reviewsBurst+reviewsPerSec*5 || limited == 0 {
		t.Errorf("%d reviews for %d random tokens, %d limited: want about %d reviews and the rest limited", n, 3*reviewsBurst, limited, reviewsBurst)
	}

	failing := &fakeTokens{err: errors.New("connection refused to 10.0.0.1:6443")}
	srv = gateServer(t, failing, &fakeRights{}, nil)
	code, body, _ := getAs(t, srv.Client(), srv.URL+"/metrics", "tok")
	if code != http.StatusServiceUnavailable || strings.Contains(body, "10.0.0.1") {
		t.Errorf("API server down: %d %q, want 503 without its details", code, body)
	}
}

// TestGateClientCertificate: a certificate of the client CA names the user (CN) and groups (O); one of
// another CA is not accepted.
func TestGateClientCertificate(t *testing.T) {
	t.Parallel()
	ca, caKey := testCA(t, "cluster-ca")
	other, otherKey := testCA(t, "other-ca")
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	rights := &fakeRights{allow: map[string]string{"kubernetes-admin": "/summary"}}
	srv := gateServer(t, &fakeTokens{}, rights, pool)
	client := func(c tls.Certificate) *http.Client {
		tr := srv.Client().Transport.(*http.Transport).Clone()
		tr.TLSClientConfig.Certificates = []tls.Certificate{c}
		return &http.Client{Transport: tr}
	}
	good := client(testClientCert(t, ca, caKey, "kubernetes-admin", "system:masters"))
	if code, body, _ := getAs(t, good, srv.URL+"/summary", ""); code != 200 {
		t.Errorf("the cluster CA's client certificate: %d %q", code, body)
	}
	if s := rights.last.Load(); s == nil || s.User != "kubernetes-admin" || len(s.Groups) != 1 || s.Groups[0] != "system:masters" {
		t.Errorf("reviewed %+v: want the certificate's CN and O", s)
	}
	bad := client(testClientCert(t, other, otherKey, "kubernetes-admin", "system:masters"))
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/summary", nil)
	if resp, err := bad.Do(req); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Errorf("another CA's certificate was served: %q", b)
		}
	}
}

// TestTLSConfigSelfMade: with no certificate given the agent makes one; one half of a pair is an error.
func TestTLSConfigSelfMade(t *testing.T) {
	t.Parallel()
	cfg, err := tlsConfig(&Access{}, "node-1")
	if err != nil || len(cfg.Certificates) != 1 || cfg.MinVersion != tls.VersionTLS12 || cfg.ClientAuth != tls.NoClientCert {
		t.Fatalf("%+v, %v", cfg, err)
	}
	leaf, err := x509.ParseCertificate(cfg.Certificates[0].Certificate[0])
	if err != nil || !strings.Contains(leaf.Subject.CommonName, "node-1") {
		t.Errorf("self-made certificate %v: %v", leaf.Subject, err)
	}
	if _, err := tlsConfig(&Access{CertFile: "x.crt"}, ""); err == nil || !strings.Contains(err.Error(), "--tls-private-key-file") {
		t.Errorf("a certificate without its key: %v", err)
	}
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("agent", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, dir+"/tls.crt", certPEM)
	writeFile(t, dir+"/tls.key", keyPEM)
	if cfg, err := tlsConfig(&Access{CertFile: dir + "/tls.crt", KeyFile: dir + "/tls.key", ClientCAs: x509.NewCertPool()}, ""); err != nil ||
		cfg.ClientAuth != tls.VerifyClientCertIfGiven {
		t.Errorf("mounted certificate with a client CA: %+v, %v", cfg, err)
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// testCA makes a CA certificate and its key.
func testCA(t *testing.T, name string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := cert.NewSelfSignedCACert(cert.Config{CommonName: name}, key)
	if err != nil {
		t.Fatal(err)
	}
	return ca, key
}

// testClientCert makes a client certificate for user in groups, signed by ca.
func testClientCert(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, user string, groups ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: user, Organization: groups},
		NotBefore:    time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestAgentServesOnlyCheckedCallers runs the agent with its access gate and a health listener, sampling
// the real /proc: the main port speaks only TLS, answers /healthz to anyone and /metrics and /summary only
// to a caller with the right; the health listener answers /healthz and nothing else.
func TestAgentServesOnlyCheckedCallers(t *testing.T) {
	health, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tokens := &fakeTokens{users: map[string]string{"tok": "reader"}}
	rights := &fakeRights{allow: map[string]string{"reader": "/summary"}}
	r := startAgent(t, Options{Access: &Access{Tokens: tokens, Rights: rights}, HealthListener: health})
	tlsClient := r.client
	for _, tt := range []struct {
		path, token string
		want        int
	}{
		{"/healthz", "", 200},
		{"/metrics", "", 401},
		{"/summary", "", 401},
		{"/metrics", "tok", 403},
		{"/summary", "tok", 200},
	} {
		if code, body, _ := getAs(t, tlsClient, r.url+tt.path, tt.token); code != tt.want {
			t.Errorf("GET %s (token %q): %d, want %d: %.200s", tt.path, tt.token, code, tt.want, body)
		}
	}
	plain := &http.Client{Timeout: 5 * time.Second}
	if code, body, _ := getAs(t, plain, strings.Replace(r.url, "https://", "http://", 1)+"/metrics", ""); code == 200 {
		t.Errorf("plain HTTP on the main port: %d %.200s", code, body)
	}
	h := "http://" + health.Addr().String()
	if code, body, _ := getAs(t, plain, h+"/healthz", ""); code != 200 || !strings.Contains(body, "ok") {
		t.Errorf("the health listener's /healthz: %d %q", code, body)
	}
	for _, p := range []string{"/metrics", "/summary"} {
		if code, body, _ := getAs(t, plain, h+p, ""); code != http.StatusNotFound {
			t.Errorf("the health listener serves %s: %d %.200s", p, code, body)
		}
	}
}
