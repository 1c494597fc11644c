package agent

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tare-dev/tare/internal/summary"
)

// TestWithoutCmdlines: /summary without --serve-cmdlines names processes and children by program, keeps
// kernel threads' bracketed names, and falls back to comm for a process with no command line.
func TestWithoutCmdlines(t *testing.T) {
	t.Parallel()
	sum := summary.Summary{
		Processes: []summary.Process{
			{Comm: "kube-apiserver", Cmdline: "/usr/local/bin/kube-apiserver --etcd-servers=https://10.0.0.1:2379 --token-auth-file=/etc/tokens"},
			{Comm: "kworker/0:1", Cmdline: "[kworker/0:1]"},
			{Comm: "zombie", Cmdline: ""},
		},
		Children: []summary.Children{{ParentCmdline: "/bin/sh -c while true; do curl -u me:pw x; done", Cmdline: "curl -u me:*** http://internal.example"}},
	}
	withoutCmdlines(&sum)
	var got []string
	for _, p := range sum.Processes {
		got = append(got, p.Cmdline)
	}
	for _, c := range sum.Children {
		got = append(got, c.ParentCmdline, c.Cmdline)
	}
	want := []string{"kube-apiserver", "[kworker/0:1]", "zombie", "sh", "curl"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
