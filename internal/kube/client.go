package kube

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/homedir"
)

// ErrNoKubeconfig means no kubeconfig was given or found: pods are then named by UID.
var ErrNoKubeconfig = errors.New("no kubeconfig: pass --kubeconfig or set KUBECONFIG to name pods")

// Options tune the REST configuration NewClient builds. The zero Options are client-go's defaults, with
// tare's user agent and no timeout.
type Options struct {
	// UserAgent is how tare names itself to the API server (audit logs, per-client metrics); "tare" when empty.
	UserAgent string
	// Timeout bounds each request; 0 leaves requests unbounded (a CPU profile takes as long as it asks).
	Timeout time.Duration
	// QPS and Burst are client-go's client-side rate limit; 0 keeps its defaults (5 a second, bursts of 10).
	QPS   float32
	Burst int
	// Context is the kubeconfig context to use instead of its current-context (kubectl's --context); it
	// must exist in the kubeconfig.
	Context string
}

// Client is a cluster reached through a kubeconfig. Making one reads files only: nothing contacts the API
// server until a caller uses it.
type Client struct {
	// Source names the kubeconfig in use: the file given, or the files found through $KUBECONFIG (joined
	// by the path list separator when several were merged), or ~/.kube/config.
	Source string
	// Config is the current context's REST configuration with the Options applied. Callers copy it
	// (rest.CopyConfig) before changing it.
	Config *rest.Config
	// Context is the kubeconfig context asked for (Options.Context; "" for the current-context).
	Context string
}

// NewClient loads a kubeconfig as kubectl does: the file kubeconfig names when it is not empty (it must
// exist); else every file $KUBECONFIG lists (colon-separated; missing ones are skipped), merged so that the
// first file to set a value wins; else ~/.kube/config. It fails with ErrNoKubeconfig when there is none
// of these, and with an error naming the file(s) and what to do when they cannot be read or are not a
// usable kubeconfig (not one at all, no cluster, no current context, a context or cluster that is
// missing). As kubectl, with no file at all inside a pod it uses the pod's service account (in-cluster
// config: tare agent). Unlike kubectl it never rewrites a file (no migration of the old
// ~/.kube/.kubeconfig).
func NewClient(kubeconfig string, o Options) (*Client, error) {
	rules := loadingRules(kubeconfig)
	files, err := kubeconfigFiles(rules)
	if errors.Is(err, ErrNoKubeconfig) && kubeconfig == "" {
		// In a pod (tare agent), as kubectl: the service account's token and the cluster's CA.
		if cfg, icErr := rest.InClusterConfig(); icErr == nil {
			return configured(&Client{Source: "in-cluster service account", Config: cfg}, o), nil
		}
	}
	if err != nil {
		return nil, err
	}
	source := strings.Join(files, string(filepath.ListSeparator))
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.Context})
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s is not a kubeconfig: %w", source, err)
	}
	if len(raw.Clusters) == 0 {
		return nil, fmt.Errorf("kubeconfig %s is not a kubeconfig: it names no cluster (see kubectl config view --raw for one that works)", source)
	}
	if o.Context != "" {
		if _, ok := raw.Contexts[o.Context]; !ok {
			return nil, fmt.Errorf("kubeconfig %s has no context %q (kubectl config get-contexts lists them)", source, o.Context)
		}
	} else if raw.CurrentContext == "" {
		how := "kubectl config use-context NAME"
		if kubeconfig != "" {
			how += " --kubeconfig " + kubeconfig
		}
		return nil, fmt.Errorf("kubeconfig %s has no current-context: set one with %s", source, how)
	}
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s cannot be used: %w", source, err)
	}
	return configured(&Client{Source: source, Config: cfg}, o), nil
}

// configured applies the caller's options to c's REST config.
func configured(c *Client, o Options) *Client {
	c.Context = o.Context
	cfg := c.Config
	cfg.UserAgent = o.UserAgent
	if cfg.UserAgent == "" {
		cfg.UserAgent = "tare"
	}
	cfg.Timeout = o.Timeout
	if o.QPS > 0 {
		cfg.QPS = o.QPS
	}
	if o.Burst > 0 {
		cfg.Burst = o.Burst
	}
	return c
}

// Clientset returns a typed clientset over Config, made anew on each call. Callers that make a few REST
// calls use HTTPClient instead: the typed clientset nearly doubles tare's memory (30 against 16 MiB).
func (c *Client) Clientset() (kubernetes.Interface, error) {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", c.Source, err)
	}
	return cs, nil
}

// HTTPClient returns an HTTP client that authenticates to the API server as Config says (TLS, tokens, exec
// plugins), with Config's timeout.
func (c *Client) HTTPClient() (*http.Client, error) {
	hc, err := rest.HTTPClientFor(c.Config)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", c.Source, err)
	}
	return hc, nil
}

// CheckKubeconfig tells whether path is a kubeconfig tare can use: a readable file that clientcmd parses,
// with at least one cluster and a current context (or the context kubeContext names, when not empty)
// that client-go can build a client from (it does not contact the server). The error names the file and
// says what is wrong with it. It loads the file as NewClient does.
func CheckKubeconfig(path, kubeContext string) error {
	_, err := NewClient(path, Options{Context: kubeContext})
	return err
}

// loadingRules are clientcmd's default rules (kubectl's), with an explicit file when one is given.
func loadingRules(explicit string) *clientcmd.ClientConfigLoadingRules {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = explicit
	if os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		rules.Precedence = []string{homeKubeconfig()}
	}
	// tare reads kubeconfigs and never writes them; a $KUBECONFIG whose files are all missing is
	// ErrNoKubeconfig rather than a log line on stderr.
	rules.MigrationRules, rules.WarnIfAllMissing = nil, false
	return rules
}

// homeKubeconfig is ~/.kube/config of $HOME as it is now: clientcmd fixes its own when the program starts,
// and a kubectl started now would take today's $HOME.
func homeKubeconfig() string {
	return filepath.Join(homedir.HomeDir(), clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)
}

// PathOptions are kubectl's rules for where a change to the user's kubeconfig is written, for
// clientcmd.ModifyConfig (as kubectl config set-context and use-context write): the files of $KUBECONFIG
// (a new entry goes to the first that exists, else the last), else ~/.kube/config of $HOME as it is now.
// They are the files NewClient reads when given no kubeconfig.
func PathOptions() *clientcmd.PathOptions {
	po := clientcmd.NewDefaultPathOptions()
	po.GlobalFile = homeKubeconfig()
	po.LoadingRules.MigrationRules, po.LoadingRules.WarnIfAllMissing = nil, false
	return po
}

// kubeconfigFiles are the files rules will read: the explicit one, which must exist, or those of the
// precedence list that exist. Each must be readable.
func kubeconfigFiles(rules *clientcmd.ClientConfigLoadingRules) ([]string, error) {
	var files []string
	if rules.ExplicitPath != "" {
		if _, err := os.Stat(rules.ExplicitPath); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("kubeconfig %s: no such file", rules.ExplicitPath)
		}
		files = []string{rules.ExplicitPath}
	} else {
		for _, p := range rules.Precedence {
			if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
				files = append(files, p)
			}
		}
	}
	if len(files) == 0 {
		return nil, ErrNoKubeconfig
	}
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s cannot be read: %w (run tare as a user who may read it, or pass --kubeconfig with a copy)", p, err)
		}
		f.Close()
	}
	return files, nil
}
