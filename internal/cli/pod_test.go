package cli

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/testload"
)

// TestMeasurePodGroups: a process in a pod's cgroup is grouped by its pod and container.
func TestMeasurePodGroups(t *testing.T) {
	requireTiming(t)
	requireRoot(t)
	uid := testload.PodUID(0x5e1f9c1a)
	container := strings.Repeat("c0ffee", 10) + "abcd"
	h := startHelper(t, "burn", "100")
	h.line(t, 10*time.Second)
	testload.KubepodsCgroup(t, uid, container, h.pid())
	s := measureJSON(t, "--duration", "2s", "--interval", "500ms")
	p, ok := findProcess(s, h.pid())
	if !ok {
		t.Fatal("burner missing")
	}
	if p.Kind != "pod" || p.PodUID != uid || p.Container != container || p.Group != "pod "+uid {
		t.Errorf("pod process classified as %s/%s pod %q container %q", p.Group, p.Kind, p.PodUID, p.Container)
	}
	for _, g := range s.Groups {
		if g.Name == "pod "+uid {
			if g.CPU.Mean < 90 || g.CPU.Mean > 110 {
				t.Errorf("pod group CPU %.1fm, want ~100m", g.CPU.Mean)
			}
			return
		}
	}
	t.Errorf("no group for the pod: %v", fmt.Sprint(s.GroupNames()))
}
