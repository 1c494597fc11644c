package lab

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tare-dev/tare/internal/pprof"
)

// PprofTargets are the lab's components' pprof endpoints with clients that may read them: the admin
// identity's certificate for the API server, kubelet, controller manager and scheduler (the last two
// serve with self-signed certificates of their own, so their server certificate is not checked), plain
// HTTP on loopback for etcd and kube-proxy, and containerd's debug socket.
func PprofTargets(dir string) ([]pprof.Target, error) {
	st, err := LoadState(dir)
	if err != nil {
		return nil, err
	}
	pki, err := LoadPKI(filepath.Join(dir, "pki"))
	if err != nil {
		return nil, err
	}
	admin, err := pki.HTTPClient("admin")
	if err != nil {
		return nil, fmt.Errorf("lab admin client: %w", err)
	}
	selfSignedT := admin.Transport.(*http.Transport).Clone()
	selfSignedT.TLSClientConfig.InsecureSkipVerify = true
	selfSigned := &http.Client{Transport: selfSignedT}
	local := func(port int) string { return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
	secure := func(port int) string { return "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
	ts := []pprof.Target{
		{Component: "etcd", Base: local(etcdClientPort), Client: &http.Client{}},
		{Component: "kube-apiserver", Base: st.Server, Client: admin},
		{Component: "kube-controller-manager", Base: secure(kcmPort), Client: selfSigned},
		{Component: "kube-scheduler", Base: secure(schedulerPort), Client: selfSigned},
	}
	if st.ControlOnly {
		return ts, nil
	}
	sock := paths{dir: dir}.join("containerd", "debug.sock")
	overSocket := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "unix", sock)
		}}}
	return append(ts,
		pprof.Target{Component: "kubelet", Base: secure(kubeletPort), Client: admin},
		pprof.Target{Component: "kube-proxy", Base: local(proxyMetrics), Client: &http.Client{}},
		pprof.Target{Component: "containerd", Base: "http://containerd", Client: overSocket}), nil
}
