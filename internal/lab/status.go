package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultDir is where a lab lives: $TARE_LAB_DIR, else /var/lib/tare/lab as root, else the user's state
// directory ($XDG_STATE_HOME or ~/.local/state) + /tare/lab.
func DefaultDir() string {
	if d := os.Getenv("TARE_LAB_DIR"); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return "/var/lib/tare/lab"
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "tare", "lab")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "tare", "lab")
	}
	return filepath.Join(os.TempDir(), "tare-lab")
}

// ComponentStatus is one lab process now.
type ComponentStatus struct {
	Name    string `json:"name"`
	PID     int    `json:"pid"`
	Running bool   `json:"running"`
	Log     string `json:"log"`
	Node    string `json:"node,omitempty"`   // the extra node it serves (empty: node 1 or the control plane)
	Frozen  bool   `json:"frozen,omitempty"` // frozen by tare lab pause
}

// NodeStatus is one node of the lab.
type NodeStatus struct {
	Name  string `json:"name"`
	Ready bool   `json:"ready"`
	Fake  bool   `json:"kwok"`
}

// StatusReport is `tare lab status`.
type StatusReport struct {
	Dir         string            `json:"dir"`
	Profile     string            `json:"profile"`
	Started     time.Time         `json:"started"`
	Kubeconfig  string            `json:"kubeconfig"`
	Server      string            `json:"server"`
	ControlOnly bool              `json:"control_plane_only"`
	Components  []ComponentStatus `json:"components"`
	APIReady    bool              `json:"api_ready"`
	APIError    string            `json:"api_error,omitempty"`
	Nodes       []NodeStatus      `json:"nodes"`
	Overlay     Overlay           `json:"overlay,omitempty"` // how pods cross between nodes, as recorded; empty with one node
	Tunings     []Tuning          `json:"tunings,omitempty"`
	Audit       string            `json:"audit_log,omitempty"`
	Healthy     bool              `json:"healthy"`
	// Paused says tare lab pause froze the control plane: the API is not asked (it cannot answer), and a
	// paused lab whose processes all run is healthy.
	Paused      bool       `json:"paused"`
	PausedSince *time.Time `json:"paused_since,omitempty"`
}

// Status reports which lab processes run, whether the API server is ready and which nodes are Ready.
func (l *Lab) Status(ctx context.Context) (*StatusReport, error) {
	st, err := l.fresh()
	if err != nil {
		return nil, err
	}
	dir := st.Dir
	r := &StatusReport{Dir: dir, Profile: st.Profile, Started: st.Started, Kubeconfig: st.Kubeconfig, Server: st.Server,
		ControlOnly: st.ControlOnly, Tunings: st.Tunings, Audit: st.Audit, Healthy: true}
	if len(st.ExtraNodes) > 0 {
		r.Overlay = st.overlay()
	}
	for _, p := range st.Processes {
		running := alive(p)
		r.Healthy = r.Healthy && running
		r.Components = append(r.Components, ComponentStatus{Name: p.Name, PID: p.PID, Running: running, Log: p.Log, Node: p.Node})
	}
	if ps := st.Paused; ps != nil {
		r.Paused, r.PausedSince = true, &ps.Since
		for i, c := range r.Components {
			r.Components[i].Frozen = slices.ContainsFunc(ps.Moved, func(m MovedProcess) bool { return m.PID == c.PID })
		}
		r.APIError = fmt.Sprintf("paused since %s (tare lab unpause resumes it)", ps.Since.Format(time.RFC3339))
		if !ps.Complete {
			r.APIError, r.Healthy = "a pause was interrupted: tare lab unpause undoes it", false
		}
		return r, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := Client(st.Kubeconfig)
	if err == nil {
		_, err = c.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	}
	if err != nil {
		r.APIError, r.Healthy = err.Error(), false
		return r, nil
	}
	r.APIReady = true
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		r.APIError, r.Healthy = fmt.Sprintf("listing nodes: %v", err), false
		return r, nil
	}
	for _, n := range nodes.Items {
		ns := NodeStatus{Name: n.Name, Fake: n.Annotations[kwokAnnotation] != ""}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ns.Ready = true
			}
		}
		r.Healthy = r.Healthy && ns.Ready
		r.Nodes = append(r.Nodes, ns)
	}
	return r, nil
}

// LogPath returns the log file of a lab component.
func LogPath(dir, component string) (string, error) {
	st, err := loadState(dir)
	if err == nil {
		if p, ok := st.Process(component); ok {
			return p.Log, nil
		}
	}
	p := filepath.Join(dir, "logs", component+".log")
	if _, err := os.Stat(p); err != nil {
		ents, _ := os.ReadDir(filepath.Join(dir, "logs"))
		var have []string
		for _, e := range ents {
			have = append(have, e.Name()[:len(e.Name())-len(filepath.Ext(e.Name()))])
		}
		return "", fmt.Errorf("no log for %q in %s (components with logs: %v)", component, dir, have)
	}
	return p, nil
}
