package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/procfs"
)

const fixtureProc, fixtureSys = "testdata/root/proc", "testdata/root/sys"

func fixtureFS(t *testing.T) procfs.FS {
	t.Helper()
	fs, err := procfs.NewFS(fixtureProc)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func TestNodeReaderFixture(t *testing.T) {
	t.Parallel()
	r, err := NewNodeReader(fixtureProc)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n, err := r.ReadStat()
	if err != nil {
		t.Fatal(err)
	}
	r.ReadSlow(&n)
	// The first line of the captured /proc/stat, in USER_HZ ticks.
	b, _ := os.ReadFile(filepath.Join(fixtureProc, "stat"))
	f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
	tick := func(i int) float64 { v, _ := strconv.ParseFloat(f[i], 64); return v / 100 }
	want := CPUTimes{tick(1), tick(2), tick(3), tick(4), tick(5), tick(6), tick(7), tick(8), tick(9), tick(10)}
	if diff := cmp.Diff(want, n.CPU); diff != "" {
		t.Errorf("node CPU (-want +got):\n%s", diff)
	}
	// The captured pressure/{cpu,io,memory} totals, loadavg (0.28 0.35 0.21) and stat's procs_running 1.
	wantPressure := map[string]Pressure{
		"cpu":    {SomeTotalUs: 31633603, FullTotalUs: 0},
		"io":     {SomeTotalUs: 6452180, FullTotalUs: 5968400},
		"memory": {SomeTotalUs: 0, FullTotalUs: 0},
	}
	if diff := cmp.Diff(wantPressure, n.Pressure); diff != "" {
		t.Errorf("pressure (-want +got):\n%s", diff)
	}
	if n.Load1 != 0.28 || n.Load5 != 0.35 || n.Load15 != 0.21 || n.Running != 1 {
		t.Errorf("load %v %v %v, running %d; want 0.28 0.35 0.21 and 1", n.Load1, n.Load5, n.Load15, n.Running)
	}
	quick, err := r.ReadStat()
	if err != nil {
		t.Fatal(err)
	}
	if quick.CPU != n.CPU || quick.Pressure != nil || quick.Load1 != 0 {
		t.Errorf("a reading that is not full: %+v, want the CPU times only", quick)
	}
}

func TestReadIdentityFixture(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pid     int
		cmdline string
		kernel  bool
		cgroup  string // the path that names the pod: the one with kubepods, else the cpu controller's
	}{
		{10101, "sleep 300", false, "/kubepods/burstable/pod0f6d8b8e-1111-4c3a-9d2e-5a7c3f0e9b21/" + strings.Repeat("a", 64)},
		{2, "[kthreadd]", true, "/"},
		{1405, "bash /dev/fd/3", false, "/"},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.pid), func(t *testing.T) {
			t.Parallel()
			id, err := ReadIdentity(fixtureProc, tt.pid)
			if err != nil {
				t.Fatal(err)
			}
			if id.Cmdline != tt.cmdline || id.Kernel != tt.kernel || id.Stat.Starttime == 0 && !tt.kernel {
				t.Errorf("cmdline %q kernel %v start %d, want %q %v", id.Cmdline, id.Kernel, id.Stat.Starttime, tt.cmdline, tt.kernel)
			}
			if id.Cgroup != tt.cgroup {
				t.Errorf("cgroup %q, want %q", id.Cgroup, tt.cgroup)
			}
		})
	}
}

func TestReadIdentityGone(t *testing.T) {
	t.Parallel()
	_, err := ReadIdentity(fixtureProc, 999999)
	if !errors.Is(err, ErrGone) {
		t.Errorf("missing pid: %v, want ErrGone", err)
	}
	if _, err := ReadIdentity(fixtureProc, 4242); err == nil {
		t.Error("corrupt stat accepted")
	}
}

