package promread_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/model"

	"github.com/tare-dev/tare/internal/promread"

	"github.com/tare-dev/tare/internal/warning"
)

// queryFields names each query by its field in Queries; fixtures are saved under these names.
func queryFields(q promread.Queries) map[string]string {
	out := map[string]string{}
	v := reflect.ValueOf(q)
	for i := range v.NumField() {
		out[v.Type().Field(i).Name] = v.Field(i).String()
	}
	return out
}

// decode turns an HTTP API response body into its instant vector.
func decode(b []byte) (model.Vector, error) {
	var resp struct {
		Status string `json:"status"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		return nil, err
	}
	if resp.Status != "success" || resp.Data.ResultType != "vector" {
		return nil, fmt.Errorf("status %q, result type %q", resp.Status, resp.Data.ResultType)
	}
	var v model.Vector
	err := json.Unmarshal(resp.Data.Result, &v)
	return v, err
}

// loadResults reads the fixtures in dir into Results, field by field.
func loadResults(t *testing.T, dir string) promread.Results {
	t.Helper()
	var r promread.Results
	rv := reflect.ValueOf(&r).Elem()
	for name := range queryFields(promread.Queries{}) {
		b, err := os.ReadFile(filepath.Join(dir, name+".json"))
		if err != nil {
			t.Fatalf("%v (run go test -run TestReadRealPrometheus -update to capture the fixtures)", err)
		}
		v, err := decode(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rv.FieldByName(name).Set(reflect.ValueOf(v))
	}
	return r
}

// TestMapFixtures maps answers captured from the real Prometheus of TestReadRealPrometheus.
func TestMapFixtures(t *testing.T) {
	t.Parallel()
	rep, err := promread.Map(loadResults(t, filepath.Join("testdata", "twonodes")))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(twoNodes, rep, within5); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func sample(v float64, labels ...string) *model.Sample {
	m := model.Metric{}
	for i := 0; i+1 < len(labels); i += 2 {
		m[model.LabelName(labels[i])] = model.LabelValue(labels[i+1])
	}
	return &model.Sample{Metric: m, Value: model.SampleValue(v)}
}

func TestMap(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   promread.Results
		want promread.Report
		err  error
	}{
		{name: "no agents", in: promread.Results{Busy: model.Vector{sample(1, "node", "a")}}, err: promread.ErrNoAgents},
		{
			name: "NaN rate and a node without CPUs' busy",
			in: promread.Results{
				CPUs:   model.Vector{sample(2, "node", "a"), sample(1, "node", "b")},
				Busy:   model.Vector{sample(math.NaN(), "node", "a")},
				Groups: model.Vector{sample(0.5, "node", "b", "group", "x", "group_kind", "other")},
			},
			want: promread.Report{
				Nodes:   []promread.Node{{Name: "a", CPUs: 2}, {Name: "b", CPUs: 1, Groups: []promread.Group{{Name: "x", Kind: "other", CPUCores: 0.5}}}},
				Cluster: promread.Cluster{Nodes: 2, Pods: []promread.Pod{}},
			},
		},
		{
			name: "series without a node label",
			in:   promread.Results{CPUs: model.Vector{sample(4)}, Busy: model.Vector{sample(1)}},
			want: promread.Report{
				Nodes:   []promread.Node{{CPUs: 4, BusyCores: 1, BusyPercent: 25}},
				Cluster: promread.Cluster{Nodes: 1, BusyCores: 1, Pods: []promread.Pod{}},
				Warnings: []warning.Warning{{Code: promread.WarnNoNodeLabel, Figure: "nodes",
					Message: "some agent series have no node label: scrape them with the relabelling of deploy/prometheus/prometheus.yml (__meta_kubernetes_pod_node_name to node)",
					Cause:   "a scrape configuration without the relabelling; those series are in no node's figures"}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := promread.Map(tc.in)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
