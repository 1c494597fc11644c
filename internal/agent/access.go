package agent

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"golang.org/x/time/rate"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// Access says who may read the agent's paths beyond /healthz. With it, the agent serves TLS and checks every
// caller as the kubelet does (webhook authentication and authorization): a client certificate signed by
// ClientCAs, or a bearer token the API server vouches for (TokenReview), then the caller's right to get the
// path (SubjectAccessReview, a non-resource attribute: verb get, path /metrics or /summary).
type Access struct {
	// Tokens and Rights send the reviews to the API server: their identity needs create on tokenreviews
	// and subjectaccessreviews (the ClusterRole system:auth-delegator).
	Tokens authnclient.TokenReviewInterface
	Rights authzclient.SubjectAccessReviewInterface
	// ClientCAs verifies client certificates (the cluster's client CA: the kube-system ConfigMap
	// extension-apiserver-authentication, or --client-ca-file); nil accepts bearer tokens only.
	ClientCAs *x509.CertPool
	// CertFile and KeyFile are the serving certificate and its key (PEM); when empty the agent makes a
	// self-signed one at start.
	CertFile, KeyFile string
}

// How long the answers of the API server are kept, as the kubelet's defaults: a token's identity two
// minutes, an allowed right five minutes, a refusal 30 s (a right just granted works within half a minute).
// Invalid tokens are kept 30 s too, so a client retrying a bad token costs the API server one review.
const (
	tokenTTL       = 2 * time.Minute
	badTokenTTL    = 30 * time.Second
	allowedTTL     = 5 * time.Minute
	deniedTTL      = 30 * time.Second
	reviewTimeout  = 10 * time.Second
	cacheEntries   = 4096 // per cache: a bound on memory whatever the callers send (an entry is under 1 KiB)
	reviewsPerSec  = 20   // reviews of unknown tokens and rights sent to the API server, at most, per agent
	reviewsBurst   = 40
	reviewsPending = 8 // reviews in flight at once; a caller beyond waits, within its request's deadline
)

// gate authenticates and authorizes each request before the handler it wraps sees it.
type gate struct {
	access  *Access
	tokens  *cache.LRUExpireCache // sha256 of a token → tokenAnswer
	rights  *cache.LRUExpireCache // caller and path → bool
	limit   *rate.Limiter
	pending chan struct{}
	log     io.Writer
}

// tokenAnswer is what the API server said of a token.
type tokenAnswer struct {
	user authenticationv1.UserInfo
	ok   bool
}

func newGate(a *Access, log io.Writer) *gate {
	return &gate{
		access:  a,
		tokens:  cache.NewLRUExpireCache(cacheEntries),
		rights:  cache.NewLRUExpireCache(cacheEntries),
		limit:   rate.NewLimiter(reviewsPerSec, reviewsBurst),
		pending: make(chan struct{}, reviewsPending),
		log:     log,
	}
}

// errBusy is returned when the reviews' rate limit is spent: the caller is told to come back.
var errBusy = errors.New("too many unknown callers at once: try again shortly")

