package audit

import (
	"strings"
	"testing"
)

func TestParseAPIServerMetricsWatches(t *testing.T) {
	t.Parallel()
	const requests = `# TYPE apiserver_request_total counter
apiserver_request_total{code="200",group="",resource="pods",verb="LIST"} 4
`
	m, err := ParseAPIServerMetrics(strings.NewReader(requests + `# TYPE apiserver_longrunning_requests gauge
apiserver_longrunning_requests{component="apiserver",group="",resource="pods",scope="cluster",subresource="",verb="WATCH"} 3
apiserver_longrunning_requests{component="apiserver",group="apps",resource="daemonsets",scope="namespace",subresource="",verb="WATCH"} 2
apiserver_longrunning_requests{component="apiserver",group="",resource="pods",scope="resource",subresource="exec",verb="CONNECT"} 1
`))
	if err != nil {
		t.Fatal(err)
	}
	if m.Watches != 5 || m.Requests[[2]string{"LIST", "pods"}] != 4 {
		t.Errorf("watches %v, requests %v: want 5 watches (not the exec) and 4 LISTs", m.Watches, m.Requests)
	}
	m, err = ParseAPIServerMetrics(strings.NewReader(requests))
	if err != nil || m.Watches != -1 {
		t.Errorf("without the gauge: watches %v, err %v; want -1 (unknown)", m.Watches, err)
	}
}
