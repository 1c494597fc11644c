package sample

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/testenv"
	"github.com/tare-dev/tare/internal/testload"
)

// TestExecIntoPodCgroup: a process that tare has already seen outside any pod is moved into a pod's
// cgroup and execs a busy loop there, as runc init does when it starts a container's command (kubectl
// exec, tare datapath's clients). The pod's group must be credited what the pod's cgroup used, by the
// cgroup's own account; before tare read an exec'd process again, the busy loop stayed in the group of
// what the process was when first seen.
func TestExecIntoPodCgroup(t *testing.T) {
	testenv.NeedRoot(t, "a pod cgroup and the exec watcher need root")
	sh := exec.Command("sh", "-c", "read go; exec sh -c 'while :; do :; done'")
	stdin, err := sh.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sh.Process.Kill()
		_ = sh.Wait()
	})
	s, err := New(context.Background(), Options{Interval: 100 * time.Millisecond, Detail: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	infos := map[int64]ProcInfo{}
	take := func() Sample {
		t.Helper()
		smp, err := s.Sample()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range smp.New {
			infos[p.ID] = p
		}
		return smp
	}
	take() // the baseline: the shell, waiting, outside any pod
	time.Sleep(100 * time.Millisecond)
	take()
	uid := testload.PodUID(0x5ec0e5ec)
	const ctr = "3c4e9d0a5b6f7e8d9c0b1a2f3e4d5c6b7a8f9e0d1c2b3a4f5e6d7c8b9a0f1e2d"
	testload.KubepodsCgroup(t, uid, ctr, sh.Process.Pid)
	usage := testload.CgroupUsage(t, podCPUDir(uid, ctr))
	before := usage()
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	var credited, elsewhere time.Duration
	for range 10 {
		time.Sleep(100 * time.Millisecond)
		smp := take()
		for _, p := range smp.Procs {
			info := infos[p.ID]
			if info.Key.PID != sh.Process.Pid {
				continue
			}
			if info.PodUID == uid && info.Group == "pod "+uid {
				credited += time.Duration(p.CPUNs)
			} else {
				elsewhere += time.Duration(p.CPUNs)
			}
		}
	}
	used := usage() - before
	t.Logf("the pod's cgroup used %v; credited to the pod %v, to the process's first group %v", used, credited, elsewhere)
	if used < 300*time.Millisecond {
		t.Fatalf("the busy loop used %v in its pod's cgroup over a second: too little to tell", used)
	}
	// The sampler's window and the cgroup's readings are up to a sample's reading apart at each end.
	if diff := (credited - used).Abs(); diff > used/10+20*time.Millisecond {
		t.Errorf("the pod was credited %v, its cgroup used %v (%v to the process's first group)", credited, used, elsewhere)
	}
}

// podCPUDir is the pod container's cgroup in the hierarchy that accounts CPU, as testload.KubepodsCgroup
// makes it.
func podCPUDir(uid, ctr string) string {
	rel := filepath.Join("kubepods", "burstable", "pod"+uid, ctr)
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return filepath.Join("/sys/fs/cgroup", rel)
	}
	return filepath.Join("/sys/fs/cgroup", "cpuacct", rel)
}
