package taskiter

// onceEach keeps one record of each thread group among gs[from:], in place: the one with the most CPU time.
// PassBPFIter writes a group once a pass, but in a thread storm a pass was seen (1 in 200, in CI) to write
// one twice, the second from part of its threads; a group's CPU time only grows, so the larger reading of
// one pass is the nearer to the truth. seen is a scratch index, cleared here.
func onceEach(gs []Group, from int, seen map[int]int) []Group {
	clear(seen)
	out := gs[:from]
	for _, g := range gs[from:] {
		if i, ok := seen[g.TGID]; ok {
			if g.CPUNs > out[i].CPUNs {
				out[i] = g
			}
			continue
		}
		seen[g.TGID] = len(out)
		out = append(out, g)
	}
	return out
}
