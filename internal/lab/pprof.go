package lab

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/pprof"
)

// PprofTargets are the pprof endpoints of the lab's components that run (not the controller manager and
// scheduler in an API-server-only lab, nor the node's in a control-plane-only one), in the registry's order,
// with clients that may read them: the admin identity's certificate for the API server, kubelet,
// controller manager and scheduler (the last two serve with self-signed certificates of their own, so
// their server certificate is not checked), plain HTTP on loopback for etcd and kube-proxy, and
// containerd's debug socket.
func (l *Lab) PprofTargets() ([]pprof.Target, error) {
	st, err := l.fresh()
	if err != nil {
		return nil, err
	}
	dir := st.Dir
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
	sock := paths{dir: dir}.containerdDebugSocket()
	overSocket := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "unix", sock)
		}}}
	local := func(port int) string { return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
	secure := func(port int) string { return "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
	all := map[string]pprof.Target{
		component.Etcd:              {Base: local(st.ports().etcdClient()), Client: &http.Client{}},
		component.APIServer:         {Base: st.Server, Client: admin},
		component.ControllerManager: {Base: secure(st.ports().kcm()), Client: selfSigned},
		component.Scheduler:         {Base: secure(st.ports().scheduler()), Client: selfSigned},
		component.Kubelet:           {Base: secure(kubeletPort), Client: admin},
		component.KubeProxy:         {Base: local(proxyMetrics), Client: &http.Client{}},
		component.Containerd:        {Base: "http://containerd", Client: overSocket},
	}
	var ts []pprof.Target
	for _, name := range st.components() {
		if t, ok := all[name]; ok {
			t.Component = name
			ts = append(ts, t)
		}
	}
	return ts, nil
}
