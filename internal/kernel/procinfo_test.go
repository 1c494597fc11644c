package kernel

import (
	"os"
	"path/filepath"
	"testing"
)

// TestParseSmapsRollupRange: figures beyond a 64-bit address space are malformed, not wrapped around.
func TestParseSmapsRollupRange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		ok   bool
		want smapsRollup
	}{
		{"Rss: 8 kB\nPss: 4 kB\nPrivate_Clean: 1 kB\nPrivate_Dirty: 2 kB\n", true, smapsRollup{rss: 8 << 10, pss: 4 << 10, private: 3 << 10}},
		{"Rss: 18014398509481983 kB\nPss: 1 kB\n", true, smapsRollup{rss: (1<<54 - 1) << 10, pss: 1 << 10}},
		{"Rss: 18014398509481984 kB\nPss: 1 kB\n", false, smapsRollup{}},
		{"Rss: 1 kB\nPss: 1 kB\nPrivate_Clean: 18014398509481983 kB\nPrivate_Dirty: 18014398509481983 kB\n", false, smapsRollup{}},
	} {
		got, err := parseSmapsRollup([]byte(tc.in))
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("parseSmapsRollup(%q) = %+v, %v; want %+v, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestFollowLike: which readings a process may follow (kernel.ReadMemoryLike), and what it then has: its
// own anonymous pages, the reading's PSS and private memory beyond the reading's anonymous pages in
// proportion to its shared pages, and RSS moved by its resident pages' difference; marked Like.
func TestFollowLike(t *testing.T) {
	page := uint64(os.Getpagesize())
	// A sleeper's reading: 27 anonymous pages, 400 shared, PSS 27 pages + 8 KiB of shared pages' share.
	ref := Detail{StatmRSS: 427, StatmShared: 400, SmapsStatm: 427, RSS: 427 * page, PSS: 27*page + 8<<10,
		Private: 27 * page, SmapsAnon: 27 * page}
	for _, tc := range []struct {
		name           string
		ref            Detail
		rss, shared    uint64 // the follower's statm
		ok             bool
		wantPSS, wantP uint64
	}{
		{"same statm", ref, 427, 400, true, 27*page + 8<<10, 27 * page},
		{"more shared pages", ref, 467, 440, true, 27*page + 8<<10*440/400, 27 * page},
		{"4 more anonymous pages", ref, 431, 400, true, 31*page + 8<<10, 31 * page},
		{"5 more anonymous pages", ref, 432, 400, false, 0, 0},
		{"shared beyond an eighth", ref, 478, 451, false, 0, 0},
		{"reading from statm alone", func() Detail { d := ref; d.StatmOnly = true; return d }(), 427, 400, false, 0, 0},
		{"reading that failed", func() Detail { d := ref; d.SmapsErr = ErrStuck; return d }(), 427, 400, false, 0, 0},
		{"reading that follows another", func() Detail { d := ref; d.Like = true; return d }(), 427, 400, false, 0, 0},
		{"statm and smaps_rollup disagree on anonymous pages", func() Detail { d := ref; d.SmapsAnon = 60 * page; return d }(), 427, 400, false, 0, 0},
		{"PSS below the anonymous pages (shared copy-on-write)", func() Detail { d := ref; d.PSS = 20 * page; return d }(), 427, 400, false, 0, 0},
		{"no shared pages", Detail{StatmRSS: 100, SmapsStatm: 100, RSS: 100 * page, PSS: 100 * page, Private: 100 * page, SmapsAnon: 100 * page}, 101, 0, true, 101 * page, 101 * page},
		{"follower's statm unread", ref, 0, 0, false, 0, 0},
	} {
		d := Detail{StatmRSS: tc.rss, StatmShared: tc.shared}
		ok := followLike(&tc.ref, &d)
		if ok != tc.ok {
			t.Errorf("%s: followed %v, want %v", tc.name, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		if d.PSS != tc.wantPSS || d.Private != tc.wantP || d.RSS != tc.rss*page || !d.Like || !d.Estimated() {
			t.Errorf("%s: RSS %d, PSS %d, private %d, like %v; want %d, %d, %d, true", tc.name, d.RSS, d.PSS, d.Private, d.Like, tc.rss*page, tc.wantPSS, tc.wantP)
		}
	}
}

// TestFollowMedian: a process follows a look-alike only when it may follow likeQuorum readings, and then the
// one whose estimate is the median: a reading that counts a few file pages no other process maps as its own
// is not lent to its followers.
func TestFollowMedian(t *testing.T) {
	page := uint64(os.Getpagesize())
	reading := func(pss uint64) Detail {
		return Detail{StatmRSS: 427, StatmShared: 400, SmapsStatm: 427, RSS: 427 * page, PSS: pss, Private: 27 * page, SmapsAnon: 27 * page}
	}
	typical, odd := 27*page+8<<10, 27*page+40<<10
	d := Detail{StatmRSS: 427, StatmShared: 400}
	if i := followMedian([]Detail{reading(odd), reading(typical)}, &d); i != -1 {
		t.Errorf("followed reading %d of two: want none below the quorum of %d", i, likeQuorum)
	}
	d = Detail{StatmRSS: 427, StatmShared: 400}
	if i := followMedian([]Detail{reading(odd), reading(typical), reading(typical + page)}, &d); i != 2 || d.PSS != typical+page {
		t.Errorf("followed reading %d, PSS %d: want reading 2, PSS %d (the median of three)", i, d.PSS, typical+page)
	}
}

// TestReadMemoryLikeCarried: a follower's carried statm figures (a statm-only reading of a process that has
// not run since) are followed without reading statm again; a process that follows no reading has its statm
// read with its smaps_rollup, so that its own reading is of one moment. The /proc root is a directory the
// test writes: its statm differs from the carried figures, so each figure tells which one was used.
func TestReadMemoryLikeCarried(t *testing.T) {
	t.Parallel()
	page := uint64(os.Getpagesize())
	root := t.TempDir()
	dir := filepath.Join(root, "4242")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Now: 900 resident pages, 400 of them shared (500 anonymous: no sleeper's reading fits), and a rollup.
	for name, text := range map[string]string{
		"statm":        "2000 900 400 10 0 600 0\n",
		"smaps_rollup": "00400000-7ffe00000000 ---p 00000000 00:00 0 [rollup]\nRss: 3600 kB\nPss: 2100 kB\nPrivate_Clean: 0 kB\nPrivate_Dirty: 2000 kB\nAnonymous: 2000 kB\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sleeper := Detail{StatmRSS: 427, StatmShared: 400, SmapsStatm: 427, RSS: 427 * page, PSS: 27*page + 8<<10,
		Private: 27 * page, SmapsAnon: 27 * page}
	likes := []Detail{sleeper, sleeper, sleeper}
	carried := func() Detail { return Detail{StatmRSS: 427, StatmShared: 400, StatmOnly: true} }

	d := carried()
	if i := ReadMemoryLike(root, 4242, "sleep", likes, &d, true); i < 0 || d.StatmRSS != 427 || !d.Like || d.PSS != sleeper.PSS {
		t.Errorf("carried statm of a look-alike: followed %d, %+v; want the sleepers' reading followed with statm 427", i, d)
	}
	d = carried()
	if i := ReadMemoryLike(root, 4242, "sleep", likes, &d, false); i >= 0 || d.StatmRSS != 900 || d.Like || d.RSS != 3600<<10 || d.SmapsStatm != 900 {
		t.Errorf("statm read again: followed %d, %+v; want its own reading, statm 900, RSS 3600 KiB", i, d)
	}
	d = carried()
	if i := ReadMemoryLike(root, 4242, "sleep", nil, &d, true); i >= 0 || d.StatmRSS != 900 || d.SmapsStatm != 900 || d.PSS != 2100<<10 || d.Private != 2000<<10 {
		t.Errorf("carried statm with nothing to follow: followed %d, %+v; want statm read with smaps_rollup (900, PSS 2100 KiB)", i, d)
	}
}
