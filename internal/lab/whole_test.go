package lab

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/tare-dev/tare/internal/kernel"
)

// TestStateWhole: a lab serves as it runs only when it is ready, not paused, and every process it recorded
// is alive; each other case says what to do. Real processes: this test's own (alive) and a child that has
// exited and been reaped (its PID no longer names it).
func TestStateWhole(t *testing.T) {
	t.Parallel()
	self, err := kernel.ReadProcStat("/proc", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	live := Process{Name: "etcd", PID: os.Getpid(), StartTicks: self.Starttime}
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	dead := Process{Name: "kube-apiserver", PID: done.Process.Pid, StartTicks: 1}
	for _, c := range []struct {
		name string
		st   State
		want string // "" for whole
	}{
		{"whole", State{Ready: true, Processes: []Process{live}}, ""},
		{"not ready", State{Processes: []Process{live}}, "not ready: start it with tare lab up"},
		{"paused", State{Ready: true, Paused: &PauseState{}, Processes: []Process{live}}, "paused: tare lab unpause resumes it"},
		{"a process gone", State{Ready: true, Processes: []Process{live, dead}}, "has stopped processes: tare lab down, then up"},
	} {
		err := c.st.Whole("/var/lib/tare/lab")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
