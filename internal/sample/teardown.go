package sample

// A taskstats exit notification is sent early in do_exit, before the kernel tears down the process's
// address space and files. That teardown is real CPU of the child (a few hundred microseconds for a Go
// binary, about 5% of a 10 ms child) and lands in the parent's cutime/cstime when it reaps the child. tare
// keeps, per long-lived ancestor, the balance between the growth of its cutime+cstime and the exit totals
// of the children it reaped, and credits a positive balance to its latest short-lived child. The balance
// is cumulative, so the 10 ms resolution of cutime does not add up over a window.

type teardown struct {
	expected  uint64 // exit totals of children ended since the last cutime reading
	balance   int64  // cutime growth minus expected, carried over
	lastChild int64  // ProcInfo.ID that receives the credit
	checks    int    // samples left in which to read cutime (reaping may lag the exit)
}

// liveAncestor follows parents through recently ended processes to the nearest live one.
func (s *Sampler) liveAncestor(ppid int) int {
	for range 64 {
		if _, ok := s.procs[ppid]; ok {
			return ppid
		}
		r, ok := s.recent[ppid]
		if !ok || r.ppid == ppid {
			return 0
		}
		ppid = r.ppid
	}
	return 0
}

// expectReaped notes that a child ended with total CPU cpu; its parent's cutime will grow by that much
// (plus the teardown) when it reaps it. The direct parent's cutime carries its descendants too, so the
// expectation goes to the nearest live ancestor.
func (s *Sampler) expectReaped(ppid int, id int64, cpu uint64) {
	owner := s.liveAncestor(ppid)
	if owner == 0 {
		return
	}
	t := s.teardown[owner]
	if t == nil {
		t = &teardown{}
		s.teardown[owner] = t
	}
	t.expected += cpu
	t.lastChild = id
	t.checks = 3
}

// creditTeardown reads the cutime of ancestors whose children ended recently and credits the balance.
func (s *Sampler) creditTeardown(smp *Sample) {
	for pid, t := range s.teardown {
		st, ok := s.procs[pid]
		if !ok {
			delete(s.teardown, pid)
			continue
		}
		stat := s.readStat(pid)
		if stat == nil {
			continue
		}
		cut := stat.childTimeNs()
		if cut < st.lastCut {
			st.lastCut = cut
		}
		t.balance += int64(cut-st.lastCut) - int64(t.expected)
		st.lastCut, t.expected = cut, 0
		if t.balance > 0 && s.seq > 0 {
			smp.Procs = append(smp.Procs, ProcSample{ID: t.lastChild, CPUNs: uint64(t.balance)})
			t.balance = 0
		}
		t.checks--
		if t.checks <= 0 && t.balance >= 0 {
			delete(s.teardown, pid)
		}
	}
}
