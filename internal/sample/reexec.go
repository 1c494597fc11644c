package sample

import (
	"time"

	"github.com/tare-dev/tare/internal/kernel"
)

// reidentify reads again the identity of a known process that exec'd after tare read it. A container's
// process is one: runc (runc init) starts it outside the container's cgroup, moves it in and execs the
// container's command, and tare may see it first before that move (often on a busy node), when nothing
// yet says whose it is (a pod's client in tare datapath was credited nothing in some trials: its CPU went
// to the runtime's group). When the process's command line, executable or cgroup changed, its record ends
// in this sample and a new one (a new ID with the same PID and start time) is credited from this sample
// on, under what it is now: what ran before the previous sample stays with the old record, and what ran
// in this sample's interval before the exec goes to the new one; so when only its name changed (its name
// came from a task pass before the exec, its command line from after). The exec watcher says which
// processes exec'd (without one, nothing is read again).
func (s *Sampler) reidentify(smp *Sample, st *procState) {
	pid := st.info.Key.PID
	st.identAt = time.Now()
	id, err := kernel.ReadIdentity(s.opts.ProcRoot, pid)
	if err != nil || id.Stat.Starttime != st.info.Key.Start || id.Stat.State == 'Z' {
		return // ended, or its PID is now another's: the sample's usual paths settle it
	}
	old := st.info
	if id.Cmdline == old.Cmdline && id.Exe == old.Exe && id.Cgroup == old.Cgroup && id.Stat.Comm == old.Comm {
		return // read after its exec the first time already
	}
	info := s.newInfo(pid, old.Key.Start, id.Stat.PPID, id.Stat.Comm, id.Cmdline, id.Exe, id.Cgroup, id.Kernel)
	info.Seen, info.UID, info.StartTime, info.BornSeq = true, id.UID, old.StartTime, old.BornSeq
	smp.Exited = append(smp.Exited, old.ID)
	smp.New = append(smp.New, *info)
	st.info = info
}