// wrap serves next only to a caller who is who it says and may get the path; others get 401 or 403 and a
// line saying why, nothing else.
func (g *gate) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, err := g.authenticate(r)
		if err != nil {
			g.refuse(w, r, err)
			return
		}
		ok, err := g.authorize(r.Context(), user, r.URL.Path)
		switch {
		case err != nil:
			g.refuse(w, r, err)
		case !ok:
			http.Error(w, fmt.Sprintf("forbidden: %s may not get %s (grant the ClusterRole that reads it: see tare agent --help)", user.Username, r.URL.Path), http.StatusForbidden)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// errUnauthenticated says the caller proved no identity.
type errUnauthenticated struct{ reason string }

func (e errUnauthenticated) Error() string { return "unauthorized: " + e.reason }

func (g *gate) refuse(w http.ResponseWriter, r *http.Request, err error) {
	var ua errUnauthenticated
	switch {
	case errors.As(err, &ua):
		w.Header().Set("WWW-Authenticate", `Bearer realm="tare-agent"`)
		http.Error(w, ua.Error(), http.StatusUnauthorized)
	case errors.Is(err, errBusy):
		w.Header().Set("Retry-After", "1")
		http.Error(w, err.Error(), http.StatusTooManyRequests)
	default:
		// The API server could not be asked: say so to the caller without its details (they are logged).
		if g.log != nil {
			fmt.Fprintf(g.log, "warning: checking a caller of %s: %v\n", r.URL.Path, err)
		}
		http.Error(w, "cannot check the caller's credentials now: try again later", http.StatusServiceUnavailable)
	}
}

// authenticate names the caller: its verified client certificate, else its bearer token as the API server
// reviews it.
func (g *gate) authenticate(r *http.Request) (authenticationv1.UserInfo, error) {
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		c := r.TLS.VerifiedChains[0][0] // verified against the client CAs by crypto/tls
		if c.Subject.CommonName == "" {
			return authenticationv1.UserInfo{}, errUnauthenticated{"the client certificate names no user (empty common name)"}
		}
		return authenticationv1.UserInfo{Username: c.Subject.CommonName, Groups: c.Subject.Organization}, nil
	}
	auth := r.Header.Get("Authorization")
	scheme, token, _ := strings.Cut(auth, " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "bearer") || token == "" {
		return authenticationv1.UserInfo{}, errUnauthenticated{"no credentials: send a bearer token (Authorization: Bearer TOKEN) or a client certificate of the cluster"}
	}
	sum := sha256.Sum256([]byte(token))
	key := hex.EncodeToString(sum[:])
	if v, ok := g.tokens.Get(key); ok {
		return tokenResult(v.(tokenAnswer))
	}
	var ans tokenAnswer
	err := g.review(r.Context(), func(ctx context.Context) error {
		tr, err := g.access.Tokens.Create(ctx,
			&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("reviewing a bearer token: %w", err)
		}
		ans = tokenAnswer{user: tr.Status.User, ok: tr.Status.Authenticated && tr.Status.Error == ""}
		return nil
	})
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	ttl := tokenTTL
	if !ans.ok {
		ttl = badTokenTTL
	}
	g.tokens.Add(key, ans, ttl)
	return tokenResult(ans)
}

func tokenResult(a tokenAnswer) (authenticationv1.UserInfo, error) {
	if !a.ok {
		return authenticationv1.UserInfo{}, errUnauthenticated{"the bearer token is not valid"}
	}
	return a.user, nil
}

// authorize asks whether user may get path, as a non-resource request (the kubelet's and controller-runtime's
// metrics endpoints are authorized the same way).
func (g *gate) authorize(ctx context.Context, user authenticationv1.UserInfo, path string) (bool, error) {
	key, err := rightKey(user, path)
	if err != nil {
		return false, err
	}
	if v, ok := g.rights.Get(key); ok {
		return v.(bool), nil
	}
	var allowed bool
	err = g.review(ctx, func(ctx context.Context) error {
		extra := map[string]authorizationv1.ExtraValue{}
		for k, v := range user.Extra {
			extra[k] = authorizationv1.ExtraValue(v)
		}
		sar, err := g.access.Rights.Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
				NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: "get"},
			}}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("reviewing %s's right to get %s: %w", user.Username, path, err)
		}
		allowed = sar.Status.Allowed && !sar.Status.Denied
		return nil
	})
	if err != nil {
		return false, err
	}
	ttl := allowedTTL
	if !allowed {
		ttl = deniedTTL
	}
	g.rights.Add(key, allowed, ttl)
	return allowed, nil
}

// rightKey is the cache key of one caller's right to one path: the whole identity, as the SubjectAccessReview
// sees it.
func rightKey(user authenticationv1.UserInfo, path string) (string, error) {
	groups := slices.Clone(user.Groups)
	slices.Sort(groups)
	b, err := json.Marshal(struct {
		U, I, P string
		G       []string
		E       map[string]authenticationv1.ExtraValue
	}{user.Username, user.UID, path, groups, user.Extra})
	if err != nil {
		return "", fmt.Errorf("keying a caller's right: %w", err)
	}
	return string(b), nil
}

// review sends one review to the API server: at most reviewsPerSec a second (beyond, the caller is asked to
// retry), reviewsPending at once, each within reviewTimeout.
func (g *gate) review(ctx context.Context, send func(context.Context) error) error {
	if !g.limit.Allow() {
		return errBusy
	}
	select {
	case g.pending <- struct{}{}:
		defer func() { <-g.pending }()
	case <-ctx.Done():
		return fmt.Errorf("waiting to review a caller: %w", ctx.Err())
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	return send(ctx)
}
