package promread_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/tare-dev/tare/internal/promconf"
	"github.com/tare-dev/tare/internal/promread"
)

// TestRulesMatchQueries checks that the shipped recording rules are the report's queries over one minute,
// so that a dashboard built on the rules and tare report --prometheus say the same thing.
func TestRulesMatchQueries(t *testing.T) {
	t.Parallel()
	b, err := promconf.Read(promconf.RulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []struct {
				Record string `json:"record"`
				Expr   string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			got[r.Record] = r.Expr
		}
	}
	q := promread.Build(time.Minute, "")
	want := map[string]string{
		"node:tare_busy_cores:rate1m":             q.Busy,
		"node:tare_overhead_cores:rate1m":         q.Overhead,
		"node:tare_kubelet_runtime_cores:rate1m":  q.KubeletRuntime,
		"node:tare_self_cores:rate1m":             q.Self,
		"node_group:tare_cpu_cores:rate1m":        q.Groups,
		"node_group:tare_memory_bytes":            q.Memory,
		"cluster:tare_control_plane_cores:rate1m": q.ControlPlane,
		"namespace_pod:tare_cpu_cores:rate1m":     q.Pods,
	}
	for record, expr := range want {
		if diff := cmp.Diff(expr, got[record]); diff != "" {
			t.Errorf("rule %s differs from the report's query (-query +rules.yml):\n%s", record, diff)
		}
	}
}

func TestGroupLists(t *testing.T) {
	t.Parallel()
	if diff := cmp.Diff([]string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "cloud-controller-manager"},
		promread.ControlPlaneGroups()); diff != "" {
		t.Errorf("control plane (-want +got):\n%s", diff)
	}
	for _, want := range []string{"kubelet", "containerd", "cri-o"} {
		if !strings.Contains(strings.Join(promread.KubeletRuntimeGroups(), " "), want) {
			t.Errorf("kubelet+runtime groups %v lack %s", promread.KubeletRuntimeGroups(), want)
		}
	}
}
