package taskiter

// onceEach keeps one record of each thread group among gs[from:], in place: the one with the most CPU time,
// and says how many it dropped. PassBPFIter writes a group once a pass; this guards the readers should a
// kernel's iterator show a task twice (a group's CPU time only grows, so the larger reading of one pass is
// the nearer to the truth), and the tests count what it drops (none is the program's claim). seen is a
// scratch index, cleared here.
func onceEach(gs []Group, from int, seen map[int]int) ([]Group, int) {
	clear(seen)
	out := gs[:from]
	dropped := 0
	for _, g := range gs[from:] {
		if i, ok := seen[g.TGID]; ok {
			if g.CPUNs > out[i].CPUNs {
				out[i] = g
			}
			dropped++
			continue
		}
		seen[g.TGID] = len(out)
		out = append(out, g)
	}
	return out, dropped
}
