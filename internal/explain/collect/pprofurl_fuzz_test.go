package collect

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzParsePprofURL feeds --pprof-url, seeded with the guide's form (docs/guides/explain-an-idle-cluster.md) and the lab's components'
// addresses: an accepted value names a component and a base URL over http(s) with a host, without a
// trailing slash or /debug/pprof.
func FuzzParsePprofURL(f *testing.F) {
	for _, s := range []string{"kube-apiserver=https://127.0.0.1:6443", "etcd=http://127.0.0.1:2381/debug/pprof", "kubelet=https://10.0.0.2:10250/debug/pprof/",
		"=http://x", "x=ftp://y", "x=http://", "x=http://[::1", "scheduler=http://127.0.0.1:10259/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tg, err := ParsePprofURL(s)
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "--pprof-url ") {
				t.Fatalf("error %q", msg)
			}
			return
		}
		if tg.Component == "" || strings.HasSuffix(tg.Base, "/") {
			t.Fatalf("%q accepted as %+v", s, tg)
		}
		u, err := url.Parse(tg.Base)
		if err != nil || u.Host == "" || u.Scheme != "http" && u.Scheme != "https" {
			t.Fatalf("%q accepted with base %q, not an http(s) URL with a host (%v)", s, tg.Base, err)
		}
	})
}
