package explain_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/explain"
	"github.com/tare-dev/tare/internal/htmlreport"
	"github.com/tare-dev/tare/internal/summary"
)

// TestClusterReadNowIsLabelled: facts read when a recording is explained are labelled as read now in the
// table, the JSON and the HTML report; facts read at the end of a live window carry no such label.
func TestClusterReadNowIsLabelled(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC)
	facts := &explain.ClusterFacts{Nodes: 1, Leases: []explain.LeaseFact{{Name: "kube-scheduler", Holder: "lab", DurationSeconds: 15, RenewedAgo: 1}}}
	for _, tt := range []struct {
		recording bool
		when      string
		labelled  bool
	}{{true, explain.ReadNow, true}, {false, explain.ReadAtWindowEnd, false}} {
		rep := explain.New(nil, summary.Summary{}, explain.API{}, facts, nil)
		rep.ClusterRead = explain.NewClusterRead(at, tt.recording)
		label := "read now (2026-11-24 09:30:00), when this recording was explained, not when it was made"

		var table bytes.Buffer
		if err := rep.Table(&table); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(table.String(), "note: the cluster's nodes, leases and replicas were "+label); got != tt.labelled {
			t.Errorf("recording=%v: table labelled %v, want %v:\n%s", tt.recording, got, tt.labelled, table.String())
		}

		var js bytes.Buffer
		if err := rep.JSON(&js); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			ClusterRead explain.ClusterRead `json:"cluster_read"`
		}
		if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		c := doc.ClusterRead
		if c.When != tt.when || !c.At.Equal(at) || strings.Contains(c.Note, label) != tt.labelled {
			t.Errorf("recording=%v: JSON cluster_read %+v, want when %q at %s", tt.recording, c, tt.when, at)
		}

		var page bytes.Buffer
		if err := htmlreport.Write(&page, htmlreport.Node(rep, "tare explain", "test")); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(page.String(), label); got != tt.labelled {
			t.Errorf("recording=%v: HTML report labelled %v, want %v", tt.recording, got, tt.labelled)
		}
	}
}