func TestReadDetailFixture(t *testing.T) {
	t.Parallel()
	d := ReadDetail(fixtureProc, 10101, nil, nil, SmapsNow)
	// The fixture's smaps_rollup: Rss 1772 kB, Pss 643 kB, Private_Clean 116 kB + Private_Dirty 108 kB; its
	// io: read_bytes 0, write_bytes 0; its stat and status: 1 thread.
	if d.SmapsErr != nil || d.IOErr != nil || d.RSS != 1772<<10 || d.PSS != 643<<10 || d.Private != (116+108)<<10 ||
		d.ReadBytes != 0 || d.WriteBytes != 0 || d.Threads != 1 {
		t.Errorf("sleep detail %+v, want rss 1772 kB, pss 643 kB, private 224 kB, no I/O, 1 thread", d)
	}
	d = ReadDetail(fixtureProc, 1, nil, nil, SmapsNow)
	if d.SmapsErr == nil || d.IOErr == nil {
		t.Errorf("unreadable smaps_rollup and io not reported: %+v", d)
	}
	// The fixture's /proc/1: 13 in stat's num_threads, status's Threads and task/.
	if d.Threads != 13 {
		t.Errorf("threads %d, want the captured 13", d.Threads)
	}
}

func TestSchedstatFixture(t *testing.T) {
	t.Parallel()
	got, err := SchedstatCPU(fixtureFS(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	var want uint64
	tasks, _ := filepath.Glob(filepath.Join(fixtureProc, "1/task/*/schedstat"))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		v, _ := strconv.ParseUint(strings.Fields(string(b))[0], 10, 64)
		want += v
	}
	if got != want || len(tasks) < 2 {
		t.Errorf("schedstat sum %d over %d threads, want %d", got, len(tasks), want)
	}
}

func TestParseTaskstatsFixtures(t *testing.T) {
	t.Parallel()
	var reply TaskstatsReply
	b, _ := os.ReadFile("testdata/taskstats_tgid_reply.bin")
	err := parseNetlinkMessages(b, func(_ uint16, p []byte) error {
		var err error
		reply, err = parseTaskstatsPayload(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Decoded by hand from the bytes with linux/taskstats.h's layout (16-byte nlmsghdr, 4-byte genlmsghdr,
	// attribute 5 AGGR_TGID nesting 2 TGID = 10012 and 3 STATS, whose cpu_run_virtual_total at offset 72 is
	// 3795797 ns).
	if reply.TGIDStats == nil || reply.TGID != 10012 || reply.TGIDStats.CPUNs != 3795797 {
		t.Fatalf("TGID reply %+v, want tgid 10012 with 3795797 ns", reply)
	}
	var exits []ExitRecord
	b, _ = os.ReadFile("testdata/taskstats_exit_notification.bin")
	err = parseNetlinkMessages(b, func(_ uint16, p []byte) error {
		r, err := parseTaskstatsPayload(p)
		if rec, ok := exitFromReply(r); ok {
			exits = append(exits, rec)
		}
		return err
	})
	// By hand, as above: attribute 4 AGGR_PID nesting 1 PID = 10017 and STATS with ac_comm (offset 80)
	// "sample.test", ac_pid 10017 and ac_ppid 10012 (offsets 128, 132), cpu_run_virtual_total 0.
	want := []ExitRecord{{PID: 10017, PPID: 10012, Comm: "sample.test", CPUNs: 0}}
	if diff := cmp.Diff(want, exits); err != nil || diff != "" {
		t.Fatalf("exit notification: %v (-want +got):\n%s", err, diff)
	}
}

func TestParseTaskstatsCorrupt(t *testing.T) {
	t.Parallel()
	b, _ := os.ReadFile("testdata/taskstats_tgid_reply.bin")
	for _, n := range []int{0, 3, 17, 30, len(b) / 2} {
		_ = parseNetlinkMessages(b[:n], func(_ uint16, p []byte) error {
			_, err := parseTaskstatsPayload(p)
			return err
		}) // must not panic
	}
	bad := append([]byte(nil), b...)
	binary.LittleEndian.PutUint32(bad, 1<<20)
	if err := parseNetlinkMessages(bad, func(uint16, []byte) error { return nil }); err == nil {
		t.Error("oversized netlink length accepted")
	}
}

func TestExitFromReply(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   TaskstatsReply
		want *ExitRecord
	}{
		{"single-threaded process", TaskstatsReply{PIDStats: &TaskStats{Version: 16, PID: 7, TGID: 7, PPID: 1, Comm: "sh", CPUNs: 5}},
			&ExitRecord{PID: 7, PPID: 1, Comm: "sh", CPUNs: 5}},
		{"one thread of a live process", TaskstatsReply{PIDStats: &TaskStats{Version: 16, PID: 8, TGID: 7, CPUNs: 5}}, nil},
		{"last thread: the group total", TaskstatsReply{TGID: 7, PIDStats: &TaskStats{PID: 9, TGID: 7, PPID: 1, Comm: "go"}, TGIDStats: &TaskStats{CPUNs: 50}},
			&ExitRecord{PID: 7, PPID: 1, Comm: "go", CPUNs: 50}},
		{"old kernel without ac_tgid", TaskstatsReply{PIDStats: &TaskStats{Version: 11, PID: 7, PPID: 1, CPUNs: 5}},
			&ExitRecord{PID: 7, PPID: 1, CPUNs: 5, MaybeThread: true}},
		{"old kernel, last thread: the group total", TaskstatsReply{TGID: 7, PIDStats: &TaskStats{Version: 11, PID: 9, PPID: 1}, TGIDStats: &TaskStats{CPUNs: 50}},
			&ExitRecord{PID: 7, PPID: 1, CPUNs: 50}},
		{"empty", TaskstatsReply{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := exitFromReply(tt.in)
			if (tt.want != nil) != ok || (ok && got != *tt.want) {
				t.Errorf("exitFromReply = %+v, %v; want %+v", got, ok, tt.want)
			}
		})
	}
}

func TestParseProcEvent(t *testing.T) {
	t.Parallel()
	mk := func(what uint32, vals ...uint32) []byte {
		b := make([]byte, cnMsgLen+procEventHdrLen+24)
		binary.LittleEndian.PutUint32(b[cnMsgLen:], what)
		for i, v := range vals {
			binary.LittleEndian.PutUint32(b[cnMsgLen+procEventHdrLen+4*i:], v)
		}
		return b
	}
	tests := []struct {
		name string
		in   []byte
		want ProcEvent
		ok   bool
	}{
		{"exec", mk(procEventExec, 100, 100), ProcEvent{What: procEventExec, PID: 100, TGID: 100}, true},
		{"fork", mk(procEventFork, 10, 10, 11, 11), ProcEvent{What: procEventFork, ParentPID: 10, PID: 11, TGID: 11}, true},
		{"exit is ignored", mk(0x80000000, 5, 5), ProcEvent{}, false},
		{"short", make([]byte, 10), ProcEvent{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := parseProcEvent(tt.in)
			if ok != tt.ok || got != tt.want {
				t.Errorf("parseProcEvent = %+v %v, want %+v %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestParseCgroupUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file, in string
		want           uint64
		err            bool
	}{
		{"v1", "cpuacct.usage", "123456789\n", 123456789, false},
		{"v2", "cpu.stat", "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n", 1500000, false},
		{"v2 without usage", "cpu.stat", "nr_periods 0\n", 0, true},
		{"v1 garbage", "cpuacct.usage", "x", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseCgroupUsage(tt.file, []byte(tt.in))
			if (err != nil) != tt.err || got != tt.want {
				t.Errorf("ParseCgroupUsage = %d, %v; want %d, err %v", got, err, tt.want, tt.err)
			}
		})
	}
}

func TestParseCPUList(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{"0-1\n": 2, "0": 1, "0-3,8,10-11": 7, "": 0} {
		if got, err := ParseCPUList(in); err != nil || got != want {
			t.Errorf("ParseCPUList(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if _, err := ParseCPUList("a-b"); err == nil {
		t.Error("bad cpu list accepted")
	}
}

func TestKernelConfig(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{"CONFIG_HZ_250=y\nCONFIG_HZ=250\n": 250, "# CONFIG_HZ is not set\n": 0, "CONFIG_HZ=1000": 1000} {
		if got := parseKernelHZ([]byte(in)); got != want {
			t.Errorf("parseKernelHZ(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestParseProcStat(t *testing.T) {
	t.Parallel()
	b, _ := os.ReadFile(filepath.Join(fixtureProc, "1/stat"))
	if st, err := ParseProcStat(b); err != nil || st.NumThreads < 2 || st.PPID != 0 {
		t.Errorf("fixture pid 1: %+v, %v", st, err)
	}
	odd := []byte("42 (a) b) (c) S 1 42 42 0 -1 4194560 100 0 0 0 5 3 -1 2 20 0 7 0 100 1000 50 18446744073709551615\n")
	want := ProcStat{Comm: "a) b) (c", State: 'S', PPID: 1, Flags: 4194560, UTime: 5, STime: 3, CUTime: -1, CSTime: 2, NumThreads: 7, Starttime: 100}
	if st, err := ParseProcStat(odd); err != nil || st != want {
		t.Errorf("comm with parentheses: %+v, %v; want %+v", st, err, want)
	}
	for _, bad := range []string{"42 (x) S 1", "no comm", "42 (x) S a b c d e f g h i j k l m n o p q r s t u"} {
		if _, err := ParseProcStat([]byte(bad)); err == nil {
			t.Errorf("bad stat %q accepted", bad)
		}
	}
	if r, sh := parseStatm([]byte("2000 150 100 10 0 300 0\n")); r != 150 || sh != 100 {
		t.Errorf("parseStatm = %d, %d, want 150, 100", r, sh)
	}
}

func TestParseIOFixture(t *testing.T) {
	t.Parallel()
	b, _ := os.ReadFile(filepath.Join(fixtureProc, "10101/io"))
	r, w, err := parseIO(b)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := fixtureFS(t).Proc(10101)
	want, err := p.IO() // procfs as the reference parser
	if err != nil || r != want.ReadBytes || w != want.WriteBytes {
		t.Errorf("parseIO = %d, %d; procfs says %d, %d (%v)", r, w, want.ReadBytes, want.WriteBytes, err)
	}
	if _, _, err := parseIO([]byte("rchar: 1\n")); err == nil {
		t.Error("io without read_bytes accepted")
	}
}

// cgroupLine is one line of /proc/PID/cgroup: hierarchy ID, controllers and path.
type cgroupLine struct {
	hierarchy   int
	controllers []string
	path        string
}

// parseCgroupFile splits /proc/PID/cgroup plainly: the reference cgroupOf must agree with.
func parseCgroupFile(b []byte) ([]cgroupLine, error) {
	var out []cgroupLine
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("cgroup line %q: want ID:controllers:path", line)
		}
		id, err := strconv.Atoi(parts[0])
		if err != nil {
			return nil, fmt.Errorf("cgroup line %q: %w", line, err)
		}
		var ctl []string
		if parts[1] != "" {
			ctl = strings.Split(parts[1], ",")
		}
		out = append(out, cgroupLine{hierarchy: id, controllers: ctl, path: parts[2]})
	}
	return out, nil
}

// pickCgroup is cgroupOf's rule on parsed lines: any path naming kubepods, else the v1 path of the cpu
// controller, else the unified (v2) path.
func pickCgroup(cgs []cgroupLine) string {
	best := ""
	for _, c := range cgs {
		if strings.Contains(c.path, "kubepods") {
			return c.path
		}
		if c.hierarchy == 0 && best == "" {
			best = c.path
		}
		for _, ctl := range c.controllers {
			if ctl == "cpu" || ctl == "cpuacct" {
				best = c.path
			}
		}
	}
	return best
}

func TestParseCgroupFile(t *testing.T) {
	t.Parallel()
	b, _ := os.ReadFile(filepath.Join(fixtureProc, "10101/cgroup"))
	cgs, err := parseCgroupFile(b)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := fixtureFS(t).Proc(10101)
	ref, _ := p.Cgroups()
	if len(cgs) != len(ref) {
		t.Fatalf("%d lines, procfs %d", len(cgs), len(ref))
	}
	for i := range ref {
		if cgs[i].hierarchy != ref[i].HierarchyID || cgs[i].path != ref[i].Path {
			t.Errorf("line %d: %+v, procfs %+v", i, cgs[i], ref[i])
		}
	}
	tests := []struct{ in, want string }{
		{"0::/system.slice/containerd.service\n", "/system.slice/containerd.service"},
		{"2:cpu,cpuacct:/a\n1:name=systemd:/b\n0::/c\n", "/a"},
		{"1:memory:/x\n0::/kubepods.slice/p:odd\n", "/kubepods.slice/p:odd"},
	}
	for _, tt := range tests {
		cgs, err := parseCgroupFile([]byte(tt.in))
		if err != nil || pickCgroup(cgs) != tt.want {
			t.Errorf("pickCgroup(%q) = %q, %v; want %q", tt.in, pickCgroup(cgs), err, tt.want)
		}
		if got, err := cgroupOf([]byte(tt.in)); err != nil || got != tt.want {
			t.Errorf("cgroupOf(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if got, err := cgroupOf(b); err != nil || got != pickCgroup(cgs) {
		t.Errorf("cgroupOf(fixture) = %q, %v; the plain parser picks %q", got, err, pickCgroup(cgs))
	}
	for _, bad := range []string{"garbage", "0::/ok\nx:cpu:/a", "1:cpu:/kubepods\nbroken"} {
		if _, err := parseCgroupFile([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
		if _, err := cgroupOf([]byte(bad)); err == nil {
			t.Errorf("cgroupOf accepted %q", bad)
		}
	}
}

func TestParseProcStatCPUAgreesWithProcfs(t *testing.T) {
	t.Parallel()
	b, _ := os.ReadFile(filepath.Join(fixtureProc, "stat"))
	cpu, running, err := parseProcStatCPU(b)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := fixtureFS(t).Stat()
	if err != nil {
		t.Fatal(err)
	}
	c := ref.CPUTotal
	want := CPUTimes{c.User, c.Nice, c.System, c.Idle, c.Iowait, c.IRQ, c.SoftIRQ, c.Steal, c.Guest, c.GuestNice}
	if diff := cmp.Diff(want, cpu); diff != "" || uint64(running) != ref.ProcessesRunning {
		t.Errorf("parseProcStatCPU vs procfs (-procfs +tare):\n%s running %d vs %d", diff, running, ref.ProcessesRunning)
	}
	for _, bad := range []string{"", "intr 1 2 3\n", "cpu  1 2 x 4 5 6 7 8 9 10\n", "cpu 1 2\n"} {
		if _, _, err := parseProcStatCPU([]byte(bad)); err == nil {
			t.Errorf("bad /proc/stat %q accepted", bad)
		}
	}
}

func TestParseSmapsRollupAgreesWithProcfs(t *testing.T) {
	t.Parallel()
	b, _ := os.ReadFile(filepath.Join(fixtureProc, "10101/smaps_rollup"))
	m, err := parseSmapsRollup(b)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := fixtureFS(t).Proc(10101)
	ref, err := p.ProcSMapsRollup()
	if err != nil {
		t.Fatal(err)
	}
	if m.rss != ref.Rss || m.pss != ref.Pss || m.private != ref.PrivateClean+ref.PrivateDirty || m.anon != ref.Anonymous {
		t.Errorf("smaps_rollup %+v, procfs %+v", m, ref)
	}
	if _, err := parseSmapsRollup([]byte("garbage\n")); err == nil {
		t.Error("garbage accepted")
	}
}

func TestSplitCmdline(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{"": 0, "a\x00": 1, "a\x00b c\x00\x00": 2, "nonul": 1} {
		if got := splitCmdline([]byte(in)); len(got) != want {
			t.Errorf("splitCmdline(%q) = %q, want %d args", in, got, want)
		}
	}
}

func TestParseLoadavgAndPressureAgreeWithProcfs(t *testing.T) {
	t.Parallel()
	fs := fixtureFS(t)
	b, _ := os.ReadFile(filepath.Join(fixtureProc, "loadavg"))
	l1, l5, l15, err := parseLoadavg(b)
	ref, rerr := fs.LoadAvg()
	if err != nil || rerr != nil || l1 != ref.Load1 || l5 != ref.Load5 || l15 != ref.Load15 {
		t.Errorf("loadavg %v %v %v (%v), procfs %+v (%v)", l1, l5, l15, err, ref, rerr)
	}
	for _, res := range []string{"cpu", "memory", "io"} {
		b, _ := os.ReadFile(filepath.Join(fixtureProc, "pressure", res))
		p, err := parsePressure(b)
		ref, rerr := fs.PSIStatsForResource(res)
		if err != nil || rerr != nil || p.SomeTotalUs != ref.Some.Total || (ref.Full != nil && p.FullTotalUs != ref.Full.Total) {
			t.Errorf("%s pressure %+v (%v), procfs %+v (%v)", res, p, err, ref, rerr)
		}
	}
	if _, err := parsePressure([]byte("full avg10=0 total=x\n")); err == nil {
		t.Error("bad pressure accepted")
	}
	if _, _, _, err := parseLoadavg([]byte("0.1")); err == nil {
		t.Error("bad loadavg accepted")
	}
}

// TestFirstField: firstField is the first of strings.Fields, on the values smaps_rollup holds and on odd ones.
func TestFirstField(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"   1234 kB", "1234", "", "   ", "\t7\tkB", " \u00a0 9 kB", "x\u2003y", "\xff 1"} {
		want := ""
		if f := strings.Fields(s); len(f) > 0 {
			want = f[0]
		}
		if got := firstField(s); got != want {
			t.Errorf("firstField(%q) = %q, strings.Fields says %q", s, got, want)
		}
	}
}
